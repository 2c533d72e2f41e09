"""Static import check: every import of the accelerator stack in a verl tree, resolved without importing anything.

Plain Python, standard library only. For each ``import`` / ``from ... import`` of a watched package (vllm,
vllm_ascend, transformers, torch_npu) found in the tree, the module is looked up as a file or package folder in
the given search paths (site-packages folders, or unpacked wheels), and each imported name as a submodule or a
name the module's source binds (def, class, assignment, import, ``__all__``, or a lazy-module string). Nothing is
imported, so it works for another platform's packages and never runs their import-time code.

Each unresolved import is reported with file:line and whether the default path reaches it: a file is on the
default path when the entry module reaches it through verl's own module-level imports, and the import itself is
not guarded (inside ``try: ... except ImportError``).

``python -m ascend_grpo.patch.import_check --tree VERL_ROOT --path SITE_PACKAGES [--path ...] [--entry verl.trainer.main_ppo]``
"""

import ast
import hashlib
import importlib.util
import json
import os
import re
import sys
import warnings

WATCHED = ("vllm", "vllm_ascend", "transformers", "torch_npu")
# The fast paths, none of which changes a verdict (tests/unit/patch/test_patch_drift.py compares both ways): files whose
# text cannot matter are not parsed (no watched import, not on the default or an optional path; a module whose text does
# not hold the name sought), and star imports are searched likeliest first. Off: every file is parsed and searched
# in order, the straightforward reading the benchmark compares against.
PREFILTER = True


