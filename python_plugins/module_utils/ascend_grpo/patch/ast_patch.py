"""Source patches found with ``ast`` and applied to exactly their spans; every other byte stays as it was.

Plain Python, standard library only (it runs in the training environment). An operation is data (a dict with
``op`` and its fields) and knows three states for a file's text:

- ``original``: the code it expects is there -> it has edits to make;
- ``applied``: the result is already there -> nothing to do;
- ``neither``: -> PatchError naming the file, the line and what was expected; the file is not touched.

Edits are (start, end, replacement) byte spans of the UTF-8 source (ast reports byte columns). The patched text
must parse and byte-compile, or nothing is written.

Operations:
- import_module: {file, from, to, count?}: ``from <from> import ...`` -> ``from <to> import ...`` (names kept,
  single- or multi-line).
- rename: {file, symbol, to, members}: every use of ``symbol`` -> ``to`` (imports included); ``symbol.X`` ->
  ``to.members[X]``; a member with no mapping is an error (the guide's blind rename left a member that does not
  exist).
- annotation_import: {file, module, name}: an import whose name serves only annotations may fail; it is
  wrapped in try/except ImportError binding the name to a string.
- replace_statement: {file, function, old, new}: inside ``function`` (``Class.method`` or ``func``), the
  statement equal (by AST) to ``old`` becomes ``new`` (re-indented).
- keyword_value: {file, call, keyword, old, new}: in calls to ``call``, ``keyword=<old>`` -> ``keyword=<new>``.
- create_file: {file, content}: the file with exactly this content.

An operation may also carry a ``profile`` label: several profiles then go through one apply_profile call in
order (each sees the text the ones before it leave, in check mode too), and states_by_profile reports per label.

A hint for a profile that does not fit the tree names what to change as ``{field}`` (:data:`HINT_FIELDS`: the
verl_patch module's options, which the patch stage maps to deps_pinning_verl_source, deps_pinning_verl_version and
verl_compat_patch_profiles, the setting its operations come from); the command line names them by its own flags.
"""

import ast
import difflib
import io
import os
import stat
import textwrap
import tokenize

ORIGINAL, APPLIED = "original", "applied"
# The inputs a tree hint names as {field}: where the tree came from (its source and version) and the operations.
HINT_FIELDS = ("verl_source", "verl_version", "operations")


class PatchError(ValueError):
    """A file is in neither the original nor the applied shape (or cannot be read as Python); the message says
    where and what, one line per problem (``problems``: every failing operation of the run, not only the first)."""

    def __init__(self, message, problems=None, labelled=False, hints=()):
        super().__init__(message)
        self.problems = list(problems) if problems else [message]
        self.labelled = labelled  # each problem already starts with its operation's profile label
        self.hints = list(hints)  # what to check, when a profile does not fit the tree (not problems themselves)

    @classmethod
    def of(cls, problems, labelled=False):
        return cls("\n".join(problems), problems, labelled)


class Unparsable(PatchError):
    """The file itself is not Python (a syntax error): no operation can apply to it."""


class Source:
    """A file's text with byte offsets for ast positions."""

    def __init__(self, path, text):
        self.path = path
        self.text = text
        self.data = text.encode("utf-8")
        try:
            self.tree = ast.parse(text, filename=path)
        except SyntaxError as err:
            raise Unparsable("%s:%s: does not parse as Python (%s); not patched" % (
                path, err.lineno, err.msg)) from err
        self.line_starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))

    def offset(self, lineno, col):
        return self.line_starts[lineno - 1] + col

    def span(self, node):
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def segment(self, node):
        start, end = self.span(node)
        return self.data[start:end].decode("utf-8")

    def line_indent(self, node):
        start = self.line_starts[node.lineno - 1]
        line = self.data[start:self.offset(node.lineno, node.col_offset)].decode("utf-8")
        return line if not line.strip() else None

    def fail(self, node, expected):
        where = "%s:%d" % (self.path, node.lineno) if node is not None else self.path
        raise PatchError("%s: expected %s" % (where, expected))


def _same(a, b):
    return ast.dump(a) == ast.dump(b)


def _statement(code):
    body = ast.parse(textwrap.dedent(code)).body
    if len(body) != 1:
        raise ValueError("expected one statement: %r" % code)
    return body[0]


def _expression(code):
    return ast.parse(code.strip(), mode="eval").body


