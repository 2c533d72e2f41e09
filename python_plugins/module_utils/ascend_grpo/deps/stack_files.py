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
"""

import os

STAGES = {"deps": str, "patch": list, "train": list, "eval": str}
PROFILE_DIRS = {"deps": "deps_pinning", "patch": "verl_compat_patch", "train": "grpo_train", "eval": "grpo_eval"}


class StackError(ValueError):
    """What is wrong with grpo_stack, and what to set instead."""


def known(stacks_dir):
    return sorted(name[:-4] for name in os.listdir(stacks_dir) if name.endswith(".yml"))


def locate(ref, stacks_dir):
    """The file a grpo_stack value names: a shipped stack's name, or a path (anything with a /)."""
    if not isinstance(ref, str) or not ref.strip():
        raise StackError("grpo_stack must name a stack: one of %s, or the path of a stack file of your own"
                         % ", ".join(known(stacks_dir)))
    path = ref if "/" in ref else os.path.join(stacks_dir, ref + ".yml")
    if not os.path.isfile(path):
        raise StackError("grpo_stack: no stack %s (%s): use one of %s, or the path of a stack file of your own"
                         % (ref, path, ", ".join(known(stacks_dir))))
    return path


def validate(data, ref):
    """The stack's mapping, checked: every stage named with a value of the right type, no other key."""
    if not isinstance(data, dict):
        raise StackError("grpo_stack %s: a stack file is a mapping of %s" % (ref, ", ".join(STAGES)))
    unknown = sorted(set(data) - set(STAGES) - {"description"})
    missing = [stage for stage in STAGES if stage not in data]
    if unknown or missing:
        raise StackError("grpo_stack %s: %s%s (a stack names %s)" % (
            ref, "unknown key(s) %s" % ", ".join(unknown) if unknown else "",
            ("; " if unknown and missing else "") + ("missing %s" % ", ".join(missing) if missing else ""),
            ", ".join(STAGES)))
    for stage, kind in STAGES.items():
        value = data[stage]
        good = isinstance(value, str) and value.strip() if kind is str else (
            isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value))
        if not good:
            raise StackError("grpo_stack %s: %s must be %s, not %r" % (
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


# How each stage's settings name a profile, for the refusal's text: (what the stage calls it, the setting, the
# setting for a file of one's own or None when the list takes paths itself).
PROFILE_SETTINGS = {
    "deps": ("profile", "deps_pinning_profile", "deps_pinning_profile_file"),
    "patch": ("patch profile", "verl_compat_patch_profiles", None),
    "train": ("run profile", "grpo_train_profiles", None),
    "eval": ("OpenCompass profile", "grpo_eval_profile", "grpo_eval_profile_file"),
}


def locate_profiles(stage, refs, profiles_dir, own_file=""):
    """The files a stage's profile setting names, in order, or a :class:`StackError` naming the setting and the
    profiles there are.

    ``refs`` is one name or a list of names; a name with a ``/`` is a profile file of one's own. ``own_file`` (the
    single-profile stages' ``*_profile_file``) wins over ``refs`` when set.
    """
    what, setting, file_setting = PROFILE_SETTINGS[stage]
    if own_file:
        refs = [own_file]
    if file_setting and isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) and r.strip() for r in refs):
        raise StackError("%s is %s, e.g. %s, not %r" % (
            setting, "a profile name" if file_setting else "a non-empty list of profile names or profile file paths, "
            "applied in order", known(profiles_dir)[0] if file_setting else "[%s]" % known(profiles_dir)[0], refs))
    paths = []
    for ref in refs:
        path = ref if "/" in ref else os.path.join(profiles_dir, ref + ".yml")
        if not os.path.isfile(path):
            if file_setting:
                raise StackError("Unknown %s %s: set %s to one of %s, or %s to a profile file of your own." % (
                    what, ref, setting, ", ".join(known(profiles_dir)), file_setting))
            raise StackError("Unknown %s %s in %s: use one of %s, or the path of a %s file of your own." % (
                what, ref, setting, ", ".join(known(profiles_dir)), what))
        paths.append(path)
    return paths
