"""The one shape of an engine's refusal or failure that a module passes on to ``fail_json``, and how the role layer's
words reach it.

An engine knows its inputs by the names its module's options have, never by the settings a role fills them from: a
message refers to an input as ``{field}`` (``"set {repo} to a dataset repository that exists"``). The module renders
the message with the mapping its calling task passes (``setting_names``, option -> setting; doc fragment
``grpo_setting_names``), so the same module names the deps stage's setting in one role and the eval stage's in
another, and a direct user of the module reads the option's own name. Only the module's own options are rendered:
a ``{word}`` that an engine quotes from outside (a log line, a traceback, a Jinja expression) stays as it was."""

import re

# an option's name in braces, as an engine writes it in a message
_FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class StageFailure(Exception):
    """A refusal or a failure for a module to report: ``msg`` for the person (what, naming the input at fault as
    ``{field}`` and the fix), ``result`` the values the module returns with it (what was found or done before it;
    may be empty). Each engine names its own subclass for what it refuses."""

    def __init__(self, msg, result=None):
        super().__init__(msg)
        self.msg, self.result = msg, dict(result or {})


class FieldError(StageFailure):
    """A refusal of one input: ``field`` is the module option at fault (returned as ``field``, so a role can tell
    which of its settings to name), ``msg`` says what and the fix."""

    def __init__(self, field, msg, result=None):
        super().__init__(msg, result)
        self.field = field


def name_fields(value, names, fields=None):
    """``value`` (a string, or lists and dicts of them) with each ``{field}`` of ``fields`` (the module's options;
    by default the fields ``names`` maps, as a filter's own table) replaced by the setting ``names`` maps it to, or by
    the option's own name when ``names`` has none. Other text in braces is left as it is, and so is anything that is
    not a string."""
    names = names or {}
    fields = set(names) if fields is None else fields
    if isinstance(value, str):
        return _FIELD.sub(lambda m: str(names.get(m.group(1)) or m.group(1)) if m.group(1) in fields
                          else m.group(0), value)
    if isinstance(value, (list, tuple)):
        return [name_fields(item, names, fields) for item in value]
    if isinstance(value, dict):
        return {key: name_fields(item, names, fields) for key, item in value.items()}
    return value


def failure(err, names, fields):
    """What a module passes to ``fail_json`` for ``err`` (a :class:`StageFailure`): its ``msg`` and ``result`` with
    the fields named (:func:`name_fields`), and ``field`` when it is a :class:`FieldError`."""
    out = name_fields(dict(err.result), names, fields)
    out["msg"] = name_fields(err.msg, names, fields)
    if getattr(err, "field", None):
        out["field"] = err.field
    return out


def module_failure(module, err):
    """:func:`failure` for an AnsibleModule: its ``setting_names`` option and its own options."""
    return failure(err, module.params.get("setting_names"), set(module.argument_spec))


def module_text(module, value):
    """:func:`name_fields` for an AnsibleModule's own result (a success's problems, rows or error text): its
    ``setting_names`` option and its own options."""
    return name_fields(value, module.params.get("setting_names"), set(module.argument_spec))