def _module_span(src, node):
    """Byte span of the dotted module name in a ``from X import`` statement."""
    start, _ = src.span(node)
    segment = src.segment(node)
    tokens = list(tokenize.generate_tokens(io.StringIO(segment).readline))
    first = last = None
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string == "from" and first is None:
            continue
        if tok.type == tokenize.NAME and tok.string == "import":
            break
        if first is None:
            first = tok
        last = tok
    begin = start + _char_to_byte(segment, first.start)
    end = start + _char_to_byte(segment, last.end)
    return begin, end


def _char_to_byte(segment, pos):
    row, col = pos
    lines = segment.splitlines(keepends=True)
    before = "".join(lines[:row - 1]) + lines[row - 1][:col]
    return len(before.encode("utf-8"))


def _funcs(tree, qualified):
    parts = qualified.split(".")
    scopes = [tree]
    for part in parts:
        found = []
        for scope in scopes:
            for node in ast.iter_child_nodes(scope):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == part:
                    found.append(node)
        scopes = found
    return scopes


def _walk_statements(node):
    for child in ast.walk(node):
        if isinstance(child, ast.stmt) and child is not node:
            yield child


def top_level_names(tree):
    """Names a module binds at its top level (under if/try/with too): def, class, assignment, import."""
    names, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            todo.extend(node.body + getattr(node, "orelse", []) + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                todo.extend(handler.body)
    return names


def _check_target_binds(src, op, nodes):
    """When ``to`` is a module of the tree being patched (a helper this profile writes, say), every name the moved
    imports ask for must be one it binds: otherwise the import would fail at run time."""
    lookup = getattr(src, "lookup", None)
    text = lookup(op["to"]) if lookup else None
    if text is None:
        return
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return  # reported for that file itself
    bound = top_level_names(tree)
    modules = {(a.asname or a.name).split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    defined = sorted(n for n in bound - modules if not n.startswith("_"))
    for node in nodes:
        lacking = [a.name for a in node.names if a.name != "*" and a.name not in bound]
        if lacking:
            src.fail(node, "%s to define %s (asked for by this import; it defines %s)" % (
                op["to"], ", ".join(lacking), ", ".join(defined) or "no public name"))


def op_import_module(src, op):
    old = [n for n in ast.walk(src.tree) if isinstance(n, ast.ImportFrom) and n.module == op["from"] and not n.level]
    new = [n for n in ast.walk(src.tree) if isinstance(n, ast.ImportFrom) and n.module == op["to"] and not n.level]
    count = op.get("count")
    if old:
        if count is not None and len(old) + len(new) != count:
            src.fail(old[0], "%d import(s) from %s, found %d" % (count, op["from"], len(old) + len(new)))
        _check_target_binds(src, op, old)
        return ORIGINAL, [(*_module_span(src, n), op["to"]) for n in old]
    if new and (count is None or len(new) == count):
        _check_target_binds(src, op, new)
        return APPLIED, []
    src.fail(None, "an import from %s (or, patched, from %s)" % (op["from"], op["to"]))


def _parents(tree):
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def op_rename(src, op):
    """Every reference to ``symbol`` -> ``to``: names, imports (an alias keeps its local name: ``import symbol as S``
    -> ``import to as S``) and attributes (``vllm.config.symbol``). A member read through any of them,
    ``<ref>.X``, becomes ``<ref>.members[X]``; a member already named as in ``to`` stays. A reference to ``to``
    that still reads an old member (the guide's blind sed renamed the enum, not its members) is repaired the same
    way. A member with no mapping is an error: it may not exist in ``to``."""
    symbol, to, members = op["symbol"], op["to"], op.get("members") or {}
    new_members = set(members.values())
    aliases = set()
    edits, refs = [], 0
    for node in ast.walk(src.tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in (symbol, to) and alias.asname:
                    aliases.add(alias.asname)
                if alias.name == symbol:
                    edits.append(_alias_span(src, node, symbol) + (to,))
                elif alias.name == to:
                    refs += 1
    parents = _parents(src.tree)
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Name) and node.id in {symbol, to} | aliases:
            if node.id == symbol:
                edits.append((*src.span(node), to))
        elif isinstance(node, ast.Attribute) and node.attr in (symbol, to):
            if node.attr == symbol:
                end = src.span(node)[1]
                edits.append((end - len(symbol.encode()), end, to))
        else:
            continue
        refs += 1
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            member = parent.attr
            if member in members and member not in new_members:
                end = src.span(parent)[1]
                edits.append((end - len(member.encode()), end, members[member]))
            elif member not in new_members:
                src.fail(parent, "a mapping for %s.%s (members: %s)" % (symbol, member, sorted(members) or "none"))
    if edits:
        return ORIGINAL, edits
    if refs:
        return APPLIED, []
    src.fail(None, "a use of %s (or, patched, of %s)" % (symbol, to))


def _alias_span(src, node, name):
    start, _ = src.span(node)
    segment = src.segment(node)
    for tok in tokenize.generate_tokens(io.StringIO(segment).readline):
        if tok.type == tokenize.NAME and tok.string == name:
            return start + _char_to_byte(segment, tok.start), start + _char_to_byte(segment, tok.end)
    src.fail(node, "the name %s in this import" % name)


def op_annotation_import(src, op):
    module, name = op["module"], op["name"]
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Try):
            for inner in node.body:
                if isinstance(inner, ast.ImportFrom) and inner.module == module:
                    return APPLIED, []
    imports = [n for n in ast.walk(src.tree) if isinstance(n, ast.ImportFrom) and n.module == module
               and [a.name for a in n.names] == [name]]
    if len(imports) != 1:
        src.fail(None, "one 'from %s import %s'" % (module, name))
    node = imports[0]
    annotations = set()
    for fn in ast.walk(src.tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs + [fn.args.vararg, fn.args.kwarg]
            for ann in [a.annotation for a in args if a is not None and a.annotation is not None] + [fn.returns]:
                if ann is not None:
                    annotations.update(id(n) for n in ast.walk(ann))
        elif isinstance(fn, ast.AnnAssign):
            annotations.update(id(n) for n in ast.walk(fn.annotation))
    for use in ast.walk(src.tree):
        if isinstance(use, ast.Name) and use.id == name and id(use) not in annotations:
            src.fail(use, "%s used only in annotations, but it is used here" % name)
    indent = src.line_indent(node)
    if indent is None:
        src.fail(node, "the import on a line of its own")
    # every line of the import goes one level in (the continuation lines of a parenthesised import too)
    text = "\n".join(line if n == 0 or not line.strip() else "    " + line
                     for n, line in enumerate(src.segment(node).split("\n")))
    wrapped = ("try:\n{i}    {imp}\n{i}except ImportError:  # gone from newer releases; only annotations use it\n"
               "{i}    {name} = {quoted}").format(i=indent, imp=text, name=name, quoted=repr(name))
    return ORIGINAL, [(*src.span(node), wrapped)]


def _has_sequence(scope, stmts):
    """Some statement list in ``scope`` holds ``stmts`` consecutively (compared by AST)."""
    for node in ast.walk(scope):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i in range(len(body) - len(stmts) + 1):
                if all(isinstance(a, ast.AST) and _same(a, b) for a, b in zip(body[i:i + len(stmts)], stmts)):
                    return True
    return False


def op_replace_statement(src, op):
    old = _statement(op["old"])
    new = ast.parse(textwrap.dedent(op["new"]).strip("\n")).body
    funcs = _funcs(src.tree, op["function"])
    if len(funcs) != 1:
        src.fail(None, "one function %s, found %d" % (op["function"], len(funcs)))
    # applied first: the new code may keep the old statement inside it (a guard put before it)
    if _has_sequence(funcs[0], new):
        return APPLIED, []
    matches_old = [s for s in _walk_statements(funcs[0]) if _same(s, old)]
    if len(matches_old) == 1:
        stmt = matches_old[0]
        indent = src.line_indent(stmt)
        if indent is None:
            src.fail(stmt, "the statement on a line of its own")
        body = textwrap.dedent(op["new"]).strip("\n").splitlines()
        text = ("\n".join((indent + line) if line.strip() else line for line in body))[len(indent):]
        return ORIGINAL, [(*src.span(stmt), text)]
    src.fail(funcs[0], "in %s one statement `%s`, found %d" % (op["function"], op["old"].strip(), len(matches_old)))


def _call_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def op_keyword_value(src, op):
    old, new = _expression(op["old"]), _expression(op["new"])
    edits, applied = [], 0
    for node in ast.walk(src.tree):
        if isinstance(node, ast.Call) and _call_name(node) == op["call"]:
            for kw in node.keywords:
                if kw.arg == op["keyword"]:
                    if _same(kw.value, old):
                        edits.append((*src.span(kw.value), op["new"].strip()))
                    elif _same(kw.value, new):
                        applied += 1
    if edits:
        return ORIGINAL, edits
    if applied:
        return APPLIED, []
    src.fail(None, "a call %s(..., %s=%s)" % (op["call"], op["keyword"], op["old"].strip()))


def _scope(src, op):
    if not op.get("function"):
        return src.tree
    funcs = _funcs(src.tree, op["function"])
    if len(funcs) != 1:
        src.fail(None, "one function %s, found %d" % (op["function"], len(funcs)))
    return funcs[0]


def op_replace_expression(src, op):
    """{file, function?, old, new, count?}: every expression equal (by AST) to ``old`` in the scope -> ``new``."""
    old, new = _expression(op["old"]), _expression(op["new"])
    scope = _scope(src, op)
    news = [n for n in ast.walk(scope) if isinstance(n, ast.expr) and _same(n, new)]
    inside_new = {id(m) for n in news for m in ast.walk(n)}  # the new value may keep the old one inside it
    olds = [n for n in ast.walk(scope) if isinstance(n, ast.expr) and _same(n, old) and id(n) not in inside_new]
    count = op.get("count")
    if olds and (count is None or len(olds) == count):
        return ORIGINAL, [(*src.span(n), op["new"].strip()) for n in olds]
    # applied: old gone, new there (at least count times: a short new value such as 1 may also occur elsewhere)
    if not olds and news and (count is None or len(news) >= count):
        return APPLIED, []
    src.fail(scope if scope is not src.tree else None, "%s `%s` in %s, found %d" % (
        "%d times" % count if count else "an expression", op["old"].strip(), op.get("function", "the module"),
        len(olds)))


def op_append_code(src, op):
    """{file, code}: top-level definitions added at the end of the module; applied when each is there as is."""
    body = ast.parse(textwrap.dedent(op["code"])).body
    named = {n.name: n for n in src.tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))}
    present = []
    for node in body:
        name = getattr(node, "name", None)
        if name in named:
            if not _same(named[name], node):
                src.fail(named[name], "%s as this package writes it (it differs; edited by hand?)" % name)
            present.append(name)
    if present and len(present) == len(body):
        return APPLIED, []
    if present:
        src.fail(None, "all or none of %s" % [getattr(n, "name", "?") for n in body])
    end = len(src.data)
    text = ("" if src.text.endswith("\n") else "\n") + "\n\n" + textwrap.dedent(op["code"]).strip("\n") + "\n"
    return ORIGINAL, [(end, end, text)]


