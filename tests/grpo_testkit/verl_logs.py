"""verl's training log for the tests that parse it (test_verl_log.py) and show it (test_verl_log_status.py): the real
logs under fixtures/verl_logs and the builders of the lines Ray's driver prints."""

import os

from grpo_testkit import FIXTURES

# the last line of fixtures/verl_logs' failed run (verl@634bd935 on tensor parallel size 2 with 1 worker)
FAILED_ERROR = "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2"


def real_log(name):
    with open(os.path.join(FIXTURES, "verl_logs", name), encoding="utf-8") as handle:
        return handle.read()


def ray(line, source="TaskRunner pid=9581"):
    """A line as Ray's driver prints a worker's: coloured prefix, newline."""
    return "\x1b[36m(%s)\x1b[0m %s\n" % (source, line)


def step_line(step, metrics):
    return "step:%d - " % step + " - ".join("%s:%r" % item for item in metrics.items())
