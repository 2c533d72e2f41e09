"""verl's run script overrides: layers of settings merged, rendered as Hydra command-line overrides, and checked
against verl's own configuration.

Rendering (standard library only; runs on the controller):

- :func:`deep_merge` merges layers (package defaults, then site, then user): later layers win, mappings merge key by
  key, anything else (lists included) replaces. ``None`` removes a key, so verl's own default applies again. A key
  may start with ``+``, Hydra's mark for a key verl's configuration does not have; ``+foo`` and ``foo`` are the same
  key when merging, and the later layer's spelling is kept.
- :func:`flatten` turns the nested result into dotted keys; a ``+`` on any segment goes to the front.
- :func:`hydra_value` writes a value so that Hydra's override parser reads back the same value and type.
- :func:`override_map` merges and flattens: the run's overrides as data (``{dotted key: value}``), which the launch
  decision, the first step's wait and each launch's record read; :func:`render_overrides` writes the same mapping
  as the words verl is launched with; :func:`shell_lines` quotes them for a bash script. Nothing parses the words
  back.

Validation (imports hydra and omegaconf when called; runs in the training environment, where verl brings them):

- :func:`compose` composes verl's configuration with the overrides and reports every bad override;
- :func:`type_errors` checks each overridden value against the type of verl's default;
- :func:`validate` does both; ``python -m ascend_grpo.train.overrides`` runs it and prints JSON.

Errors are ``{"key": ..., "override": ..., "message": ...}``: the dotted key, the override as given, and a message
that starts with the key (with the whole override when it is malformed).
"""

import copy
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping

# What Hydra's override lexer reads as a number, a bool or null when it is the whole value (its INT, FLOAT, BOOL and
# NULL tokens, underscores between digits and inf/nan included). Such a string must be quoted to stay a string.
_UINT = r"(?:0|[1-9](?:_?[0-9])*)"
_DIGITS = r"[0-9](?:_?[0-9])*"
_POINT_FLOAT = r"(?:%s\.|%s?\.%s)" % (_UINT, _UINT, _DIGITS)
_EXPONENT_FLOAT = r"(?:%s|%s)[eE][+-]?%s" % (_UINT, _POINT_FLOAT, _DIGITS)
_NOT_A_STRING = re.compile(r"[+-]?(?:%s|%s|%s|inf|nan)|true|false|null" % (_EXPONENT_FLOAT, _POINT_FLOAT, _UINT),
                           re.IGNORECASE)

# Characters a string may hold and still be written bare. '~' is not one: Hydra's lexer rejects it in a value.
_BARE = re.compile(r"[A-Za-z0-9_\-./:@+]+")
# A dict key inside a value: the same, without ':' (Hydra's dict keys are never quoted and end at a colon).
_BARE_DICT_KEY = re.compile(r"[A-Za-z0-9_\-./@+]+")
# One segment of an override's key: an identifier (Hydra also allows '$' and '-') or a list index.
_KEY_SEGMENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_\-$]*|0|[1-9][0-9]*")

# Hydra's quoted strings take a backslash as an escape only in a run of backslashes right before a quote (the closing
# quote included); anywhere else a backslash is itself.
_BACKSLASHES_BEFORE_QUOTE = re.compile(r"(\\+)(?='|\Z)")

# verl 0.5.0 settings whose code also takes a type other than their default's.
ALSO_ACCEPTED = {
    "actor_rollout_ref.model.target_modules": list,  # "all-linear", or a list of module names (PEFT takes either)
    "critic.model.target_modules": list,
    "trainer.logger": str,  # verl's Tracking turns a single backend name into a list
}

_NO_SUCH_KEY = "no such key in verl's configuration; a typo? prefix with + to add a new key"
_KEY_EXISTS = "already in verl's configuration; drop the +"
_MISSING = object()


# --- merge and render --------------------------------------------------------------------------------------------


def _bare(key):
    return key[1:] if isinstance(key, str) and key.startswith("+") else key