OPERATIONS = {
    "import_module": op_import_module,
    "rename": op_rename,
    "annotation_import": op_annotation_import,
    "replace_statement": op_replace_statement,
    "keyword_value": op_keyword_value,
    "replace_expression": op_replace_expression,
    "append_code": op_append_code,
}


def apply_edits(data, edits):
    edits = sorted(edits, key=lambda e: e[0])
    for (s1, e1, _), (s2, _, _) in zip(edits, edits[1:]):
        if s2 < e1:
            raise PatchError("two operations edit overlapping spans (%d-%d, %d-)" % (s1, e1, s2))
    out, pos = [], 0
    for start, end, text in edits:
        out += [data[pos:start], text.encode("utf-8")]
        pos = end
    out.append(data[pos:])
    return b"".join(out)


SKIPPED = "optional, not enabled"


def patch_text(path, text, ops, lookup=None, enable_optional=False):
    """Apply ``ops`` (all for this file) to ``text``. Returns (new_text, [(op index, state)]).

    Every operation is tried, each on the text the ones before it leave; all that fail are reported together in
    one PatchError (``problems``). ``lookup(dotted) -> text or None`` gives the text of a module of the tree
    being patched (import_module checks that its target binds the names it moves). An operation marked
    ``optional`` is only applied with ``enable_optional`` (state SKIPPED otherwise)."""
    states, current, problems = [], text, []
    for index, op in enumerate(ops):
        if op.get("optional") and not enable_optional:
            states.append((index, SKIPPED))
            continue
        try:
            src = Source(path, current)
            src.lookup = lookup
            if op["op"] not in OPERATIONS:
                raise PatchError("%s: unknown operation %r (known: %s)" % (
                    path, op["op"], ", ".join(sorted(OPERATIONS))))
            for field in ("old", "new"):
                if field in op:
                    try:
                        ast.parse(textwrap.dedent(op[field]).strip())
                    except SyntaxError as err:
                        raise PatchError("operation %s on %s: %r does not parse (%s)" % (
                            op["op"], path, field, err.msg)) from err
            state, edits = OPERATIONS[op["op"]](src, op)
        except Unparsable as err:
            problems.append(_labelled(op, str(err)))
            break  # every further operation would say the same
        except PatchError as err:
            problems.append(_labelled(op, str(err)))
            continue
        states.append((index, state))
        if edits:
            current = apply_edits(src.data, edits).decode("utf-8")
    if problems:
        raise PatchError.of(problems, labelled=True)
    try:
        compile(current, path, "exec")
    except SyntaxError as err:
        raise PatchError("%s: the patched file does not compile (%s); left as it was" % (path, err)) from err
    return current, states


