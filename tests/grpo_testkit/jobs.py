"""A train job that has ended with the given lines in its log, as the status and triage tests read one: started
with the package's own job module, waited for until its wrapper recorded the exit status."""

import time

from grpo_testkit import run_module


def failed_train_job(state, run, lines):
    """Start the ``train`` job in ``state`` (a jobs folder) writing ``lines`` to ``<run>/logs/latest.log`` (where
    run_grpo.sh tees verl's output) and exiting 1; returns once it has ended."""
    (run / "logs").mkdir(parents=True, exist_ok=True)
    log = run / "logs" / "latest.log"
    script = "printf '%%s\\n' %s > %s; exit 1" % (" ".join("'%s'" % line for line in lines), log)
    run_module("grpo_job", {"name": "train", "state_dir": str(state), "state": "started",
                            "command": ["sh", "-c", script]})
    for _ in range(60):  # the job's wrapper records its exit status
        if not run_module("grpo_job", {"name": "train", "state_dir": str(state)})["running"]:
            break
        time.sleep(0.5)
