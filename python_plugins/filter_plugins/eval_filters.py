"""The eval stage's filters: the report, the gate, and where --tags serve listens.

Filters for the eval stage: the report built by the plain-Python evaluation engine, Python literals for the
OpenCompass configuration it renders, and whether to evaluate now (run_plan's gate: not while a run holds the cards).
"""

import json
import shlex

from ascend_grpo.common import errors, rerun
from ascend_grpo.eval import result_report, result_store
from ascend_grpo.train import run_plan, tracking

# The eval stage's setting for the input the gate names as {field} (run_plan.eval_gate; common.errors).
GATE_SETTINGS = {"step": "grpo_eval_step"}


def _plain(value):
    """Ansible's wrapped strings and mappings as plain Python values (so repr() gives a clean literal)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def python_literal(value):
    """``{{ value | python_literal }}``: a Python literal of a YAML value (True/False/None, quoted strings)."""
    return repr(_plain(value))


def eval_report(results, meta):
    """``{{ {'base': ..., 'trained': ...} | eval_report(meta) }}``: the report as a mapping."""
    return result_report.build_report(_plain(results["base"]), _plain(results["trained"]), _plain(meta))


def eval_report_markdown(report, brief=False):
    """``{{ report | eval_report_markdown }}``: the report as markdown; ``brief=true`` for the console (without
    the training configuration and the result files)."""
    return result_report.render_markdown(_plain(report), brief=bool(brief))


def eval_gate(run, eval_cards, step=0, name="", sources=None, project_dir=None):
    """``{{ run_status | eval_gate(cards, grpo_eval_step, 'project/experiment', ansible_inventory_sources,
    playbook_dir) }}``: evaluate, wait or refuse, with the lines that say why (run_plan.eval_gate: never while a run
    of the workspace holds the cards OpenCompass would use), naming grpo_eval_step for the gate's {step}."""
    inventory = rerun.inventory_args([str(s) for s in sources or []], str(project_dir) if project_dir else None)

    def command(tags):
        return rerun.command(tags, inventory)

    gate = run_plan.eval_gate(_plain(run) if run else None, _plain(eval_cards), int(step or 0), str(name or ""),
                              command)
    return dict(gate, lines=errors.name_fields(gate["lines"], GATE_SETTINGS))


def serve_gate(run, cards, name="", sources=None, project_dir=None):
    """``{{ run_status | serve_gate(cards, 'project/experiment', ansible_inventory_sources, playbook_dir) }}``:
    serve or refuse (run_plan.serve_gate: never while a run of the workspace holds the cards the server would use)."""
    inventory = rerun.inventory_args([str(s) for s in sources or []], str(project_dir) if project_dir else None)
    return run_plan.serve_gate(_plain(run) if run else None, _plain(cards), str(name or ""),
                               lambda tags: rerun.command(tags, inventory))


def serve_bind(asked, network, container_address):
    """``{{ grpo_eval_serve_host | serve_bind(network, address) }}``: where vLLM's server listens, {"address",
    "reason"} or {"problem"}, by TensorBoard's rules (tracking.tensorboard_bind: never every interface, as neither
    has a login), naming grpo_eval_serve_host."""
    address, why = tracking.tensorboard_bind(asked, network, container_address, service="vLLM's server")
    why = errors.name_fields(why, {"host": "grpo_eval_serve_host"})
    return {"address": address, "reason": why} if address else {"problem": why}


def serve_view(address, port, ssh_host, model, inventory=""):
    """``{{ address | serve_view(port, ssh_host, served_name, grpo_common_inventory_args) }}``: the server's URL, the
    ssh line that reaches it from a laptop, a request to try there, and the --tags stop line."""
    port = int(port)
    url = "http://%s:%d" % (address, port)
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "What is 7 * 8?"}]})
    return {"url": url, "ssh": "ssh -N -L %d:%s:%d %s" % (port, address, port, ssh_host),
            "try": "curl -s http://localhost:%d/v1/chat/completions -H 'Content-Type: application/json' -d %s"
                   % (port, shlex.quote(body)),
            "stop": rerun.command("stop", inventory)}


def eval_reports_to_write(reports, folder, name):
    """``{{ {'md': ..., 'json': ...} | eval_reports_to_write(folder, name) }}``: the extensions whose file in
    ``folder`` (on the controller, where filters run) does not hold its text yet; empty on a converged rerun, when
    the stage has nothing to write there."""
    return result_store.reports_to_write(str(folder), str(name), {str(k): str(v) for k, v in _plain(reports).items()})


class FilterModule:
    """The eval stage's filters"""

    def filters(self):
        return {
            "python_literal": python_literal,
            "eval_report": eval_report,
            "eval_report_markdown": eval_report_markdown,
            "eval_gate": eval_gate,
            "eval_reports_to_write": eval_reports_to_write,
            "serve_gate": serve_gate,
            "serve_bind": serve_bind,
            "serve_view": serve_view,
        }