def _tree_hints(ops, problems, root):
    """For each profile with a problem that says its code is not there (a file not found, or in neither shape), one
    line naming the tree the profile is written for (its ``tree``), so a profile that does not fit the tree says
    which tree it expected."""
    hints = []
    for op in ops:
        name, tree = op.get("profile"), op.get("tree")
        if not (name and tree) or any(h.startswith(name + " is written for") for h in hints):
            continue
        if any(p.startswith(name + ": ") and ("file not found" in p or "expected" in p) for p in problems):
            hints.append("%s is written for %s; the tree at %s does not have the code it changes: check the deps "
                         "stage's verl source ({verl_source}, {verl_version}), or set {operations} to the profiles "
                         "for this tree" % (name, tree, root))
    return hints


def _labelled(op, message):
    return "%s: %s" % (op["profile"], message) if op.get("profile") else message


def unified_diff(path, old, new):
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        "a/" + path, "b/" + path))


def resolve_content(ops, files_dir):
    """create_file operations may name their content by ``content_from`` (a path under files_dir)."""
    out = []
    for op in ops:
        if "content_from" in op:
            op = dict(op)
            with open(os.path.join(files_dir, op.pop("content_from")), encoding="utf-8") as handle:
                op["content"] = handle.read()
        out.append(op)
    return out


