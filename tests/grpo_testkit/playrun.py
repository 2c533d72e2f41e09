"""Controller side: run this package's playbooks from Python with ansible-runner and read what they did from its
events (which tasks changed, failed or were skipped, by name), never from the text of the output.

Used by the tests and the benchmarks; ansible-runner is imported only here (it is not needed on the hosts).
"""

import os
import shlex
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Run:
    """One ansible-playbook run: ``returncode``, ``stdout`` (the human output, for messages), ``events``, and
    the task names per outcome."""

    def __init__(self, runner, seconds):
        self.returncode = runner.rc
        self.status = runner.status
        self.stdout = runner.stdout.read()
        self.stderr = runner.stderr.read() if runner.stderr else ""
        self.events = list(runner.events)
        self.seconds = seconds

    def tasks(self, event):
        """``[(host, task name)]`` of the results of one kind: runner_on_ok, runner_on_failed, runner_on_skipped."""
        return [(e["event_data"].get("host"), e["event_data"].get("task")) for e in self.events
                if e.get("event") == event]

    @property
    def changed(self):
        """``[(host, task name)]`` of every result that changed something (loops count once per task)."""
        out = []
        for e in self.events:
            data = e.get("event_data", {})
            if e.get("event") == "runner_on_ok" and data.get("res", {}).get("changed"):
                item = (data.get("host"), data.get("task"))
                if item not in out:
                    out.append(item)
        return out

    @property
    def failed(self):
        return [(e["event_data"].get("host"), e["event_data"].get("task"), e["event_data"].get("res", {}).get("msg"))
                for e in self.events if e.get("event") == "runner_on_failed"
                and not e["event_data"].get("ignore_errors")]

    @property
    def stats(self):
        """The play recap: {host: {ok, changed, failures, skipped, ...}} from the last stats event."""
        recap = [e["event_data"] for e in self.events if e.get("event") == "playbook_on_stats"]
        if not recap:
            return {}
        data = recap[-1]
        hosts = set()
        for key in ("ok", "changed", "failures", "skipped", "dark"):
            hosts.update(data.get(key) or {})
        return {h: {k: (data.get(k) or {}).get(h, 0) for k in ("ok", "changed", "failures", "skipped", "dark")}
                for h in hosts}


def run(playbook, *args, env=None, timeout=None, root=ROOT):
    """``ansible-playbook PLAYBOOK ARGS`` in ``root`` with its ansible.cfg and this Python's ansible-playbook."""
    import ansible_runner

    # ansible-runner puts its event callback on ANSIBLE_CALLBACK_PLUGINS, which hides ansible.cfg's folder: name it
    envvars = dict(ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   ANSIBLE_CALLBACK_PLUGINS=os.path.join(root, "python_plugins", "callback_plugins"),
                   PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""), **(env or {}))
    with tempfile.TemporaryDirectory(prefix="grpo-run-") as private:
        start = time.perf_counter()
        runner = ansible_runner.run(private_data_dir=private, project_dir=root, playbook=playbook,
                                    cmdline=shlex.join(args), envvars=envvars, quiet=True, timeout=timeout)
        return Run(runner, time.perf_counter() - start)
