"""The patch stage's filters: the operations of the patch profiles, in their order.

Filter for the patch stage, over the plain-Python patch engine.

Filters for the patch stage's ordered list of profiles (plain Python, no Ansible import; tests load it as is).

A profile may name a ``base``: the profile it goes on top of, which must come earlier in the list (an overlay's
operations are written for the tree its base leaves). Profiles are named by their ``name`` field, or else by the
file name without ``.yml``.
"""

import os

from ascend_grpo.patch import ast_patch

def patch_operations(operations, files_dir):
    """``{{ profile.operations | patch_operations(files_dir) }}``: content_from read from this package's files."""
    return ast_patch.resolve_content(operations or [], files_dir)


def _mapping(profile):
    return profile if isinstance(profile, dict) else {}


def _name(entry, profile):
    return _mapping(profile).get("name") or os.path.splitext(os.path.basename(entry))[0]


def _listing(entries):
    return "[%s]" % ", ".join(entries)


def suggested_order(entries, profiles):
    """``entries`` reordered so that each base comes right before the first profile that goes on top of it (a
    base not listed is added there, by name); otherwise as given, each entry once."""
    names = [_name(e, p) for e, p in zip(entries, profiles)]
    out, out_names = [], []
    for entry, name, profile in zip(entries, names, profiles):
        base = _mapping(profile).get("base")
        if base and base not in out_names:
            out.append(next((e for e, n in zip(entries, names) if n == base), base))
            out_names.append(base)
        if name not in out_names:
            out.append(entry)
            out_names.append(name)
    return out


def patch_profile_problems(entries, profiles, known, variable="verl_compat_patch_profiles"):
    """``{{ entries | patch_profile_problems(profiles, known) }}``: what is wrong with the order of the list, one
    message a user can act on per problem ([] when it is fine). ``profiles``: each entry's loaded profile;
    ``known``: the names of the shipped profiles."""
    problems = []
    names = [_name(e, p) for e, p in zip(entries, profiles)]
    fixed = _listing(suggested_order(entries, profiles))
    for index, (entry, name, profile) in enumerate(zip(entries, names, profiles)):
        if not isinstance(profile, dict) or not isinstance(profile.get("operations"), list):
            problems.append("%s: %s is no patch profile (a mapping with a list of operations)" % (variable, entry))
            continue
        if name in names[:index]:
            problems.append("%s: %s is listed twice: set %s: %s" % (variable, name, variable, fixed))
        base = profile.get("base")
        if not base or base in names[:index]:
            continue
        if base not in names and base not in known:
            problems.append("%s: %s goes on top of %s, which is no known profile (known: %s)" % (
                variable, name, base, ", ".join(sorted(known))))
        else:
            problems.append("%s: %s goes on top of %s: set %s: %s" % (variable, name, base, variable, fixed))
    return problems


def patch_profile_operations(entries, profiles):
    """``{{ entries | patch_profile_operations(profiles) }}``: every profile's operations in list order, each
    labelled with its profile's name (``profile``), for one verl_patch call that reports states per profile."""
    out = []
    for entry, profile in zip(entries, profiles):
        name = _name(entry, profile)
        tree = {"tree": _mapping(profile)["tree"]} if _mapping(profile).get("tree") else {}
        out.extend(dict(op, profile=name, **tree) for op in _mapping(profile).get("operations") or [])
    return out


class FilterModule:
    """The patch stage's filters"""

    def filters(self):
        return {
            "patch_operations": patch_operations,
            "patch_profile_problems": patch_profile_problems,
            "patch_profile_operations": patch_profile_operations,
        }
