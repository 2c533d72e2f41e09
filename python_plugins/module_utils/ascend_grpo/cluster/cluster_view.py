"""Ray's view of the cluster against the inventory's: the ``ray_cluster_view`` module's work as plain Python.

A short driver, run with the stack's Python through the caller's ``run_command`` under timeout(1) (the same runner
as :mod:`ray_daemon`), prints ``ray.nodes()``; :func:`ray_nodes.compare_nodes` names who joined, who is short and
who is missing. Nothing changes on the host.
"""

import json
import time

from . import ray_nodes
from .ray_daemon import TIMED_OUT, run_timed

_DRIVER = r"""
import json, sys
import ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print("@@nodes " + json.dumps(ray.nodes()))
"""


def ask(run_command, python, address, env, timeout):
    """(nodes, error): one driver's view of the cluster, through run_command under timeout(1)."""
    rc, out, err = run_timed(run_command, [python, "-c", _DRIVER, address], timeout, env=env)
    if rc == TIMED_OUT:
        return [], "no answer from %s within %ds" % (address, timeout)
    if rc == 127:  # timeout's own status for a command it cannot find or run
        return [], "%s cannot run: %s" % (python, (err or out or "").strip())
    for line in (out or "").splitlines():
        if line.startswith("@@nodes "):
            return json.loads(line[len("@@nodes "):]), None
    tail = [line for line in ((out or "") + (err or "")).splitlines() if line.strip()][-4:]
    return [], "asking %s failed: %s" % (address, " | ".join(tail) or "rc %s" % rc)


def view(p, run_command, sleep=time.sleep):
    """One call of the ``ray_cluster_view`` module (``p``: its arguments): the result for ``exit_json``.
    Asks again every 5 s, up to ``p["wait"]`` seconds, while an expected node is missing or the driver failed."""
    env = {k: str(v) for k, v in p["env"].items()}
    deadline = time.time() + p["wait"]
    while True:
        nodes, error = ask(run_command, p["python"], p["address"], env, p["timeout"])
        seen = ray_nodes.compare_nodes(p["expected"], nodes)
        if (not seen["missing"] and not error) or time.time() >= deadline:
            break
        sleep(5)
    return dict(changed=False, error=error, nodes=[
        {"ip": n.get("NodeManagerAddress"), "alive": bool(n.get("Alive")), "resources": n.get("Resources") or {}}
        for n in nodes], **seen)
