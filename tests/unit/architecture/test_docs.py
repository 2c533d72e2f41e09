"""The README and docs/: generated tables current, the README short, every relative link and anchor resolving."""

import glob
import importlib.util
import os
import re
import subprocess
import sys
from urllib.parse import urlparse

import pytest

from grpo_testkit import ROOT  # noqa: E402
README = os.path.join(ROOT, "README.md")
SCRIPT = os.path.join(ROOT, "tools", "docs_tables.py")
# The issue asks for a README "under about 300 lines": 320 leaves room for a sentence without inviting a reference
# section back in.
README_MAX_LINES = 320
LINE_MAX = 120
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _docs():
    return [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _prose(text):
    """The text without fenced code blocks and inline code, where '#' and '[x](y)' are not markdown."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def github_anchor(heading):
    """GitHub's id for a heading: markup dropped, lowercase, punctuation removed, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and '_', as GitHub does
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    result = set()
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", _read(path), flags=re.S | re.M)
    for match in re.finditer(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", text, flags=re.M):
        base = github_anchor(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else "%s-%d" % (base, count))
    return result


def links(path):
    return [match.group(1) for match in LINK.finditer(_prose(_read(path)))]


def test_the_anchor_rules_are_githubs():
    assert github_anchor("Stage `train` (role `grpo_train`)") == "stage-train-role-grpo_train"
    assert github_anchor("Security: who can reach Ray") == "security-who-can-reach-ray"
    assert github_anchor("What `make demo` runs") == "what-make-demo-runs"
    assert github_anchor("A real 910B host") == "a-real-910b-host"


def test_the_generated_tables_are_current():
    done = subprocess.run([sys.executable, SCRIPT, "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_stale_or_missing_table_is_named(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("docs_tables", SCRIPT)
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    train = tmp_path / "train.md"
    text = _read(os.path.join(ROOT, "docs", "train.md"))
    begin = text.index("<!-- settings of grpo_train: generated")
    train.write_text(text[:begin] + text[begin:].replace("| `grpo_train_relaunch` |", "| `grpo_train_relaunched` |", 1))
    monkeypatch.setattr(tables, "doc_files", lambda: [str(train)])
    assert tables.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "stale generated table(s): settings of grpo_train" in out
    assert "no file holds the generated table(s): settings of assets" in out
    assert train.read_text() != text  # --check wrote nothing: the stale row is still there
    assert "grpo_train_relaunched" in train.read_text()


def test_every_role_has_a_settings_table_whose_rows_are_its_options():
    import yaml

    text = "".join(_read(path) for path in _docs())
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        role = path.split(os.sep)[-3]
        options = yaml.safe_load(_read(path))["argument_specs"]["main"].get("options") or {}
        match = re.search(r"<!-- settings of %s: generated.*?-->\n(.*?)<!-- end of settings of %s -->" % (role, role),
                          text, flags=re.S)
        assert match, role
        rows = re.findall(r"^\| `([a-z0-9_]+)` \|", match.group(1), flags=re.M)
        assert rows == list(options), role


def test_the_readme_is_a_short_journey_whose_first_commands_are_demo_and_test():
    lines = _read(README).splitlines()
    assert len(lines) <= README_MAX_LINES, "README.md has %d lines; move reference text to docs/" % len(lines)
    long = ["README.md:%d (%d characters)" % (number, len(line)) for number, line in enumerate(lines, 1)
            if len(line) > LINE_MAX]
    assert not long, long
    # .ci/run runs the README's test command: the first two commands stay `make demo` and `make test`
    commands = [line.split("#")[0].strip() for line in re.findall(r"^```sh\n(.*?)^```", _read(README),
                                                                   flags=re.S | re.M)[0].splitlines()]
    assert commands[:2] == ["make demo", "make test"]


@pytest.mark.parametrize("path", _docs(), ids=lambda path: os.path.relpath(path, ROOT))
def test_every_link_resolves(path):
    problems = []
    for target in links(path):
        if target.startswith(("http://", "https://")):
            parsed = urlparse(target)
            if not parsed.netloc or "." not in parsed.netloc or " " in target:
                problems.append("%s: not a URL" % target)
            continue
        if ":" in target.split("#")[0]:
            problems.append("%s: only http(s) and relative links" % target)
            continue
        file_part, _, anchor = target.partition("#")
        where = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(where):
            problems.append("%s: no file %s" % (target, os.path.relpath(where, ROOT)))
        elif anchor and (not where.endswith(".md") or anchor not in anchors(where)):
            problems.append("%s: no heading #%s in %s" % (target, anchor, os.path.relpath(where, ROOT)))
    assert not problems, problems


def test_the_readme_links_every_page_of_docs():
    linked = {os.path.normpath(os.path.join(ROOT, target.split("#")[0])) for target in links(README)}
    pages = set(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    assert not pages - linked, sorted(os.path.relpath(page, ROOT) for page in pages - linked)


def test_the_architecture_page_lists_every_module_and_filter_file():
    """The layout's module and filter tables are generated; each file on disk has its row (a module added without
    DOCUMENTATION, or a filter file without filters(), fails the generator instead)."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    modules = text.split("<!-- modules table:", 1)[1].split("<!-- end of modules table -->", 1)[0]
    filters = text.split("<!-- filters table:", 1)[1].split("<!-- end of filters table -->", 1)[0]
    for path in glob.glob(os.path.join(ROOT, "python_plugins", "modules", "*.py")):
        assert "| `%s` |" % os.path.basename(path)[:-3] in modules, path
    for path in glob.glob(os.path.join(ROOT, "python_plugins", "filter_plugins", "*.py")):
        assert "| `%s` |" % os.path.basename(path) in filters, path
    assert modules.count("\n| `") == len(glob.glob(os.path.join(ROOT, "python_plugins", "modules", "*.py")))