def read_source(path, rel):
    """A file's text exactly as stored (line endings kept); PatchError when it is not UTF-8, as Python would
    refuse it."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PatchError("%s:%d: byte 0x%02x is not UTF-8, so Python cannot load this file; not patched" % (
            rel, data[:err.start].count(b"\n") + 1, data[err.start])) from err


def write_keeping_mode(path, text):
    """Replace ``path`` atomically with ``text``; the file keeps its permission bits and owner."""
    tmp = path + ".grpo-tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
    if os.path.exists(path):
        info = os.stat(path)
        os.chmod(tmp, stat.S_IMODE(info.st_mode))
        try:
            os.chown(tmp, info.st_uid, info.st_gid)
        except OSError:
            pass  # not ours to give away; the bits are kept
    os.replace(tmp, path)


def apply_profile(root, ops, check=False, enable_optional=False):
    """Apply a profile's operations under ``root``. Returns [{"file", "changed", "states", "diff"}].

    Nothing is written when any file is in neither shape (all files are checked before any is written); the
    PatchError then lists every problem of every file. Operations marked ``optional`` run only with
    ``enable_optional``."""
    by_file = {}
    for op in ops:
        by_file.setdefault(op["file"], []).append(op)
    pending = {o["file"]: o["content"] for o in ops if o["op"] == "create_file"}

    def lookup(dotted):
        rel = dotted.replace(".", "/")
        for candidate in (rel + ".py", rel + "/__init__.py"):
            if candidate in pending:
                return pending[candidate]
            path = os.path.join(root, candidate)
            if os.path.isfile(path):
                try:
                    return read_source(path, candidate)
                except PatchError:
                    return None
        return None

    results, writes, problems = [], [], []
    for rel, file_ops in by_file.items():
        path = os.path.join(root, rel)
        try:
            creates = [o for o in file_ops if o["op"] == "create_file"]
            if creates:
                want = creates[0]["content"]
                have = read_source(path, rel) if os.path.exists(path) else None
                if have is not None and have != want:
                    raise PatchError("%s exists with other content than this package's; move it aside to recreate it"
                                     % rel)
                results.append({"file": rel, "changed": have is None,
                                "states": [ORIGINAL if have is None else APPLIED],
                                "diff": unified_diff(rel, "", want) if have is None else ""})
                if have is None:
                    writes.append((path, want))
                continue
            if not os.path.exists(path):
                raise PatchError("%s: file not found under %s" % (rel, root))
            old = read_source(path, rel)
            new, states = patch_text(rel, old, file_ops, lookup=lookup, enable_optional=enable_optional)
        except PatchError as err:
            # messages from patch_text name their operation's profile already; the file's own problems (not
            # UTF-8, not found, other content, does not compile) are named for the file's first profile
            problems.extend(err.problems if err.labelled else [_labelled(file_ops[0], p) for p in err.problems])
            continue
        pending[rel] = new
        results.append({"file": rel, "changed": new != old, "states": [s for _, s in states],
                        "diff": unified_diff(rel, old, new)})
        if new != old:
            writes.append((path, new))
    if problems:
        hints = _tree_hints(ops, problems, root)
        raise PatchError("\n".join(problems + hints), problems, hints=hints)
    if not check:
        for path, text in writes:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_keeping_mode(path, text)
    return results


def states_by_profile(ops, results):
    """apply_profile's results regrouped by the ``profile`` label of each operation (several profiles applied in
    one call, in order, so that each sees the text the ones before it leave, in check mode too):
    [{"profile", "changed", "files": [{"file", "states"}]}] in the order the labels first appear; an operation
    with no label counts under "". A file's states follow its operations in order, as apply_profile keeps them."""
    labels = {}
    for op in ops:
        labels.setdefault(op["file"], []).append(op.get("profile", ""))
    grouped = {}
    for label in (op.get("profile", "") for op in ops):
        grouped.setdefault(label, {"profile": label, "changed": False, "files": {}})
    for result in results:
        # create_file reports one state for its file
        for label, state in zip(labels.get(result["file"], []), result["states"]):
            entry = grouped[label]
            entry["files"].setdefault(result["file"], []).append(state)
            entry["changed"] = entry["changed"] or state == ORIGINAL
    return [dict(entry, files=[{"file": f, "states": s} for f, s in entry["files"].items()])
            for entry in grouped.values()]


