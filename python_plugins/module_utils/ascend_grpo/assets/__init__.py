"""The assets stage: weights, MATH data, the chat template and the reward."""
