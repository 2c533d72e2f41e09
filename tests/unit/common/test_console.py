"""What a person sees: the package's stdout callback (grpo_console) through real ansible-playbook runs."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

from grpo_testkit import ROOT

sys.path.insert(0, os.path.join(ROOT, "python_plugins", "callback_plugins"))
import grpo_console  # noqa: E402


def ansible_playbook(*args, extra_env=None):
    """``ansible-playbook ARGS`` with the package's ansible.cfg, as a user runs it (not through ansible-runner,
    which puts its own stdout callback in front): the CompletedProcess, stdout and stderr together."""
    exe = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    env.pop("ANSIBLE_INVENTORY", None)  # the inventory is what each test gives with -i, or none
    env.update(extra_env or {})
    return subprocess.run([exe, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False, timeout=600)


def test_a_retried_wait_shows_the_jobs_progress_and_no_failed_retrying(tmp_path):
    book = tmp_path / "wait.yml"
    book.write_text(textwrap.dedent("""\
        - name: Wait for a counter
          hosts: localhost
          connection: local
          gather_facts: false
          tasks:
            - name: Start it
              grpo_job:
                name: counter
                state_dir: %(state)s
                state: started
                command: [sh, -c, "for i in 1 2 3 4 5 6; do echo step $i of 6; sleep 0.6; done; sleep 2"]
            - name: Wait for it
              grpo_job:
                name: counter
                state_dir: %(state)s
                wait: 0.3
              register: job
              until: not job.running
              retries: 60
              delay: 0
            - name: Check it
              ansible.builtin.assert:
                that: job.state == 'finished' and job.exit_status == 0 and job.progress == 'step 6 of 6'
        """ % {"state": tmp_path / "jobs"}))
    result = ansible_playbook(str(book), "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    assert "FAILED - RETRYING" not in out and "FAILED" not in out, out
    shown = [line.strip() for line in out.splitlines() if line.strip().startswith("[localhost] step")]
    # each step once, in order: a line that did not change is not printed again (the job idles 2 s at the end)
    assert len(shown) >= 2 and shown == sorted(shown) and len(shown) == len(set(shown)), out


def test_a_plain_run_prints_nothing_for_the_plays_it_leaves_out():
    """A plain run of site.yml with every stage skipped: what is left are the plays a plain run leaves out (stop,
    status, card use) and the argument checks Ansible puts in front of each role. None of it may print: no play
    banner, no task, only the recap."""
    result = ansible_playbook("site.yml", "-i", "inventories/sim", "-i", os.path.join(ROOT, "tests", "fixtures",
                              "inventories", "sim_env.yml"),
                              "--skip-tags", "container,deps,patch,assets,train,eval")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    banners = [line for line in out.splitlines() if line.startswith(("PLAY [", "TASK [", "skipping", "ok:"))]
    assert banners == [], out
    for absent in ("Validating arguments", "Stop the run", "Read each card", "Report each training run",
                   "Render, validate and launch"):
        assert absent not in out, out
    assert "PLAY RECAP" in out and "failed=0" in out


def test_a_run_without_an_inventory_stops_naming_the_real_hosts_inventory():
    """ansible.cfg names no default inventory (issue 43: it used to be the simulated host's): without -i, site.yml
    stops at its first task, whatever the tags, instead of every play matching no host and the run "passing"."""
    with open(os.path.join(ROOT, "ansible.cfg"), encoding="utf-8") as handle:
        assert not re.search(r"^\s*inventory\s*=", handle.read(), re.M)
    result = ansible_playbook("site.yml", "--tags", "container")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert "Require an inventory with NPU hosts" in out, out
    assert "-i inventories/cloud910b" in " ".join(out.split()), out
    assert "Run the CANN training container" not in out, out


def test_a_long_async_task_says_it_is_still_working(tmp_path):
    """The deps stage's install runs with async and poll: a line per repeat_after (here 2 s), no ASYNC POLL/OK."""
    book = tmp_path / "async.yml"
    book.write_text(textwrap.dedent("""\
        - name: Install something slowly
          hosts: localhost
          connection: local
          gather_facts: false
          tasks:
            - name: Install | Plan, install, verify
              ansible.builtin.command: sleep 14
              async: 60
              poll: 1
              changed_when: false
        """))
    result = ansible_playbook(str(book), "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable,
                              extra_env={"GRPO_CONSOLE_REPEAT_AFTER": "2"})
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-3000:]
    working = [line.strip() for line in out.splitlines() if "still working" in line]
    # one line per 2 s at most, each poll a module run of its own (slow on a busy machine): a few lines, not 14
    assert 2 <= len(working) <= 7, out
    times = [int(m) * 60 + int(s) for m, s in
             (re.match(r"\[localhost\] still working: Install \| Plan, install, verify \((\d+)m(\d\d)s\)$", line)
              .groups() for line in working)]
    assert times == sorted(times) and all(b - a >= 2 for a, b in zip(times, times[1:])), out
    assert "ASYNC" not in out and "ok: [localhost]" in out, out


