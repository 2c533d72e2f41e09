# Stand-in for the CANN runtime's card numbering, in the simulated host's image only (installed as the system
# Python's sitecustomize, which every venv made from it loads too). A real 910B's runtime numbers the cards a
# container is given from 0 and refuses an ASCEND_RT_VISIBLE_DEVICES id outside [0, n) or out of order, the moment
# a process first asks for its devices (torch_npu, loaded with torch): gpustack issues 3352 and 2527, vllm-ascend
# issue 6063 and PR 12959. The simulated host has no runtime, so without this a wrong number would pass here and
# fail only on a 910B. Checked when torch is first imported, as torch_npu's device count is on a 910B.
import os
import sys


def _devices():
    try:
        names = os.listdir("/dev")
    except OSError:
        return 0
    return sum(1 for name in names if name.startswith("davinci") and name[len("davinci"):].isdigit())


def _check():
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES", "").strip()
    if not visible:
        return
    count = _devices()
    parts = [part.strip() for part in visible.split(",")]
    reason = None
    if not all(part.isdigit() for part in parts):
        reason = "set ASCEND_RT_VISIBLE_DEVICES:[%s] error, input data is not a number" % visible
    elif [int(p) for p in parts] != sorted(set(int(p) for p in parts)):
        reason = "set ASCEND_RT_VISIBLE_DEVICES:%s error, it must be configured in ascending order" % visible
    else:
        outside = [part for part in parts if int(part) >= count]
        if outside:
            reason = "set ASCEND_RT_VISIBLE_DEVICES:[%s] error, input data rang[0-%d)" % (outside[0], count)
    if reason is None:
        return
    sys.stderr.write("[ERROR] RUNTIME(%d,python3):[runtime.cc:5632] GetVisibleDevices:[INIT][DEFAULT]%s\n"
                     % (os.getpid(), reason))
    raise RuntimeError("NPU function error: aclrtGetDeviceCount(&device_count), error code is 207004\n"
                       "[Error]: The device is unavailable.\n"
                       "EE1001: The argument is invalid.Reason: %s\n"
                       "(simulated CANN runtime: this container has %d /dev/davinciN)" % (reason, count))


class _TorchLoad:
    """A meta path finder that checks once, when torch is first imported, then steps aside."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            _check()
        return None


sys.meta_path.insert(0, _TorchLoad())
