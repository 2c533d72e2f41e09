#!/usr/bin/env python3
"""Fill the unit tests' download cache (GRPO_TEST_CACHE, default .cache/tests) with the upstream files some unit
tests read (verl's 0.5.0 and 0.6.0 wheels, transformers' and torch_npu's wheels, vLLM's sdists), through the tests'
own helpers, so that the unit tests (`make check`) reach no network. `make test-venv` runs it with the other
downloads; a file already in the cache is not fetched again. A unit test that asks for a file missing here still
fetches it itself."""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from grpo_testkit.upstream import registry_sdist, verl_tree, wheel_tree  # noqa: E402  (tests/ first)


def main():
    with tempfile.TemporaryDirectory() as scratch:
        for version in ("0.5.0", "0.6.0"):
            os.makedirs(os.path.join(scratch, version))
            verl_tree(version, os.path.join(scratch, version))
    for name, version in (("transformers", "4.52.4"), ("transformers", "4.57.6"), ("torch_npu", "2.8.0")):
        wheel_tree(name, version)
    for name, version in (("vllm", "0.9.1"), ("vllm", "0.13.0")):
        registry_sdist(name, version)
    print("the unit tests' download cache is filled")


if __name__ == "__main__":
    main()
