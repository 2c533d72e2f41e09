"""The container stage: the host's devices and npu-smi, the host checks, how the controller reaches the container."""