def _merge(base, layer):
    """``layer`` merged over the mapping ``base`` (neither is changed); see :func:`deep_merge`."""
    result = dict(base)
    spelled = {_bare(key): key for key in result}  # a key's name without '+' -> its spelling in result
    for key, value in layer.items():
        name = _bare(key)
        old_key = spelled.pop(name, _MISSING)
        old_value = _MISSING
        if old_key is not _MISSING:
            old_value = result[old_key]
            if old_key != key:  # the later spelling wins, at the key's first position
                result = {(key if k == old_key else k): v for k, v in result.items()}
        if isinstance(value, Mapping):
            merged = _merge(old_value if isinstance(old_value, Mapping) else {}, value)
            value = None if value and not merged else merged  # all its keys removed: nothing left to override
        elif isinstance(value, list):
            value = copy.deepcopy(value)  # the result shares nothing with the layers
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
            spelled[name] = key
    return result


def deep_merge(*layers):
    """Merge mappings, later layers winning, into a new plain dict.

    Mappings merge recursively; any other value (a list too) replaces the earlier one. A ``None`` value removes the
    key (and a mapping all of whose keys were removed goes too), so that verl's own default applies. ``+foo`` and
    ``foo`` at the same level are one key: the later layer's spelling is kept, at the key's first position. A layer
    that is ``None`` (an empty YAML variable) counts as empty.
    """
    merged = {}
    for layer in layers:
        if layer is None:
            continue
        if not isinstance(layer, Mapping):
            raise TypeError("an override layer must be a mapping, not %s" % type(layer).__name__)
        merged = _merge(merged, layer)
    return merged


def flatten(mapping):
    """``[(dotted_key, value), ...]`` for the leaves of a nested mapping, in insertion order.

    A ``+`` on any segment moves to the front of the dotted key. Keys must be strings Hydra can address (identifiers
    or list indexes, no dots: write nested mappings). An empty mapping is ambiguous (nothing to override, or set to
    ``{}``?) and raises ValueError naming its key, as does a bad key.
    """
    if not isinstance(mapping, Mapping):
        raise TypeError("overrides must be a mapping, not %s" % type(mapping).__name__)
    flat = []
    _flatten_into(mapping, [], False, flat)
    return flat


def _flatten_into(mapping, path, plus, flat):
    for key, value in mapping.items():
        name = _bare(key)
        dotted = ".".join(path + [str(name)])
        if not isinstance(key, str) or not _KEY_SEGMENT.fullmatch(name):
            raise ValueError("%s: %r is not a key Hydra can address (letters, digits, _ - $, or a list index; "
                             "write nested mappings rather than dots)" % (dotted, key))
        has_plus = plus or key.startswith("+")
        if isinstance(value, Mapping):
            if not value:
                raise ValueError("%s: an empty mapping is ambiguous (nothing to override, or set it to {}?); "
                                 "remove it or give it keys" % dotted)
            _flatten_into(value, path + [name], has_plus, flat)
        else:
            flat.append((("+" if has_plus else "") + dotted, value))


# What the run script sets itself from a setting that checks it (or that the package owns outright): a user's
# override of it would bypass that check, so it is refused naming the setting to use, as a {field} the caller names
# (common.errors; the train stage's filters map each to its setting: OWNED_SETTINGS there). Ray's dashboard and job
# API run code for anyone who reaches them (CVE-2023-48022); verl passes ray_kwargs.ray_init to ray.init() whole
# (verl/trainer/main_ppo.py at the guide's commit), so these keys would widen it or point the run elsewhere.
_DASHBOARD = ("the package keeps Ray's dashboard and its job API on loopback (one host: verl's own Ray never "
              "widens it; several hosts: {dashboard} and {dashboard_port})")
_TRUST = ("set {trust_remote_code} (the assets and eval stages then let a model's own code through as well; "
          "without it, a folder that carries code is refused)")
