"""The doctor's probe: the facts a training environment shows, gathered inside it.

The ``grpo_doctor`` module runs this file's source with the training environment's Python, in the environment the
run script sets (the CANN scripts sourced, the run's variables exported, the stack's venv first on PATH), as
``python - REQUEST_JSON``; it prints one JSON object of facts on its last line. Only the standard library is
imported at module level, so it runs before anything is installed; every fact is gathered on its own, an error
becomes that fact's ``error`` and never stops the others. What the facts mean is decided elsewhere
(``doctor.evaluate``): this file only looks.

The request: ``packages`` (names whose versions to report), ``requires`` (packages whose Requires-Dist to report),
``libraries`` (shared libraries to load with ctypes), ``cards`` (how many visible cards to run a tensor op on),
``reward`` ({path, name} or null), ``ray_address`` (a cluster to ask for its resources, or null), ``deadline``
(seconds for each tensor op, the reward and Ray).
"""

import ctypes
import importlib.metadata
import importlib.util
import json
import os
import sys
import threading
import time

# What the run's own environment says (names only these: the run's other values may be secrets).
ENV_NAMES = ("VLLM_ASCEND_ENABLE_NZ", "PYTORCH_NPU_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "ASCEND_RT_VISIBLE_DEVICES",
             "ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "RAY_USE_UVLOOP", "RAY_ADDRESS",
             "VLLM_USE_V1", "VLLM_TARGET_DEVICE")
# A MATH problem's answer, a response that reaches it and one that does not, as verl passes them to the reward.
SAMPLE = {"data_source": "DigitalLearningGmbH/MATH-lighteval", "ground_truth": "\\frac{1}{2}",
          "right": "Half of the unit square is shaded, so the answer is $\\boxed{\\frac{1}{2}}$.",
          "wrong": "Three of the four parts are shaded, so the answer is $\\boxed{\\frac{3}{4}}$."}


def _error(exc):
    return "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")


def within(seconds, func):
    """func() in a thread, waited for at most ``seconds``: {"value"} or {"error"}, and the seconds it took."""
    box = {}

    def run():
        try:
            box["value"] = func()
        except BaseException as exc:  # noqa: BLE001 - the fact is the error, whatever it is
            box["error"] = _error(exc)

    began = time.monotonic()
    worker = threading.Thread(target=run, name="grpo-doctor", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        box = {"error": "no answer within %d s" % seconds}
    box["seconds"] = round(time.monotonic() - began, 2)
    return box


def device_nodes(dev_dir="/dev"):
    """The N of every /dev/davinciN this environment has (the cards it was given), sorted."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return []
    return sorted(int(name[len("davinci"):]) for name in names
                  if name.startswith("davinci") and name[len("davinci"):].isdigit())


def versions(names):
    """{name: version or None}, as importlib.metadata knows the installed distributions."""
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def requirements(names):
    """{name: [Requires-Dist strings]} of the installed ones."""
    found = {}
    for name in names:
        try:
            found[name] = list(importlib.metadata.requires(name) or [])
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def libraries(names):
    """{name: "loaded" or the loader's error}: CANN's libraries load only with its environment sourced."""
    found = {}
    for name in names:
        try:
            ctypes.CDLL(name)
            found[name] = "loaded"
        except OSError as exc:
            found[name] = _error(exc)
    return found


def torch_facts(cards, deadline):
    """torch and torch_npu imported, and a small op on every visible card (each under the deadline)."""
    facts = {"torch": None, "torch_npu": None, "cards": {}}
    try:
        import torch  # noqa: PLC0415 - only here: a broken torch is a fact, not a crash
        facts["torch"] = {"version": torch.__version__}
    except BaseException as exc:  # noqa: BLE001
        facts["torch"] = {"error": _error(exc)}
        return facts
    if importlib.util.find_spec("torch_npu") is None:
        return facts
    try:
        import torch_npu  # noqa: F401, PLC0415
        facts["torch_npu"] = {"version": getattr(torch_npu, "__version__", None),
                              "devices": int(torch.npu.device_count())}
    except BaseException as exc:  # noqa: BLE001
        facts["torch_npu"] = {"error": _error(exc)}
        return facts
    for index in range(cards):
        def op(index=index):
            ones = torch.ones(1024, device="npu:%d" % index)
            return float((ones * 2).sum().item())
        facts["cards"][str(index)] = within(deadline, op)
    return facts


def ray_facts(address, deadline):
    """What Ray offers: its own accelerator manager's NPU count and visible ids on this node, and a cluster's
    resources when the run attaches to one."""
    facts = {}
    try:
        from ray._private.accelerators import get_accelerator_manager_for_resource  # noqa: PLC0415
        manager = get_accelerator_manager_for_resource("NPU")
        facts["node_npus"] = int(manager.get_current_node_num_accelerators())
        visible = manager.get_current_process_visible_accelerator_ids()
        facts["visible_ids"] = None if visible is None else [str(v) for v in visible]
        facts["visible_env"] = manager.get_visible_accelerator_ids_env_var()
    except BaseException as exc:  # noqa: BLE001
        facts["error"] = _error(exc)
        return facts
    if address:
        def cluster():
            import ray  # noqa: PLC0415
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            try:
                return {k: float(v) for k, v in ray.cluster_resources().items()}
            finally:
                ray.shutdown()
        facts["cluster"] = within(deadline, cluster)
    return facts


def reward_facts(reward, deadline):
    """The reward scores a right and a wrong response in a thread that is not the main one (Ray runs it so)."""
    if not reward or not reward.get("path"):
        return None
    try:
        spec = importlib.util.spec_from_file_location("grpo_doctor_reward", reward["path"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        compute = getattr(module, reward.get("name") or "compute_score")
    except BaseException as exc:  # noqa: BLE001
        return {"error": "loading %s: %s" % (reward["path"], _error(exc))}

    def score(text):
        value = compute(data_source=SAMPLE["data_source"], solution_str=text, ground_truth=SAMPLE["ground_truth"],
                        extra_info={"split": "test", "index": 0})
        return float(value["score"] if isinstance(value, dict) else value)

    def both():
        if threading.current_thread() is threading.main_thread():  # pragma: no cover - within() never is
            raise RuntimeError("the reward ran in the main thread")
        return {"right": score(SAMPLE["right"]), "wrong": score(SAMPLE["wrong"])}

    return within(deadline, both)


def probe(request):
    deadline = int(request.get("deadline", 60))
    facts = {"python": sys.version.split()[0], "executable": sys.executable,
             "env": {name: os.environ[name] for name in ENV_NAMES if name in os.environ},
             "device_nodes": device_nodes(),
             "packages": versions(request.get("packages", [])),
             "requires": requirements(request.get("requires", [])),
             "libraries": libraries(request.get("libraries", [])),
             "uvloop_importable": importlib.util.find_spec("uvloop") is not None}
    facts.update(torch_facts(int(request.get("cards", 0)), deadline))
    facts["ray"] = ray_facts(request.get("ray_address"), deadline)
    facts["reward"] = reward_facts(request.get("reward"), deadline)
    return facts


if __name__ == "__main__":
    print(json.dumps(probe(json.loads(sys.argv[1]))), flush=True)
    # a tensor op or Ray still hanging in a daemon thread must not keep this process
    os._exit(0)