def test_async_line():
    assert grpo_console.async_line("h", "Install", first_seen=10.0, now=40.0) is None
    assert grpo_console.async_line("h", "Install", first_seen=10.0, now=135.0) == "  [h] still working: Install (2m05s)"


def test_a_failing_argument_check_still_prints(tmp_path):
    role = tmp_path / "roles" / "picky"
    (role / "meta").mkdir(parents=True)
    (role / "tasks").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(textwrap.dedent("""\
        argument_specs:
          main:
            short_description: Wants a number
            options:
              picky_count: {type: int, required: true, description: a number}
        """))
    (role / "tasks" / "main.yml").write_text("- name: Never reached\n  ansible.builtin.debug: {msg: hi}\n")
    book = tmp_path / "picky.yml"
    book.write_text("- name: A role with a wrong argument\n  hosts: localhost\n  connection: local\n"
                    "  gather_facts: false\n  roles:\n    - role: picky\n      picky_count: many\n")
    result = ansible_playbook(str(book), "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable,
                              "-e", "ansible_roles_path=" + str(tmp_path / "roles"))
    out = result.stdout + result.stderr
    assert result.returncode != 0
    assert "PLAY [A role with a wrong argument]" in out, out
    assert "TASK [picky : Validating arguments against arg spec 'main'" in out, out
    assert "picky_count" in out and "fatal: [localhost]" in out, out


@pytest.mark.parametrize("res, last, now, expected", [
    # progress: shown when new; the same text is held back, and shown again after REPEAT_AFTER_S with its age
    ({"progress": "step 3 of 8", "attempts": 2, "retries": 90}, None, 100.0, "  [h] step 3 of 8"),
    ({"progress": "step 3 of 8", "attempts": 3, "retries": 90}, ("step 3 of 8", 100.0, 100.0), 130.0, None),
    ({"progress": "step 3 of 8", "attempts": 9, "retries": 90}, ("step 3 of 8", 100.0, 40.0), 161.0,
     "  [h] step 3 of 8 (no new output for 121s)"),
    ({"progress": "step 4 of 8", "attempts": 4, "retries": 90}, ("step 3 of 8", 100.0, 100.0), 101.0,
     "  [h] step 4 of 8"),
    # no progress: still waiting, with the count of checks
    ({"attempts": 2, "retries": 30}, None, 1.0, "  [h] still waiting: Wait for it (check 2 of 30)"),
    # a real failure says so, with its first line
    ({"failed": True, "msg": "HTTP 503\nmore", "attempts": 1, "retries": 3}, None, 1.0,
     "  [h] Wait for it: attempt 1 failed (HTTP 503); trying again"),
    # a no_log result never shows its progress
    ({"progress": "token=abc", "_ansible_no_log": True, "attempts": 1, "retries": 3}, None, 1.0,
     "  [h] waiting: Wait for it (check 1 of 3)"),
])
def test_retry_line(res, last, now, expected):
    line, _ = grpo_console.retry_line("h", "Wait for it", res, last=last, now=now)
    assert line == expected