OWNED = {
    "ray_kwargs.ray_init.include_dashboard": _DASHBOARD,
    "ray_kwargs.ray_init.dashboard_host": _DASHBOARD,
    "ray_kwargs.ray_init.dashboard_port": _DASHBOARD,
    "ray_kwargs.ray_init.address": "the cluster stage attaches the run to its Ray ({cluster_head}); one host: "
                                   "verl starts its own",
    "ray_kwargs.ray_init._node_ip_address": "the cluster stage gives each node its address ({interface}, "
                                            "{head_address})",
    "ray_kwargs.ray_init._redis_password": "the cluster stage sets Ray's authentication",
    "ray_kwargs.ray_init._system_config": "the cluster stage pins Ray's ports and authentication ({cluster_settings})",
    "trainer.default_local_dir": "set {checkpoint_dir} (checked, and counted by the disk checks)",
    "trainer.logger": "set {loggers} (it also places each tracker's files in the workspace)",
    "trainer.project_name": "set {project} (a folder name, checked)",
    "trainer.experiment_name": "set {experiment} (a folder name, checked)",
    # a model folder may carry code (auto_map, *.py) that transformers runs when this is on (issue 44)
    "actor_rollout_ref.model.trust_remote_code": _TRUST,
    "data.trust_remote_code": _TRUST,
    "critic.model.trust_remote_code": _TRUST,
    "reward_model.model.trust_remote_code": _TRUST,
    "trainer.nnodes": "it comes from the inventory (one node per NPU host)",
    "trainer.n_gpus_per_node": "set {visible_devices} (the cards each host gives the run)",
}


def _override_paths(mapping, prefix=()):
    """``(path, value)`` for every key of a nested mapping, each path a tuple of segments without Hydra's '+'."""
    for key, value in mapping.items():
        path = prefix + tuple(_bare(part) for part in str(key).split("."))
        yield path, value
        if isinstance(value, Mapping):
            yield from _override_paths(value, path)


def owned_problems(user_overrides, setting="{overrides}"):
    """One problem for each key of the user's overrides that the run script sets itself (:data:`OWNED`): the key
    itself (any value, null included: null would remove the package's value), or a key above it given a value that
    is not a mapping (it would replace the whole subtree). ``setting`` names where the overrides come from; the
    problems name settings as {field}s (:data:`OWNED`), ``{overrides}`` by default."""
    if not isinstance(user_overrides, Mapping):
        return []
    out = []
    for path, value in _override_paths(user_overrides):
        for owned, use in OWNED.items():
            target = tuple(owned.split("."))
            if path == target or (target[:len(path)] == path and not isinstance(value, Mapping)):
                out.append("%s sets %s%s: the run script sets it itself; %s"
                           % (setting, ".".join(path), "" if path == target else " (which holds %s)" % owned, use))
    return out


def owned_in_profiles(profiles, builtin_dir):
    """:func:`owned_problems` for the run profiles of the user's own files (``{name, path, data}`` as the stage
    loads them): a profile file of one's own is one more layer of overrides. The package's profiles (those in
    ``builtin_dir``) set what they set on purpose (the simulated host's overlay turns Ray's dashboard off)."""
    out = []
    builtin = os.path.realpath(builtin_dir)
    for profile in profiles or []:
        path = str(profile.get("path", ""))
        if os.path.dirname(os.path.realpath(path)) == builtin:
            continue
        out += owned_problems((profile.get("data") or {}).get("overrides") or {},
                              "{profiles} (the profile file %s)" % path)
    return out


def _quote(text):
    """``text`` as a single-quoted Hydra string."""
    doubled = _BACKSLASHES_BEFORE_QUOTE.sub(lambda match: match.group(1) * 2, text)
    return "'" + doubled.replace("'", "\\'") + "'"


