"""What the tests share: the harness that runs the playbooks (playrun), the module runner, the paths and the cache.

On the path through pytest.ini (pythonpath = tests); the benchmarks put tests/ on it themselves."""

import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# As the Makefile does: verl's tree at the guide's commit for the simulated host, when this machine has it.
_TARBALL = os.path.join(os.path.dirname(ROOT), "shared", "upstream",
                        "verl-634bd9352bfd21df3abab2dcfb86deb91f04c1ba.tar.gz")
if os.path.isfile(_TARBALL):
    os.environ.setdefault("GRPO_VERL_TARBALL", _TARBALL)
VERL_TARBALL = os.environ.get("GRPO_VERL_TARBALL") or _TARBALL
# The guide's sample folder (cann-recipes-train llm_rl/qwen2_5/verl_npu_demo/ at 93819a74) as a `git archive` tarball,
# beside verl's (the simulated host mounts that folder at /upstream): the assets stage's chat template comes from its
# tokenizer_config.json.
SAMPLE_COMMIT = "93819a74531c19c5c6089a5a916519ae20cf28fb"
SAMPLE_TARBALL = os.path.join(os.path.dirname(VERL_TARBALL),
                              "cann-recipes-train-%s-verl_npu_demo.tar.gz" % SAMPLE_COMMIT)
# The unit tests' cache (upstream downloads, filled by tests/fill_cache.py; the reward reference's kept answers).
TEST_CACHE = os.environ.get("GRPO_TEST_CACHE", os.path.join(ROOT, ".cache", "tests"))


def need_verl_tarball():
    """verl's tree at the guide's commit is what the patch, overlay and profile tests read and patch: without it
    they fail, naming where it was looked for and how to give it. Never a skip: a run that skipped them would pass
    having proven nothing about the real tree."""
    if not os.path.isfile(VERL_TARBALL):
        pytest.fail("verl's tree at the guide's commit (a `git archive` tarball of verl@634bd935) is not at %s: "
                    "set GRPO_VERL_TARBALL to its path, or put it in ../shared/upstream beside this checkout"
                    % VERL_TARBALL, pytrace=False)


def need_sample_tarball():
    """The sample's folder at the pinned commit: the tests of the sample's chat template read the real file, so
    without it they fail, naming where it was looked for (never a skip, as for verl's tree)."""
    if not os.path.isfile(SAMPLE_TARBALL):
        pytest.fail("the guide's sample folder (a `git archive` tarball of cann-recipes-train@93819a74, "
                    "llm_rl/qwen2_5/verl_npu_demo/) is not at %s: put it beside verl's tarball (the folder of "
                    "GRPO_VERL_TARBALL, ../shared/upstream by default)" % SAMPLE_TARBALL, pytrace=False)
    return SAMPLE_TARBALL


def playbook(*args, env=None):
    """``ansible-playbook ARGS`` (the playbook first) through ansible-runner: ``returncode``, ``stdout`` (for
    messages), ``events`` and the tasks that ``changed`` or ``failed``, by name."""
    from grpo_testkit import playrun

    return playrun.run(args[0], *args[1:], env=env, timeout=900)


