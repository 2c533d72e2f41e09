"""SIMULATED HOST ONLY: the package's MATH reward plus a small term a random tiny model can earn.

Every MATH reward is 0 for a random model, so GRPO's advantages, and with them the gradients, would be 0 and a run
on the simulated host could not show that training moves the weights. This adds 0.1 x the share of digits in the
response (random outputs differ in it, so the responses of one prompt get different scores). Production hosts train
with the package's reward (roles/assets/files/math_reward.py, deployed by the assets stage), never with this file.
"""

import importlib.util
import json
import os
import sys
import time

# The assets stage deploys the package's reward to <workspace>/reward/math_reward.py; this file sits in
# <workspace>/sources/reward/.
_MATH_REWARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reward", "math_reward.py")
_spec = importlib.util.spec_from_file_location("grpo_math_reward", _MATH_REWARD)
_math_reward = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_math_reward)


# Fault drills (molecule) need a run that cannot move on while they act, whatever the machine's speed. A drill
# writes <workspace>/.grpo/drill-hold as JSON: {"tracker": verl's latest_checkpointed_iteration.txt, "after_step": N,
# "held": a file to write, "timeout_s": T}. While that file exists and the tracker says step N or later is saved,
# every reward call waits (at most T seconds in all, then the run goes on), so the run stands inside the step after the save; the
# first waiting call writes the saved step into "held", which is what the drill waits for. Without the file a call
# costs one stat.
_HOLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".grpo", "drill-hold")


def _saved_step(tracker):
    try:
        with open(tracker, encoding="utf-8") as handle:
            return int(handle.read().strip() or -1)
    except (OSError, ValueError):
        return -1


_timed_out = set()


def hold_for_drill(hold_file=_HOLD, poll_s=0.2):
    """Wait while a drill holds the run (see above); return the saved step it held at, or None."""
    if hold_file in _timed_out:
        return None
    try:
        with open(hold_file, encoding="utf-8") as handle:
            hold = json.load(handle)
    except (OSError, ValueError):
        return None
    saved = _saved_step(hold["tracker"])
    if saved < int(hold["after_step"]):
        return None
    # what the run printed up to here reaches its log before it stands still (a Ray worker's stdout is block
    # buffered: the last step's line would wait in the buffer, and whoever waits for that line with it)
    sys.stdout.flush()
    sys.stderr.flush()
    with open(hold["held"] + ".part", "w", encoding="utf-8") as handle:
        handle.write("%d\n" % saved)
    os.replace(hold["held"] + ".part", hold["held"])
    deadline = time.monotonic() + float(hold.get("timeout_s", 600))
    while os.path.exists(hold_file):
        if time.monotonic() >= deadline:
            _timed_out.add(hold_file)
            break
        time.sleep(poll_s)
    return saved


def digit_share(text):
    return sum(ch.isdigit() for ch in text) / len(text) if text else 0.0


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    hold_for_drill()
    return float(_math_reward.compute_score(data_source=data_source, solution_str=solution_str,
                                            ground_truth=ground_truth, extra_info=extra_info)) + 0.1 * digit_share(
        solution_str)