def hydra_value(value):
    """``value`` written for a Hydra command-line override, so that Hydra reads back the same value and type.

    bool: ``True``/``False``; None: ``null``; int: its digits; float: its ``repr`` (``1e-06``, ``inf``); str: bare
    when it only holds ``A-Za-z0-9_-./:@+`` and Hydra would not read it as a number, bool or null, else single-quoted
    (``'`` escaped, and backslashes where they precede a quote); list: ``[a,b]``; mapping: ``{k:v}`` (its keys must
    be strings that can be written bare, without ':'). A string holding ``${...}`` is written as it is: OmegaConf
    resolves it when verl reads the configuration (``\\${...}`` is OmegaConf's literal form).
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if value is None:
        return "null"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, str):
        return value if _BARE.fullmatch(value) and not _NOT_A_STRING.fullmatch(value) else _quote(value)
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join("%s:%s" % (_dict_key(key), hydra_value(item)) for key, item in value.items()) + "}"
    raise TypeError("cannot write %s %r as a Hydra override value" % (type(value).__name__, value))


def _dict_key(key):
    if isinstance(key, str) and _BARE_DICT_KEY.fullmatch(key) and not _NOT_A_STRING.fullmatch(key):
        return key
    raise ValueError("%r cannot be a key of a mapping in a Hydra override (Hydra does not quote keys): use letters, "
                     "digits and _ - . / @ +, not a number, bool or null" % (key,))


def override_map(*layers):
    """``{dotted key: value}``: the layers merged (:func:`deep_merge`) and flattened (:func:`flatten`), a ``+`` in
    front of a key verl's configuration does not have; the shape of the run spec's ``overrides``. The one value the
    run's words are written from (:func:`render_overrides`), so a reader of this mapping (the launch decision, the
    first step's wait, a launch's record) sees exactly what verl gets, with no word parsed back."""
    return dict(flatten(deep_merge(*layers)))


def render_overrides(*layers):
    """``["key=value", ...]``: the layers merged and flattened (:func:`override_map`) and written for Hydra."""
    return ["%s=%s" % (key, hydra_value(value)) for key, value in override_map(*layers).items()]


def shell_lines(overrides):
    """Each override as one shell word, for a bash script that passes one override per line."""
    return [shlex.quote(override) for override in overrides]


# --- validation against verl's configuration ---------------------------------------------------------------------


def config_groups(config_dir):
    """The config groups of a config folder: its sub-folders, as Hydra names them (``a/b``)."""
    groups = set()
    for folder, subfolders, _ in os.walk(config_dir):
        for sub in subfolders:
            groups.add(os.path.relpath(os.path.join(folder, sub), config_dir).replace(os.sep, "/"))
    return frozenset(groups)


def _compose_or_raise(config_dir, config_name, overrides):
    import hydra

    # The context manager puts GlobalHydra back as it was, also when compose raises.
    with hydra.initialize_config_dir(config_dir=config_dir, version_base=None):
        return hydra.compose(config_name=config_name, overrides=list(overrides))


def _error(raw, key, message):
    return {"key": key, "override": raw, "message": "%s: %s" % (key, message)}


def _detail(exc):
    """Hydra's message on one line, without its pointer to the config search path."""
    lines = []
    for line in str(exc).splitlines():
        line = line.strip()
        if line.startswith("Config search path:"):
            break
        if line:
            lines.append(line)
    return "".join(line + (" " if line.endswith((":", ".")) else "; ") for line in lines).rstrip("; ")


def _parse_error(raw, exc):
    """The error for an override Hydra's parser rejects (``exc`` from ``OverridesParser.parse_override``)."""
    position = getattr(exc.__cause__, "startIndex", None)  # set when the lexer met a character it has no rule for
    if position is not None and position < len(raw):
        detail = "Hydra cannot read %r at character %d" % (raw[position], position + 1)
    else:
        detail = _detail(exc)
    return {"key": raw.split("=", 1)[0].lstrip("+~"), "override": raw,
            "message": "%s: malformed override: %s" % (raw, detail)}


def _has_key(cfg, key):
    from omegaconf import OmegaConf

    return OmegaConf.select(cfg, key, default=_MISSING, throw_on_resolution_failure=False) is not _MISSING