def module_files(root, package="verl"):
    """{dotted module: path} for every .py file of ``package`` under ``root``."""
    out = {}
    base = os.path.join(root, package)
    for folder, _dirs, files in os.walk(base):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def fingerprint(root, paths, settings, package="verl"):
    """What a check's answer depends on: every .py file of the tree (path, size, mtime), the distributions
    installed in ``paths`` (their dist-info folders' names and times: an install or removal changes them) and the
    check's settings. Equal fingerprints give equal answers, so a rerun can keep the last one."""
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in sorted(module_files(root, package).values()):
        digest.update(("%s\0%d\0%d\n" % _stamp(path)).encode())
    for base in paths:
        try:
            names = sorted(n for n in os.listdir(base) if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth")))
        except OSError:
            continue
        for name in names:
            digest.update(("%s\0%d\n" % (os.path.join(base, name),
                                           os.stat(os.path.join(base, name)).st_mtime_ns)).encode())
    return digest.hexdigest()


_TEXT_CACHE = {}


def _stamp(path):
    info = os.stat(path)
    return path, info.st_mtime_ns, info.st_size


def _text(path):
    """A file's text; the caches key on (path, mtime, size), so a patched file is read again."""
    key = _stamp(path)
    if key not in _TEXT_CACHE:
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            _TEXT_CACHE[key] = data.decode("utf-8")
        except UnicodeDecodeError as err:  # Python refuses such a file too: "invalid utf-8" (a SyntaxError)
            line = data[:err.start].count(b"\n") + 1
            raise SyntaxError("byte 0x%02x is not UTF-8" % data[err.start], (path, line, 0, "")) from err
    return _TEXT_CACHE[key]


def _imports_any(path, import_line):
    """Whether the file's text imports a watched package (a file that is not UTF-8 counts: check() reports it)."""
    try:
        return bool(import_line.search(_text(path)))
    except SyntaxError:
        return True


def _parse(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # other projects' invalid escapes are not ours to report
        return ast.parse(_text(path), filename=path)


def _catches_import_error(handler):
    if handler.type is None:
        return True
    names = set()
    for elt in (handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]):
        names.add(elt.id if isinstance(elt, ast.Name) else getattr(elt, "attr", ""))
    return bool({"ImportError", "ModuleNotFoundError", "Exception"} & names)


def _imports(body, guarded=False, in_function=False):
    """(import statement, guarded, in_function) for every import in a statement list, descending only through
    statements (imports never sit inside expressions). guarded: inside try/except ImportError."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, guarded, in_function
            continue
        inner_function = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        inner_guarded = guarded or (isinstance(node, ast.Try) and any(_catches_import_error(h)
                                                                      for h in node.handlers))
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                yield from _imports(block, inner_guarded if field == "body" else guarded, inner_function)
        for handler in getattr(node, "handlers", None) or []:
            yield from _imports(handler.body, guarded, inner_function)
        for case in getattr(node, "cases", None) or []:
            yield from _imports(case.body, guarded, inner_function)


def _absolute(module, level, package):
    """The absolute name of ``from <level dots><module> import``, written in a module of ``package`` (its parent
    package, or itself for an ``__init__``), by Python's own rule; None when the dots climb above the top-level
    package (an ImportError when it runs)."""
    if not level:
        return module
    try:
        return importlib.util.resolve_name("." * level + (module or ""), package)
    except (ImportError, ValueError):
        return None


_SCAN_CACHE = {}


def scan(path, dotted, is_package=False):
    """Imports in one file: [{"module", "names", "line", "guarded", "in_function"}] (absolute modules)."""
    key = (_stamp(path), dotted, is_package)
    if key not in _SCAN_CACHE:
        _SCAN_CACHE[key] = _scan(path, dotted, is_package)
    return _SCAN_CACHE[key]


def _scan(path, dotted, is_package):
    package = dotted if is_package else dotted.rpartition(".")[0]
    found = []
    tree = _parse(path)
    _OWN_CACHE.setdefault(_stamp(path), _own_names_of(tree))  # one parse serves both (verl's files need both)
    for node, guarded, in_function in _imports(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append({"module": alias.name, "names": [], "line": node.lineno, "guarded": guarded,
                              "in_function": in_function})
        else:
            module = _absolute(node.module, node.level, package) if node.level else node.module
            found.append({"module": module, "names": [a.name for a in node.names], "line": node.lineno,
                          "guarded": guarded, "in_function": in_function})
    return found


def find_module(module, paths):
    """The file of ``module`` in ``paths`` (module.py or module/__init__.py), or a namespace folder, or None."""
    rel = module.replace(".", os.sep)
    for base in paths:
        for candidate in (os.path.join(base, rel + ".py"), os.path.join(base, rel, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        if os.path.isdir(os.path.join(base, rel)):
            return os.path.join(base, rel)
    return None


_OWN_CACHE = {}


def _star_target(path, node):
    """The file a relative ``from .x import *`` in ``path`` points at (absolute star imports are not followed)."""
    if not node.level:
        return None
    folder = os.path.dirname(path)
    for _ in range(node.level - 1):
        folder = os.path.dirname(folder)
    rel = (node.module or "").replace(".", os.sep)
    for candidate in (os.path.join(folder, rel + ".py"), os.path.join(folder, rel, "__init__.py")):
        if rel and os.path.isfile(candidate):
            return candidate
    return None


def _module_level(body):
    """Module-level statements, including those under if/try/with (TYPE_CHECKING blocks, optional imports), not
    inside functions or classes: only these bind a module's attributes."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and isinstance(getattr(node, field, None), list):
                yield from _module_level(getattr(node, field))
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                yield from _module_level(handler.body)


def _creates_names_at_run_time(node):
    """``globals()[name] = ...``, ``globals().update(...)`` or ``setattr(sys.modules[__name__], ...)``: the module
    binds names that only exist once it runs (torch_npu makes its ``npu_*`` ops this way)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store) and _is_globals_call(sub.value):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "update" \
                and _is_globals_call(sub.func.value):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "setattr" and sub.args \
                and isinstance(sub.args[0], ast.Subscript) and "__name__" in ast.dump(sub.args[0]):
            return True
    return False


def _is_globals_call(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals"


def own_names(path):
    """(names the module binds itself, string constants, whether it creates names at run time); star imports are
    followed by binds(), from the text."""
    key = _stamp(path) if os.path.isfile(path) else (path,)
    if key not in _OWN_CACHE:
        _OWN_CACHE[key] = _own_names_of(_parse(path)) if os.path.isfile(path) else (set(), set(), False)
    return _OWN_CACHE[key]


def _own_names_of(tree):
    names, strings, dynamic = set(), set(), False
    for node in _module_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom) and [a.name for a in node.names] == ["*"]:
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        if isinstance(node, (ast.For, ast.Assign, ast.Expr)):
            dynamic = dynamic or _creates_names_at_run_time(node)
        for sub in ast.walk(node) if isinstance(node, (ast.Assign, ast.Expr)) else ():
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.isidentifier():
                strings.add(sub.value)
    return names, strings, dynamic


_STAR = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+\*", re.M)


_STARS_CACHE = {}


def _star_targets_text(path, text):
    """Files of the relative star imports in ``text``, found without parsing (lazy packages chain hundreds)."""
    key = _stamp(path)
    if key not in _STARS_CACHE:
        _STARS_CACHE[key] = _find_star_targets(path, text)
    return _STARS_CACHE[key]


def _find_star_targets(path, text):
    out = []
    for dots, module in _STAR.findall(text):
        node = ast.ImportFrom(module=module or None, names=[ast.alias(name="*")], level=len(dots))
        target = _star_target(path, node)
        if target:
            out.append(target)
    return out


def binds(path, name, _seen=None):
    """Whether the module at ``path`` binds ``name``, itself or through its relative star imports (followed only
    as far as needed), or lists it as a string while being a lazy module (__getattr__ or _LazyModule). A file is
    parsed only when the name occurs in its text; star imports are followed from the text. A file Python could
    not load (not UTF-8, a syntax error) binds nothing."""
    seen = _seen if _seen is not None else set()
    if path in seen:
        return False
    seen.add(path)
    try:
        text = _text(path)
        if not PREFILTER or name in text:
            names, strings, _dynamic = own_names(path)
            if name in names:
                return True
            if ("__getattr__" in names or "_LazyModule" in names or "_LazyModule" in strings) and name in strings:
                return True
    except SyntaxError:
        return False
    stars = _star_targets_text(path, text) if "import *" in text else []
    if PREFILTER:
        stars = sorted(stars, key=lambda star: _unlikely(star, name))
    return any(binds(star, name, seen) for star in stars)


def _unlikely(path, name):
    """Search order among star imports (the result is the same in any order; only the time differs): first the
    files that name the name, or whose module name is part of it (transformers' ``models/__init__`` star-imports
    some 400 model packages: Qwen2Config is in ``qwen2``), then the rest in their own order."""
    stem = os.path.basename(path[:-len("/__init__.py")] if path.endswith("/__init__.py") else path[:-3])
    flat = name.lower().replace("_", "")
    try:
        named = name in _text(path)
    except SyntaxError:
        named = False
    return not (named or stem.replace("_", "") in flat)


MODULE_MISSING = "*module*"
PARSE = "*does not parse*"


def resolve(module, names, paths):
    """(missing, unverifiable) names of ``from module import names``: ``missing`` is [MODULE_MISSING] when the
    module itself is not there; ``unverifiable`` holds the names a module that creates names at run time (torch_npu:
    ``globals()[name] = ...``) does not bind in its text: they cannot be proven either way without running it."""
    found = find_module(module, paths)
    if found is None:
        return [MODULE_MISSING], []
    missing, unverifiable = [], []
    for name in names:
        if name == "*":
            continue
        if find_module(module + "." + name, paths):
            continue
        if found.endswith(".py") and binds(found, name):
            continue
        try:
            dynamic = found.endswith(".py") and own_names(found)[2]
        except SyntaxError:
            dynamic = False
        (unverifiable if dynamic else missing).append(name)
    return missing, unverifiable


def _scan_or_none(path, dotted):
    try:
        return scan(path, dotted, path.endswith("__init__.py"))
    except SyntaxError:
        return None  # check() reports the file


def reachable(modules, entries, package="verl"):
    """``package``'s modules the entries reach through module-level (not function-level, not guarded) imports of
    the package itself: the modules Python loads when the entries are imported (a file that does not parse is
    reached, and stops there).

    verl imports its workers and rollouts inside functions, chosen by the config, so the default path is given
    as entry modules (the trainer, its workers, the rollout the config picks) and closed over module level."""
    seen, todo = set(), list(entries)
    while todo:
        name = todo.pop()
        if name in seen or name not in modules:
            continue
        seen.add(name)
        parts = name.split(".")
        for i in range(1, len(parts)):  # importing a.b.c runs a/__init__ and a.b/__init__
            todo.append(".".join(parts[:i]))
        for imp in _scan_or_none(modules[name], name) or []:
            module = imp["module"] or ""
            if imp["in_function"] or imp["guarded"] or module.split(".")[0] != package:
                continue
            todo.append(module)
            todo.extend(module + "." + n for n in imp["names"])
    return seen


DEFAULT_ENTRIES = (
    "verl.trainer.main_ppo", "verl.trainer.ppo.ray_trainer", "verl.workers.fsdp_workers",
    "verl.workers.actor.dp_actor", "verl.workers.critic.dp_critic",
    "verl.workers.rollout.vllm_rollout.vllm_rollout_spmd", "verl.workers.sharding_manager.fsdp_vllm",
)


def check(tree_root, paths, entries=DEFAULT_ENTRIES, watched=WATCHED, optional=(), package="verl"):
    """Every unresolved import of a watched package (resolved in ``paths``) and of ``package`` itself (resolved
    in the tree: a name a profile moves to a helper that does not define it is caught here), and every file of
    the tree Python could not load: [{"file", "line", "module", "missing", "unverifiable", "default_path",
    "when", "optional"}]. ``missing`` lists names that are not there (MODULE_MISSING: the module itself, PARSE:
    the file itself does not parse, with ``error``); ``unverifiable`` names a module creates at run time."""
    modules = module_files(tree_root, package)
    on_path = reachable(modules, entries, package)
    problems = []
    import_line = re.compile(r"^[ \t]*(?:from|import)[ \t]+(?:%s)\b" % "|".join(map(re.escape, watched)), re.M)
    for dotted, path in sorted(modules.items()):
        rel = os.path.relpath(path, tree_root)
        is_optional = any(rel.startswith(o) or dotted.startswith(o) for o in optional)
        # the files that matter: the default path, the optional paths, and every file importing a watched package
        # (the others are neither loaded for training nor touched by a stack change); with PREFILTER off, all
        if PREFILTER and dotted not in on_path and not is_optional and not _imports_any(path, import_line):
            continue
        try:
            imports = scan(path, dotted, path.endswith("__init__.py"))
        except SyntaxError as err:
            problems.append({"file": rel, "line": err.lineno or 0, "module": dotted, "missing": [PARSE],
                             "unverifiable": [], "default_path": dotted in on_path, "when": "on import",
                             "optional": is_optional, "error": "%s: %s" % (type(err).__name__, err.msg)})
            continue
        for imp in imports:
            module = imp["module"]
            top = (module or "").split(".")[0]
            if module is None:
                missing, unverifiable = [PARSE], []
            elif top in watched:
                missing, unverifiable = resolve(module, imp["names"], paths)
            elif top == package:
                missing, unverifiable = resolve(module, imp["names"], [tree_root])
            else:
                continue
            if not missing and not unverifiable:
                continue
            problems.append({
                "file": rel, "line": imp["line"], "module": module or "(above the top-level package)",
                "missing": missing, "unverifiable": unverifiable,
                # runs when the module loads on the default path; a function-level import runs only if called
                "default_path": dotted in on_path and not imp["guarded"] and not imp["in_function"],
                "when": "guarded" if imp["guarded"] else ("on call" if imp["in_function"] else "on import"),
                "optional": is_optional,
            })
    return problems


def blocking(unresolved, enable_optional=False):
    """What fails the check: missing names on the default path outside the optional paths, and, when the optional
    paths are enabled, their unguarded missing names too. Names that are only unverifiable never block (they are
    listed as such)."""
    return [u for u in unresolved if u["missing"] and ((u["default_path"] and not u["optional"])
                                                       or (enable_optional and u["optional"]
                                                           and u["when"] != "guarded"))]


def describe(u):
    """One line for a finding: ``file:line module: what (when[, default path][, optional])``."""
    parts = []
    if u["missing"] == [PARSE]:
        parts.append("does not parse (%s)" % u.get("error", "?"))
    elif u["missing"] == [MODULE_MISSING]:
        parts.append("no such module")
    elif u["missing"]:
        parts.append("missing " + ", ".join(u["missing"]))
    if u["unverifiable"]:
        parts.append("unverifiable: created at run time: " + ", ".join(u["unverifiable"]))
    flags = [u["when"]] + (["default path"] if u["default_path"] else []) + (["optional"] if u["optional"] else [])
    return "%s:%d %s: %s (%s)" % (u["file"], u["line"], u["module"], "; ".join(parts), ", ".join(flags))


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ascend_grpo.patch.import_check", description=__doc__.splitlines()[0])
    parser.add_argument("--tree", required=True, help="the folder holding verl/")
    parser.add_argument("--path", action="append", default=None, help="a site-packages or unpacked wheel folder")
    parser.add_argument("--entry", action="append", default=None, help="a default-path module (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    paths = args.path or [p for p in sys.path if p.endswith("site-packages")]
    problems = check(args.tree, paths, args.entry or DEFAULT_ENTRIES)
    fatal = blocking(problems)
    if args.json:
        print(json.dumps({"ok": not fatal, "unresolved": problems, "blocking": fatal}, indent=2))
    else:
        for p in problems:
            print(("FATAL " if p in fatal else "      ") + describe(p))
    return 1 if fatal else 0


if __name__ == "__main__":
    sys.exit(main())