def main(argv=None):
    """``python -m ascend_grpo.patch.ast_patch --root DIR --profile OPS.json [--check] [--diff] [--enable-optional]``;
    exit 0 when nothing was (or, with --check, would be) changed, 1 when files changed, 2 when nothing was
    changed because of problems (a file in neither shape, not Python, not readable): each is printed."""
    import argparse
    import json
    import sys

    from ..common.errors import name_fields

    parser = argparse.ArgumentParser(prog="python -m ascend_grpo.patch.ast_patch", description=main.__doc__)
    parser.add_argument("--root", required=True, help="the verl source tree")
    parser.add_argument("--profile", required=True, help="JSON: a list of operations, or {'operations': [...]}")
    parser.add_argument("--check", action="store_true", help="change nothing, say what would change")
    parser.add_argument("--diff", action="store_true", help="print the unified diff")
    parser.add_argument("--files", default=".", help="where content_from paths are (this package's files/)")
    parser.add_argument("--enable-optional", action="store_true", help="apply the operations marked optional too")
    args = parser.parse_args(argv)
    with open(args.profile, encoding="utf-8") as handle:
        data = json.load(handle)
    ops = resolve_content(data["operations"] if isinstance(data, dict) else data, args.files)
    try:
        results = apply_profile(args.root, ops, check=args.check, enable_optional=args.enable_optional)
    except PatchError as err:
        for problem in err.problems + err.hints:
            # the operations are this command's --profile; the tree's source and version keep their fields' names
            print("patch: %s" % name_fields(problem, {"operations": "--profile"}, HINT_FIELDS), file=sys.stderr)
        print("patch: %d problem(s); no file was changed" % len(err.problems), file=sys.stderr)
        return 2
    except OSError as err:
        print("patch: %s; no file was changed" % err, file=sys.stderr)
        return 2
    for result in results:
        verb = ("would change" if args.check else "changed") if result["changed"] else "unchanged"
        print("%-13s %s (%s)" % (verb, result["file"], ", ".join(result["states"])))
        if args.diff and result["diff"]:
            print(result["diff"], end="")
    return 1 if any(r["changed"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
