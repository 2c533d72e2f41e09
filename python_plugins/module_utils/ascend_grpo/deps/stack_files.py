"""Stack files: one choice of the whole software stack, naming each stage's profile.

Plain Python (the controller reads them; no Ansible import). A stack file is a YAML mapping with exactly these keys:

- ``deps``: the deps stage's profile (roles/deps_pinning/files/profiles/<name>.yml);
- ``patch``: the patch stage's ordered list of profiles (roles/verl_compat_patch/files/profiles);
- ``train``: the train stage's ordered list of profiles (roles/grpo_train/files/profiles);
- ``eval``: the eval stage's profile (roles/grpo_eval/files/profiles);
- ``description`` (optional): one line for people.

``grpo_stack`` names a shipped stack (files/stacks/<name>.yml) or, with a ``/``, a stack file of your own. Each
stage's own profile setting (deps_pinning_profile, verl_compat_patch_profiles, grpo_train_profiles,
grpo_eval_profile) still overrides its part.

A message names an input as ``{field}``: ``{stack}`` (the stack asked for: grpo_stack), and a stage's ``{refs}``
(its profile setting) and ``{own_file}`` (its setting for a profile file of one's own). The deps stage's filters
(python_plugins/filter_plugins/deps_filters.py) name each stage's settings.
"""

import os

STAGES = {"deps": str, "patch": list, "train": list, "eval": str}
PROFILE_DIRS = {"deps": "deps_pinning", "patch": "verl_compat_patch", "train": "grpo_train", "eval": "grpo_eval"}


class StackError(ValueError):
    """What is wrong with grpo_stack (or a stage's profile setting), and what to set instead (naming them as
    ``{field}``)."""


def known(stacks_dir):
    return sorted(name[:-4] for name in os.listdir(stacks_dir) if name.endswith(".yml"))


def locate(ref, stacks_dir):
    """The file a grpo_stack value names: a shipped stack's name, or a path (anything with a /)."""
    if not isinstance(ref, str) or not ref.strip():
        raise StackError("{stack} must name a stack: one of %s, or the path of a stack file of your own"
                         % ", ".join(known(stacks_dir)))
    path = ref if "/" in ref else os.path.join(stacks_dir, ref + ".yml")
    if not os.path.isfile(path):
        raise StackError("{stack}: no stack %s (%s): use one of %s, or the path of a stack file of your own"
                         % (ref, path, ", ".join(known(stacks_dir))))
    return path


def validate(data, ref):
    """The stack's mapping, checked: every stage named with a value of the right type, no other key."""
    if not isinstance(data, dict):
        raise StackError("{stack} %s: a stack file is a mapping of %s" % (ref, ", ".join(STAGES)))
    unknown = sorted(set(data) - set(STAGES) - {"description"})
    missing = [stage for stage in STAGES if stage not in data]
    if unknown or missing:
        raise StackError("{stack} %s: %s%s (a stack names %s)" % (
            ref, "unknown key(s) %s" % ", ".join(unknown) if unknown else "",
            ("; " if unknown and missing else "") + ("missing %s" % ", ".join(missing) if missing else ""),
            ", ".join(STAGES)))
    for stage, kind in STAGES.items():
        value = data[stage]
        good = isinstance(value, str) and value.strip() if kind is str else (
            isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value))
        if not good:
            raise StackError("{stack} %s: %s must be %s, not %r" % (
                ref, stage, "a profile name" if kind is str else "a non-empty list of profile names", value))
    return data


def missing_profiles(data, roles_dir):
    """[(stage, profile)] the stack names that no role ships (names only; paths of your own are not checked)."""
    out = []
    for stage, role in PROFILE_DIRS.items():
        names = data[stage] if isinstance(data[stage], list) else [data[stage]]
        for name in names:
            if "/" not in name and not os.path.isfile(os.path.join(roles_dir, role, "files", "profiles", name + ".yml")):
                out.append((stage, name))
    return out


# How each stage names a profile, for the refusal's text: (what the stage calls it, whether it has a setting for a
# file of one's own, ``{own_file}``; without one its list, ``{refs}``, takes paths itself). The settings themselves
# are the filters' (deps_filters.PROFILE_SETTINGS).
PROFILE_KINDS = {
    "deps": ("profile", True),
    "patch": ("patch profile", False),
    "train": ("run profile", False),
    "eval": ("OpenCompass profile", True),
}


def locate_profiles(stage, refs, profiles_dir, own_file=""):
    """The files a stage's profile setting names, in order, or a :class:`StackError` naming the setting (``{refs}``,
    ``{own_file}``) and the profiles there are.

    ``refs`` is one name or a list of names; a name with a ``/`` is a profile file of one's own. ``own_file`` (the
    single-profile stages' ``*_profile_file``) wins over ``refs`` when set.
    """
    what, has_own_file = PROFILE_KINDS[stage]
    if own_file:
        refs = [own_file]
    if has_own_file and isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r.strip() for r in refs):
        raise StackError("{refs} is %s, e.g. %s, not %r" % (
            "a profile name" if has_own_file else "a non-empty list of profile names or profile file paths, "
            "applied in order", known(profiles_dir)[0] if has_own_file else "[%s]" % known(profiles_dir)[0], refs))
    paths = []
    for ref in refs:
        path = ref if "/" in ref else os.path.join(profiles_dir, ref + ".yml")
        if not os.path.isfile(path):
            if has_own_file:
                raise StackError("Unknown %s %s: set {refs} to one of %s, or {own_file} to a profile file of your "
                                 "own." % (what, ref, ", ".join(known(profiles_dir))))
            raise StackError("Unknown %s %s in {refs}: use one of %s, or the path of a %s file of your own." % (
                what, ref, ", ".join(known(profiles_dir)), what))
        paths.append(path)
    return paths