def _composition_error(override, exc, cfg, groups):
    """The error for a well-formed override that composition rejects; ``cfg`` is the configuration it was applied to.

    A key that names a config group (``data=...``, ``rollout@...=...``) picks a file, so Hydra's own message says
    best what went wrong; so it does for a sweep (``a,b``) and anything else that is not a typo or a needless ``+``.
    """
    raw, key = override.input_line, override.key_or_group
    if override.package is not None:
        return _error(raw, "%s@%s" % (key, override.package), _detail(exc))
    if key not in groups and not key.startswith("hydra/") and not override.is_sweep_override():
        if override.is_add() and _has_key(cfg, key):
            return _error(raw, key, _KEY_EXISTS)
        if not (override.is_add() or override.is_force_add() or override.is_delete()) and not _has_key(cfg, key):
            return _error(raw, key, _NO_SUCH_KEY)
    return _error(raw, key, _detail(exc))


def compose(config_dir, overrides, config_name="ppo_trainer"):
    """``(cfg, errors)``: verl's configuration composed with ``overrides`` (strings, as on verl's command line).

    ``cfg`` is None when any override is bad; ``errors`` lists every bad one, in order: a malformed override, a key
    verl's configuration does not have (without ``+``), a ``+`` on a key it has, and whatever else Hydra refuses
    (an unknown config group option, an ambiguous ``a,b``). All overrides are composed at once first; only when that
    fails are they applied one by one, each over those accepted before it, so that every bad one is named and an
    override that relies on an earlier ``+key`` is judged as Hydra would. A config folder or name that does not
    compose at all raises Hydra's exception.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    config_dir = os.path.abspath(config_dir)
    parser = OverridesParser.create()
    errors, parsed = [], []
    for index, raw in enumerate(overrides):
        try:
            parsed.append((index, raw, parser.parse_override(raw)))
        except HydraException as exc:
            errors.append((index, _parse_error(raw, exc)))

    try:
        cfg = _compose_or_raise(config_dir, config_name, [raw for _, raw, _ in parsed])
    except (HydraException, OmegaConfBaseException):
        cfg = None
    if cfg is None:
        groups = config_groups(config_dir)
        accepted, applied_to = [], _compose_or_raise(config_dir, config_name, [])
        for index, raw, override in parsed:
            try:
                applied_to = _compose_or_raise(config_dir, config_name, accepted + [raw])
                accepted.append(raw)
            except (HydraException, OmegaConfBaseException) as exc:
                errors.append((index, _composition_error(override, exc, applied_to, groups)))
    errors = [error for _, error in sorted(errors, key=lambda pair: pair[0])]
    return (None if errors else cfg), errors


def value_at(tree, key, missing=_MISSING):
    """The value at dotted ``key`` in the plain (nested dict/list) ``tree``, or ``missing`` when a part is not
    there."""
    node = tree
    for segment in key.split("."):
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and segment.isdigit() and int(segment) < len(node):
            node = node[int(segment)]
        else:
            return missing
    return node


def _expected_type(default):
    for kind in (bool, int, float, str, list, dict):
        if isinstance(default, kind):
            return kind
    return None


def _fits(kind, value):
    if kind in (int, float):
        # verl writes some float settings with integer defaults (rollout.top_p: 1, actor.entropy_coeff: 0), so
        # int and float are not told apart; a bool is not a number here.
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind)


def type_errors(base_cfg, overrides, groups=()):
    """Errors for overrides whose value does not fit the type of verl's default.

    ``base_cfg`` is verl's configuration composed without overrides; ``overrides`` are strings as for
    :func:`compose`; ``groups`` are the config group names (:func:`config_groups`), whose overrides pick a file and
    are left to :func:`compose`. Checked: overrides of keys the base has with a non-null, non-interpolated default.
    bool wants bool, int and float want a number (not a bool), str, list and dict want the same (see ALSO_ACCEPTED
    for verl's exceptions). Not checked: null (verl decides what may be unset), interpolations (``${...}``), ``+``
    and ``~`` overrides, sweeps and malformed overrides (:func:`compose` reports those).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    parser = OverridesParser.create()
    defaults = OmegaConf.to_container(base_cfg, resolve=False)
    errors = []
    for raw in overrides:
        try:
            override = parser.parse_override(raw)
        except HydraException:
            continue
        key = override.key_or_group
        if (override.is_add() or override.is_delete() or override.is_sweep_override()
                or override.package is not None or key in groups):
            continue
        default = value_at(defaults, key)
        kind = _expected_type(default)
        if kind is None or (isinstance(default, str) and "${" in default):
            continue
        value = override.value()
        if value is None or (isinstance(value, str) and "${" in value):
            continue
        if _fits(kind, value) or (key in ALSO_ACCEPTED and isinstance(value, ALSO_ACCEPTED[key])):
            continue
        errors.append(_error(raw, key, "expects %s (verl's default is %r), got %s %r"
                             % (kind.__name__, default, type(value).__name__, value)))
    return errors


def check(config_dir, overrides, config_name="ppo_trainer"):
    """``(cfg, errors)``: the configuration composed with the overrides (None when any is bad) and the errors of
    :func:`compose`, then those of :func:`type_errors` for the overrides compose accepted. The run's configuration
    is composed once here (and verl's defaults once, for the types): the caller keeps ``cfg``."""
    base_cfg, _ = compose(config_dir, [], config_name)
    cfg, errors = compose(config_dir, overrides, config_name)
    rejected = {error["override"] for error in errors}
    errors = errors + type_errors(base_cfg, [raw for raw in overrides if raw not in rejected],
                                  config_groups(config_dir))
    return (None if errors else cfg), errors


def validate(config_dir, overrides, config_name="ppo_trainer"):
    """The errors of :func:`check`."""
    return check(config_dir, overrides, config_name)[1]


def as_mapping(overrides):
    """``{dotted key: value}`` of well-formed overrides, as Hydra's own parser reads them (``+`` and ``~`` kept in
    front of the key; a config group's choice under its group name). Imports hydra when called."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    out = {}
    for raw in overrides:
        override = parser.parse_override(raw)
        mark = ("++" if override.is_force_add() else "+" if override.is_add() else "~" if override.is_delete()
                else "")
        out[mark + override.key_or_group] = None if override.is_delete() else override.value()
    return out


def _installed_verl_config_dir():
    import importlib.util

    spec = importlib.util.find_spec("verl")  # finds the package without importing it (verl's import is heavy)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "trainer", "config")


def main(argv=None):
    """Check overrides against verl's configuration; print {"ok": ..., "errors": [...]} as JSON, exit 1 on errors."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ascend_grpo.train.overrides", description=main.__doc__)
    parser.add_argument("--config-dir", help="verl's trainer/config folder (default: the installed verl's)")
    parser.add_argument("--config-name", default="ppo_trainer")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, as on verl's command line")
    args = parser.parse_args(argv)
    config_dir = args.config_dir or _installed_verl_config_dir()
    if config_dir is None:
        parser.error("verl is not installed here: give --config-dir")
    errors = validate(config_dir, args.overrides, args.config_name)
    print(json.dumps({"ok": not errors, "errors": errors}, indent=2, ensure_ascii=False))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())


# YAML's and Hydra's spellings of false, for a string value (a bool, None or number is read as Python reads it)
_FALSE_WORDS = ("false", "0", "no", "off", "null", "none", "")


def validates_first(values):
    """Whether a run with the merged overrides ``values`` (:func:`override_map`, ``{dotted key: value}``) validates
    before its first step: verl's ``trainer.val_before_train``, true unless an override turns it off (verl validates
    on every launch, a resume's too, before training). A string value is false when it spells false."""
    value = True
    for key, raw in (values or {}).items():
        if str(key).lstrip("+~") == "trainer.val_before_train":
            value = (str(raw).strip().lower() not in _FALSE_WORDS) if isinstance(raw, str) else bool(raw)
    return value


def first_step_wait_minutes(values, wait_minutes, validation_minutes):
    """How long the train stage waits for the first step: ``wait_minutes`` (verl's start-up and a step), plus
    ``validation_minutes`` when the run validates before training (:func:`validates_first`, from the merged
    overrides ``values``)."""
    return int(wait_minutes) + (int(validation_minutes) if validates_first(values) else 0)
