"""Filters for the eval stage: the report built by the plain-Python evaluation engine, and Python literals for the
OpenCompass configuration it renders."""

from ascend_grpo import evaluation


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
    return evaluation.build_report(_plain(results["base"]), _plain(results["trained"]), _plain(meta))


def eval_report_markdown(report, brief=False):
    """``{{ report | eval_report_markdown }}``: the report as markdown; ``brief=true`` for the console (without
    the training configuration and the result files)."""
    return evaluation.render_markdown(_plain(report), brief=bool(brief))


class FilterModule:
    """The eval stage's filters."""

    def filters(self):
        return {"python_literal": python_literal, "eval_report": eval_report,
                "eval_report_markdown": eval_report_markdown}
