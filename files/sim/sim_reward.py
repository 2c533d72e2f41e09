"""SIMULATED HOST ONLY: the package's MATH reward plus a small term a random tiny model can earn.

Every MATH reward is 0 for a random model, so GRPO's advantages, and with them the gradients, would be 0 and a run
on the simulated host could not show that training moves the weights. This adds 0.1 x the share of digits in the
response (random outputs differ in it, so the responses of one prompt get different scores). Production hosts train
with the package's reward (files/reward/math_reward.py, deployed by the assets stage), never with this file.
"""

import importlib.util
import os

# The assets stage deploys the package's reward to <workspace>/reward/math_reward.py; this file sits in
# <workspace>/sources/reward/.
_MATH_REWARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reward", "math_reward.py")
_spec = importlib.util.spec_from_file_location("grpo_math_reward", _MATH_REWARD)
_math_reward = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_math_reward)


def digit_share(text):
    return sum(ch.isdigit() for ch in text) / len(text) if text else 0.0


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return float(_math_reward.compute_score(data_source=data_source, solution_str=solution_str,
                                            ground_truth=ground_truth, extra_info=extra_info)) + 0.1 * digit_share(
        solution_str)
