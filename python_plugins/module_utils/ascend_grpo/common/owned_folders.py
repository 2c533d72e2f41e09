"""The folders the package owns in the training environment, each for one use, and the path settings that would
name one of them for another use: a venv setting at another stage's venv or at the folder of venvs, the checkpoint
folder at the state folder, the eval folder at the run's. A stage that replaces what it finds in its folder (a venv
that cannot serve, a verl tree, a merge target, a dataset) moves it aside: pointed at a folder the package keeps for
something else, it would move that away.

No list kept by hand: the owned folders are the settings of the roles' ``defaults/main.yml`` derived from the
workspace (``grpo_workspace``) or the stack's venv (``grpo_stack_venv``), directly or through each other, whose
names say they hold a path (``_dir``, ``_venv``, ``_path``, ``_root``, ``_cache``, ``_workspace``). The defaults
also say what is by design: ``a: "{{ b }}"`` names b's folder again (deps_pinning_venv is the stack's venv), and
``a: "{{ b }}/jobs"`` puts a inside b. Anything else inside the workspace is fine; two settings on one folder, or
one inside another, is refused naming both.

The few settings the layout starts from are named by the caller (the role layer, the ``owned_folder_problems``
filter), in a ``layout`` keyed by this module's fields: ``workspace`` (grpo_workspace), ``stack_venv``
(grpo_stack_venv) and ``verl_path`` (deps_pinning_verl_path, whose empty value still means a folder). The messages
name the settings themselves, as the defaults and the values do.

Standard library only: the caller reads the defaults files.
"""

import posixpath
import re

# The fields of a layout (field -> the setting that is it): the folders the others derive from
ROOTS = ("workspace", "stack_venv")
# folders that exist to hold the others
HOLDERS = ("workspace",)
# An empty value that still means a folder the package owns: verl's tree is <workspace>/verl unless set
# (ascend_grpo.common.workspace.verl_dir): field -> (the field it sits in, the folder's name there).
EMPTY_MEANS = {"verl_path": ("workspace", "verl")}
_PATH_NAME = re.compile(r".*_(dir|venv|path|root|cache|workspace)")
_REF = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\|\s*default\([^)]*\)\s*)?\}\}")


def empty_means(layout):
    """The settings whose empty value still means a folder, as defaults (``{name: text}``) of ``layout``."""
    return {layout[field]: "{{ %s }}/%s" % (layout[within], folder) for field, (within, folder) in EMPTY_MEANS.items()}


def defaults(documents, layout):
    """Every role's defaults as written (``{name: text}``), from ``documents`` (the parsed defaults files, which the
    caller read: where they lie is the role layer's to know), with the empty values that mean a folder
    (:func:`empty_means` of ``layout``)."""
    out = {}
    for document in documents:
        out.update({k: v for k, v in (document or {}).items() if isinstance(v, str)})
    out.update(empty_means(layout))
    return out


def owned(texts, layout):
    """The names of the owned folders among ``texts`` (the defaults), derived from the roots ``layout`` names."""
    names = {layout[field] for field in ROOTS}
    grown = True
    while grown:
        grown = False
        for name, text in texts.items():
            if name in names or not _PATH_NAME.fullmatch(name):
                continue
            if any(ref in names for ref, _ in _REF.findall(text)):
                names.add(name)
                grown = True
    return names


def _design(texts, name):
    """(the setting ``name``'s default names again, the setting it sits inside by design), from its default."""
    text = texts.get(name, "").strip()
    whole = _REF.fullmatch(text)
    if whole:
        return whole.group(1), None
    inside = re.match(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/", text)
    return None, inside.group(1) if inside else None


def resolve(texts, names, values, layout):
    """Each owned folder's path: the value given (the stage's own settings, what the user set), else its default
    rendered with the others (a default this cannot render, one with filters, is left out)."""
    out, busy, empty = {}, set(), empty_means(layout)

    def value(name):
        if name in out:
            return out[name]
        given = values.get(name)
        if isinstance(given, str) and given:
            out[name] = given
        elif name in busy or name not in texts:  # a loop of defaults, or no default: unknown
            out[name] = None
        elif name in values and name not in empty:  # set empty: off (deps_pinning_venv: no venv)
            out[name] = None
        else:  # its default (an empty value with a meaning of its own, empty_means, is in texts)
            busy.add(name)
            out[name] = _render(texts[name], value)
            busy.discard(name)
        return out[name]

    for name in names:
        value(name)
    return {name: path for name, path in out.items() if name in names and path and path.startswith("/")}


def _render(text, value):
    def one(match):
        got = value(match.group(1))
        if got is None:
            raise KeyError(match.group(1))
        return got

    try:
        rendered = _REF.sub(one, text)
    except KeyError:
        return None
    return rendered if "{{" not in rendered and "{%" not in rendered else None


def problems(own, values, texts, layout):
    """The overlaps of the owned folders that involve one of ``own`` (the stage's own settings), each naming both
    settings and the fix. ``values``: the settings' values the stage knows; ``texts``: the defaults; ``layout``:
    the settings the layout's fields are."""
    names = owned(texts, layout)
    holders = {layout[field] for field in HOLDERS}
    paths = {name: posixpath.normpath(path) for name, path in resolve(texts, names | set(own), values,
                                                                      layout).items()}
    same, inside = {}, {}
    for name in paths:
        same[name], inside[name] = _design(texts, name)

    def base(name):  # the folder a setting names by design (deps_pinning_venv: grpo_stack_venv's)
        seen = set()
        while same.get(name) and name not in seen:
            seen.add(name)
            name = same[name]
        return name

    out, done = [], set()
    for mine in [n for n in own if n in paths]:
        equal, holds, within, shown = [], [], [], set()
        for other in sorted(paths, key=lambda name: (base(name) != name, name)):
            if other == mine or base(other) == base(mine) or frozenset((mine, other)) in done:
                continue
            done.add(frozenset((mine, other)))
            if base(other) in shown:  # named again by design (deps_pinning_venv is grpo_stack_venv's): said once
                continue
            shown.add(base(other))
            a, b = paths[mine], paths[other]
            if a == b:
                equal.append(other)
            elif a.startswith(b.rstrip("/") + "/") and not _may_hold(base(other), mine, inside, base, holders):
                within.append("%s (%s)" % (other, b))
            elif b.startswith(a.rstrip("/") + "/") and not _may_hold(base(mine), other, inside, base, holders):
                holds.append("%s (%s)" % (other, b))
        # the same folder as another says enough: what that one holds is the other's business
        found = (["it is the folder %s name%s" % (" and ".join(equal), "" if len(equal) > 1 else "s")]
                 if equal else ["it holds %s" % ", ".join(holds)] if holds else []) + \
            (["it is inside %s" % ", ".join(within)] if within else [])
        if found:
            out.append("%s (%s) names a folder the package keeps for something else: %s. What the stage does with "
                       "%s (making it, replacing or moving aside what it finds there) would take that: give %s a "
                       "folder of its own, neither inside nor holding another one" % (mine, paths[mine],
                                                                                       "; ".join(found), mine, mine))
    return out


def _may_hold(outer, name, inside, base, holders):
    """Whether the folder ``outer`` names may hold ``name``'s: the workspace (``holders``) holds them all;
    otherwise only what sits in it by design (the jobs in the state folder)."""
    if outer in holders:
        return True
    return inside.get(name) is not None and base(inside[name]) == outer
