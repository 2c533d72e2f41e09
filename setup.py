"""The Python side of the GRPO-on-Ascend playbooks: the engines under python_plugins/module_utils (importable as
``ascend_grpo``, with small CLIs), the controller (ansible-core 2.19 on Python 3.11) and the test tools."""

from setuptools import find_packages, setup

setup(
    name="ascend-grpo-playbooks",
    version="0.1.0",
    description="Ansible playbooks that take a bare Ascend 910B host to a watched verl GRPO training of Qwen2.5",
    license="Apache-2.0",
    python_requires=">=3.11",
    package_dir={"": "python_plugins/module_utils"},
    packages=find_packages("python_plugins/module_utils"),
    install_requires=[
        "ansible-core>=2.19,<2.20",
        "ansible>=12,<13",  # brings community.docker
        "requests",  # community.docker talks to the engine with it
    ],
    extras_require={
        "test": [
            "molecule>=25",
            # tests and benchmarks run the playbooks through it and read its events
            "ansible-runner>=2.4",
            "molecule-plugins[docker]>=23.5",
            "docker>=7",
            "ansible-lint>=25",
            "pytest>=8",
            "pytest-xdist>=3",  # make check runs the unit tests on two processes
            "jinja2",
            "pyyaml",
            # the NPU padding helpers are tested on CPU; 2.13.0 is the CPU build this machine's pip finds on disk
            "torch==2.13.0",
            "einops",
            # the assets stage's engines and their tests: the same libraries the training environment uses
            "transformers==4.57.6",
            "safetensors",
            "tokenizers",
            "huggingface_hub>=0.34,<1.0",
            "datasets",
            "pandas<3",
            "pyarrow",
            # the antlr runtime hydra-core pins (4.9): with another extra pip settles on an old math-verify
            "math-verify[antlr4_9_3]==0.9.0",
            "matplotlib",  # the status view's plot
            # verl's configuration is composed with Hydra before launch (tested against the 0.5.0 wheel's tree)
            "hydra-core",
        ],
    },
    entry_points={"console_scripts": ["grpo-npu-smi=ascend_grpo.container.npu_smi:main"]},
)