def run_role(tmp_path, role, extra, *args, env=None):
    """One stage's role alone on this machine, as a training environment the container stage described
    (``grpo_env_ready``, ``grpo_workspace`` = ``tmp_path``, this Python), through :func:`playbook` (``env``: more of
    the environment ansible-playbook runs in)."""
    import json

    book = tmp_path / ("%s.yml" % role)
    book.write_text("- name: The %s role alone, on this machine\n  hosts: localhost\n  connection: local\n"
                    "  gather_facts: false\n  roles:\n    - role: %s\n" % (role, role))
    extra = dict({"grpo_env_ready": True, "grpo_workspace": str(tmp_path), "grpo_cards": [0],
                  "grpo_visible_devices": [0],
                  "ansible_python_interpreter": sys.executable}, **extra)
    return playbook(str(book), "-i", "localhost,", "-e", json.dumps(extra), *args,
                    env=dict(env or {}, ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles")))


def run_module(name, params, check=False, env=None, own_processes=False):
    """One of this package's modules run on this machine with the tests' Python: the host's result as ``ansible
    localhost -m NAME`` reports it (``changed`` always present, ``failed: true`` on a failure, ``stdout_lines`` beside
    ``stdout``).

    In this process (:mod:`grpo_testkit.inprocess`: the module's arguments set, its ``main()`` run, its exit caught),
    with ``env`` added to the environment for the call; ``check``: in check mode. GRPO_SPAWN_MODULES=1 in the
    environment spawns every call instead, to compare the two.

    own_processes: spawned by ``ansible`` in a PID namespace of its own with its own /proc, for a module that looks
    at the host's processes (Ray's daemons): the Ray a molecule scenario runs in a container beside the unit tests
    shows in the host's /proc, and must not answer for the node under test. Only a process of its own can have that."""
    if own_processes or os.environ.get("GRPO_SPAWN_MODULES"):
        return spawn_module(name, params, check=check, env=env, own_processes=own_processes)
    from grpo_testkit import inprocess

    return inprocess.run(name, params, check=check, env=env)


def spawn_module(name, params, check=False, env=None, own_processes=False):
    """``ansible localhost -m NAME`` (a process of its own, through Ansible's own module transfer): the host's
    result. For a test that needs Ansible itself; :func:`run_module` runs the module in this process."""
    import json

    argv = [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local",
            "-i", "localhost,", "-m", name, "-a", json.dumps(params),
            "-e", "ansible_python_interpreter=" + sys.executable] + (["--check"] if check else [])
    if own_processes:
        argv = ["unshare", "--pid", "--fork", "--mount-proc"] + (
            [] if os.geteuid() == 0 else ["--user", "--map-root-user"]) + argv
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False,
                          env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
                                   ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json",
                                   **(env or {})))
    out = json.loads(proc.stdout[proc.stdout.index("{"):])
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def docker_exists(name):
    return subprocess.run(["docker", "container", "inspect", name], capture_output=True, check=False).returncode == 0


def tree_snapshot(*roots):
    """Every path under ``roots`` (links not followed) with its mode, size and sha256 (a link: its target), to
    compare a host's and a workspace's trees before and after a stage that must change nothing."""
    import hashlib

    seen = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            for name in [folder] + [os.path.join(folder, n) for n in dirs + files]:
                st = os.lstat(name)
                if os.path.islink(name):
                    what = "-> " + os.readlink(name)
                elif os.path.isfile(name):
                    with open(name, "rb") as handle:
                        what = hashlib.sha256(handle.read()).hexdigest()
                else:
                    what = ""
                seen[name] = (oct(st.st_mode), st.st_size if not os.path.isdir(name) else 0, what)
    return seen


def fake_pip_python(tmp_path):
    """A Python for the deps module that answers its probe and records what each pip call got (argv, PIP_* and
    proxy variables) in ``calls.jsonl``, then fails as pip does on a missing version: (python, log path)."""
    log = tmp_path / "calls.jsonl"
    fake = tmp_path / "python"
    fake.write_text("#!%s\n" % sys.executable + """import json, os, sys
if sys.argv[1] == "-c":
    print(json.dumps({"versions": {}, "editable_url": None, "machine": "x86_64", "python": "3.11"}))
    sys.exit(0)
with open(%r, "a") as log:
    log.write(json.dumps({"argv": sys.argv, "env": {k: v for k, v in os.environ.items()
                                                    if k.startswith("PIP_") or k.lower().endswith("_proxy")}})
              + "\\n")
print("ERROR: Could not find a version that satisfies the requirement six==1.16.0 (from versions: none)",
      file=sys.stderr)
sys.exit(1)
""" % str(log))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake, log


def write_file(path, text="x"):
    """``text`` in the file at ``path``, its folders made first."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
