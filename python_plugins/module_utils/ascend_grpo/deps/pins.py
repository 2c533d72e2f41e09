"""Pinned Python stacks as data: profiles, the plan (pip's dry-run report), install steps and the drift report.

Plain Python, standard library only: it runs inside the training environment (``deps_pinning`` module) and
under pytest. A profile is a dict (a vars file)::

    name: vllm0.13.0
    constraints: true                 # render the pins into a constraints file used by every phase
    pins: {torch: "2.8.0", ...}       # core packages, verified after install
    phases:                           # in order
      - name: core
        requirements: ["torch==2.8.0"]          # requirement strings
        requirements_files: ["{files}/x.txt"]   # {files}: this package's files, {verl}: the verl source
        index_url: {aarch64: URL, x86_64: URL}  # or one URL for every architecture
        extra_index_urls: {aarch64: [URL]}
        no_deps: false
        pip_args: []
        env: {}
      - name: drop-uvloop
        remove: [uvloop]
      - name: verl
        editable: "{verl}"                      # installed last, always --no-deps

Requirement files' own pins of a core package are replaced by the profile's pin (the guide gets the same by
installing the pins after them); the plan lists every such override so it is visible.
"""

import json
import re

from ..common import secrets, workspace

try:  # the packaging library; before any install a bare environment still has pip's own copy
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version
except ImportError:  # pragma: no cover - exercised only where packaging is not installed
    from pip._vendor.packaging.requirements import InvalidRequirement, Requirement
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import InvalidVersion, Version
# pip explains a conflict only in words (its --report has no conflict section, and pip writes no report when the
# resolution fails): these read that text. Its requirement phrases are not PEP 508 ("urllib3<1.27 and >=1.25.4"),
# so only the leading project name is taken from them.
_LEADING_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_CONFLICT = re.compile(r"^\s+(?:The user requested(?: \(constraint\))? (?P<user>.+)|"
                       r"(?P<who>\S+) (?P<ver>\S+) depends on (?P<dep>.+))$")


class ProfileError(ValueError):
    """The profile is not well-formed; the message names the field."""


def canonical(name):
    """PEP 503 normalized name."""
    return canonicalize_name(name)


def leading_name(text):
    """The project name at the start of a requirement phrase of pip's messages ("triton==3.4.0 (from torch)",
    "urllib3<1.27 and >=1.25.4"), which are not PEP 508."""
    match = _LEADING_NAME.match(text)
    if not match:
        raise ProfileError("cannot read a project name in %r" % text)
    return match.group(1)


def split_requirement(req):
    """'ray[default]==2.41.0 ; python_version<"3.12"' -> ("ray", "[default]", "==2.41.0", 'python_version < "3.12"'),
    read by the packaging library (PEP 508); a direct reference keeps its URL as the spec ("@ URL")."""
    try:
        parsed = Requirement(req.strip())
    except InvalidRequirement as err:
        raise ProfileError("cannot read requirement %r: %s" % (req, err)) from err
    extras = "[%s]" % ",".join(sorted(parsed.extras)) if parsed.extras else ""
    spec = "@ " + parsed.url if parsed.url else str(parsed.specifier)
    return parsed.name, extras, spec, str(parsed.marker) if parsed.marker else ""


def read_requirements(text):
    """Requirement lines of a requirements file (comments, blank lines and pip options dropped)."""
    reqs = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or line.startswith("-"):
            continue
        reqs.append(line)
    return reqs


def public_version(version):
    return version.split("+", 1)[0]


def version_matches(pin, installed):
    """PEP 440 '==' for exact pins (packaging's Version): '2.8.0' matches '2.8.0', '2.8' and '2.8.0+cpu';
    '2.8.0+cpu' only '2.8.0+cpu'. A version packaging cannot read matches only itself."""
    if installed is None:
        return False
    try:
        want, have = Version(pin), Version(installed)
    except InvalidVersion:
        return pin == installed
    return want == have if want.local else want == Version(have.public)


def validate_profile(profile):
    """Problems with a profile dict, each naming the field ([] when it is well-formed)."""
    problems = []
    if not isinstance(profile, dict):
        return ["the profile is not a mapping"]
    for key in ("name", "pins", "phases"):
        if key not in profile:
            problems.append("profile field '%s' is missing" % key)
    pins = profile.get("pins") or {}
    if not isinstance(pins, dict):
        problems.append("profile field 'pins' must map package names to versions")
    else:
        for name, version in pins.items():
            if not re.match(r"^[0-9][0-9A-Za-z.+!-]*$", str(version)):
                problems.append("pin %s: %r is not an exact version" % (name, version))
    phases = profile.get("phases") or []
    if not isinstance(phases, list) or not phases:
        problems.append("profile field 'phases' must be a non-empty list")
        return problems
    names = set()
    for index, phase in enumerate(phases):
        label = "phase %d (%s)" % (index + 1, phase.get("name", "?") if isinstance(phase, dict) else "?")
        if not isinstance(phase, dict) or not phase.get("name"):
            problems.append("%s needs a name" % label)
            continue
        if phase["name"] in names:
            problems.append("%s: the name is used twice" % label)
        names.add(phase["name"])
        kinds = [k for k in ("requirements", "requirements_files", "remove", "editable") if phase.get(k)]
        if not kinds:
            problems.append("%s has nothing to do: give requirements, requirements_files, remove or editable" % label)
        if "remove" in kinds and len(kinds) > 1:
            problems.append("%s: a removal phase removes only" % label)
        unknown = set(phase) - {"name", "requirements", "requirements_files", "remove", "editable", "index_url",
                                "extra_index_urls", "find_links", "no_deps", "pip_args", "env", "plan",
                                "description", "no_binary"}
        if unknown:
            problems.append("%s: unknown field(s) %s" % (label, ", ".join(sorted(unknown))))
    return problems


def ordered_phases(phases):
    """Phases in run order: removals after every phase that installs with dependencies (so nothing brings a removed
    package back), editable (verl) installs last."""
    installs = [p for p in phases if not p.get("remove") and not p.get("editable")]
    removals = [p for p in phases if p.get("remove")]
    editables = [p for p in phases if p.get("editable")]
    return installs + removals + editables


def for_arch(value, arch):
    """An option given per architecture ({aarch64: .., x86_64: ..}) or once for all."""
    if isinstance(value, dict):
        return value.get(arch)
    return value


def expand(text, paths):
    for key, value in paths.items():
        text = text.replace("{%s}" % key, value)
    return text


def phase_requirements(phase, paths, read_file, pins):
    """The phase's requirement strings with core packages replaced by their pins.

    Returns (requirements, overrides); overrides: [{"phase", "source", "asked", "pinned"}]."""
    sources = [("profile", req) for req in phase.get("requirements") or []]
    for path in phase.get("requirements_files") or []:
        real = expand(path, paths)
        sources += [(real, req) for req in read_requirements(read_file(real))]
    canon_pins = {canonical(k): (k, str(v)) for k, v in pins.items()}
    reqs, overrides = [], []
    for source, req in sources:
        name, extras, spec, marker = split_requirement(req)
        pin = canon_pins.get(canonical(name))
        if pin and spec != "==" + pin[1]:
            new = "%s%s==%s" % (name, extras, pin[1]) + ("; " + marker if marker else "")
            overrides.append({"phase": phase["name"], "source": source, "asked": req, "pinned": new})
            req = new
        reqs.append(req)
    return reqs, overrides


def constraints_text(pins):
    return "".join("%s==%s\n" % (name, version) for name, version in sorted(pins.items()))


def index_args(phase, arch, site):
    """pip index options for a phase: the site's offline wheelhouse, or its mirror (``site["index_url"]``), wins
    over the profile's index URLs: with a mirror, neither the phase's index_url nor its extra_index_urls are asked
    (the site's extra_index_urls, find_links and trusted_hosts stay)."""
    args = []
    if site.get("wheelhouse"):
        return ["--no-index", "--find-links", site["wheelhouse"]]
    if site.get("wheel_cache"):
        if site.get("cache_only") and not phase.get("no_binary") and not phase.get("editable"):
            # the plan downloaded all this phase needs into the cache: pip takes it from there alone (with the
            # index it would take the index's copy of the same release and download it again)
            args = ["--no-index", "--find-links", site["wheel_cache"]]
            for link in list(site.get("find_links") or []) + list(for_arch(phase.get("find_links"), arch) or []):
                args += ["--find-links", link]
            return args
        args += ["--find-links", site["wheel_cache"]]
    # A site's mirror (index_url) replaces the profile's own indexes, its extra ones too: a site that reaches only
    # its mirror would otherwise wait out time-outs on them at every lookup; a site that mirrors one of them as well
    # lists it among its own extra_index_urls. ignore_profile_indexes drops them without a mirror (the tests' index).
    own = not (site.get("ignore_profile_indexes") or site.get("index_url"))
    index = site.get("index_url") or (for_arch(phase.get("index_url"), arch) if own else None)
    if index:
        args += ["--index-url", index]
    extras = list(site.get("extra_index_urls") or []) + (
        list(for_arch(phase.get("extra_index_urls"), arch) or []) if own else [])
    for url in extras:
        args += ["--extra-index-url", url]
    for link in list(site.get("find_links") or []) + list(for_arch(phase.get("find_links"), arch) or []):
        args += ["--find-links", link]
    for host in site.get("trusted_hosts") or []:
        args += ["--trusted-host", host]
    return args


def plan_request(profile, paths, read_file, arch, site):
    """What to resolve for the plan: every install phase's requirements at once (no_deps and editable phases are
    fixed: their packages are listed, not resolved). Returns dict(requirements, fixed, index_args, overrides)."""
    reqs, fixed, overrides, idx = [], [], [], []
    for phase in ordered_phases(profile["phases"]):
        if phase.get("remove") or phase.get("editable"):
            continue
        phase_reqs, phase_over = phase_requirements(phase, paths, read_file, profile["pins"])
        overrides += phase_over
        if phase.get("no_deps"):
            fixed += phase_reqs
        else:
            reqs += phase_reqs
        idx += index_args(phase, arch, site)
    return {"requirements": reqs, "fixed": fixed, "overrides": overrides, "index_args": _dedupe_options(idx)}


def _dedupe_options(args):
    """['--extra-index-url', 'A', '--extra-index-url', 'A'] -> one pair; --index-url keeps the first."""
    out, seen, i = [], set(), 0
    while i < len(args):
        opt = args[i]
        if opt == "--no-index":
            key, pair = (opt,), [opt]
            i += 1
        else:
            key, pair = (opt, args[i + 1]), [opt, args[i + 1]]
            i += 2
        if key in seen or (opt == "--index-url" and any(k[0] == "--index-url" for k in seen)):
            continue
        seen.add(key)
        out += pair
    return out


def parse_report(report):
    """pip's --report JSON -> {canonical name: {"name", "version", "requires": [str], "requested": bool}}."""
    if isinstance(report, str):
        report = json.loads(report)
    out = {}
    for item in report.get("install", []):
        meta = item["metadata"]
        out[canonical(meta["name"])] = {"name": meta["name"], "version": meta["version"],
                                        "requires": meta.get("requires_dist") or [],
                                        "requested": item.get("requested", False)}
    return out


def parse_conflict(text):
    """pip's ResolutionImpossible explanation -> [{"package", "wants": [{"by", "spec"}], "unavailable"}].

    by: "you (profile or constraints)" or "pkg ver"; unavailable: pip found no distribution of it at all."""
    wants = {}
    cause = re.search(r"The conflict is caused by:\n(.*?)(?:\n\n|\Z)", text, re.S)
    if not cause:
        return []
    for line in cause.group(1).splitlines():
        match = _CONFLICT.match(line)
        if not match:
            continue
        if match.group("user"):
            dep, by = match.group("user"), "you (profile or constraints)"
        else:
            dep, by = match.group("dep"), "%s %s" % (match.group("who"), match.group("ver"))
        name = leading_name(dep)
        wants.setdefault(canonical(name), {"package": name, "wants": [], "unavailable": False})["wants"].append(
            {"by": by, "spec": dep.strip()})
    missing = re.search(r"no matching distributions available for your environment:\n((?:[ \t]+\S+\n?)+)", text)
    for name in (missing.group(1).split() if missing else []):
        if canonical(name) in wants:
            wants[canonical(name)]["unavailable"] = True
    return list(wants.values())


def who_requires(resolved, package):
    """Requirements in the resolved set that name ``package`` ("pkg ver: spec")."""
    target = canonical(package)
    out = []
    for info in resolved.values():
        for req in info["requires"]:
            body, _, marker = req.partition(";")
            if "extra ==" in marker:
                continue
            if canonical(split_requirement(body)[0]) == target:
                out.append("%s %s: %s" % (info["name"], info["version"], body.strip()))
    return sorted(out)


def analyze_plan(pins, resolved=None, conflicts=None, fixed=(), accept=()):
    """Per core package: pinned vs what the plan would install, who pulls it elsewhere, and the verdict.

    Returns {"rows": [...], "blocking": [names], "accepted": [names]}. A row's status: ok, drift (resolves to
    another version), conflict (cannot be resolved together), missing (not in the plan at all)."""
    resolved = resolved or {}
    fixed_versions = {}
    for req in fixed:
        name, _, spec, _ = split_requirement(req)
        fixed_versions[canonical(name)] = spec[2:] if spec.startswith("==") else spec
    conflict_by = {canonical(c["package"]): c for c in conflicts or []}
    accept = {canonical(a) for a in accept}
    rows, blocking, accepted = [], [], []
    for name, pin in sorted(pins.items()):
        key = canonical(name)
        pin = str(pin)
        row = {"package": name, "pinned": pin, "planned": None, "status": "ok", "pulled_by": []}
        if key in conflict_by:
            row["status"] = "conflict"
            row["pulled_by"] = ["%s wants %s" % (w["by"], w["spec"]) for w in conflict_by[key]["wants"]]
        elif key in resolved:
            row["planned"] = resolved[key]["version"]
            if not version_matches(pin, row["planned"]):
                row["status"] = "drift"
                row["pulled_by"] = who_requires(resolved, name)
        elif key in fixed_versions:
            row["planned"] = fixed_versions[key]
            if not version_matches(pin, row["planned"]):
                row["status"] = "drift"
        elif not conflict_by:
            row["status"] = "missing"
        else:
            row["status"] = "unresolved"
        if row["status"] in ("drift", "conflict", "missing"):
            (accepted if key in accept else blocking).append(name)
            row["accepted"] = key in accept
        rows.append(row)
    return {"rows": rows, "blocking": blocking, "accepted": accepted}


def check_installed(pins, installed, accept=()):
    """Drift report: every core package, expected vs installed. installed: {canonical name: version or None}."""
    accept = {canonical(a) for a in accept}
    rows, drift = [], []
    for name, pin in sorted(pins.items()):
        have = installed.get(canonical(name))
        ok = version_matches(str(pin), have)
        status = "ok" if ok else ("missing" if have is None else "drift")
        row = {"package": name, "expected": str(pin), "installed": have, "status": status}
        if not ok:
            row["accepted"] = canonical(name) in accept
            if not row["accepted"]:
                drift.append(name)
        rows.append(row)
    return {"rows": rows, "drift": drift, "ok": not drift}


def table(rows, columns):
    """A plain-text table of dict rows."""
    cells = [["-" if r.get(c) in (None, []) else ("; ".join(r[c]) if isinstance(r.get(c), list) else str(r[c]))
              for c in columns] for r in rows]
    return "\n".join(workspace.text_table([str(c) for c in columns], cells))


def install_steps(profile, paths, read_file, arch, site, python, constraints_path=None):
    """The pip commands the install runs, in order: [{"phase", "argv", "env"}], and "retry_argv" (the same with the
    index) for a phase taken from the download cache alone (a source package may need a build tool it lacks)."""
    steps = _install_steps(profile, paths, read_file, arch, site, python, constraints_path)
    if site.get("cache_only"):
        with_index = _install_steps(profile, paths, read_file, arch, dict(site, cache_only=False), python,
                                    constraints_path)
        for step, fallback in zip(steps, with_index):
            if step["argv"] != fallback["argv"]:
                step["retry_argv"] = fallback["argv"]
    return steps


def _install_steps(profile, paths, read_file, arch, site, python, constraints_path):
    steps = []
    for phase in ordered_phases(profile["phases"]):
        env = {k: str(v) for k, v in (phase.get("env") or {}).items()}
        if phase.get("remove"):
            steps.append({"phase": phase["name"], "env": env,
                          "argv": [python, "-m", "pip", "uninstall", "-y"] + list(phase["remove"])})
            continue
        # --no-compile: pip would byte-compile all of each package (the CPU stack: 25,219 modules, 340 MB of source,
        # most of its install's time on two cores); Python compiles what it imports on the first import and keeps it
        argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-compile"]
        argv += index_args(phase, arch, site)
        if constraints_path and profile.get("constraints"):
            argv += ["-c", constraints_path]
        if phase.get("no_deps") or phase.get("editable"):
            argv.append("--no-deps")
        for package in phase.get("no_binary") or []:
            argv += ["--no-binary", package]
        argv += list(phase.get("pip_args") or [])
        if phase.get("editable"):
            argv += ["-e", expand(phase["editable"], paths)]
        else:
            argv += phase_requirements(phase, paths, read_file, profile["pins"])[0]
        steps.append({"phase": phase["name"], "argv": argv, "env": env})
    return steps


def plan_text(plan):
    """The plan as lines for a person: the table, then each requirement line a pin replaced, then what a
    cross-platform plan could not see."""
    lines = table(plan["rows"], ["package", "pinned", "planned", "status", "pulled_by"]).splitlines()
    lines += ["replaced %s by %s (%s)" % (o["asked"], o["pinned"], o["source"]) for o in plan.get("overrides", [])]
    lines += ["not planned here (no wheel for the target): %s" % u for u in plan.get("unplanned", [])]
    return lines


_INDEX_OPTIONS = {"--index-url": "PIP_INDEX_URL", "--extra-index-url": "PIP_EXTRA_INDEX_URL", "-i": "PIP_INDEX_URL"}


def index_env(argv, env=None):
    """(argv without its index URLs, env with them as PIP_INDEX_URL / PIP_EXTRA_INDEX_URL): an index URL may hold
    a password, and a command line is visible in ``ps`` to every user of the host; pip reads the same settings from
    its environment (several extra indexes separated by spaces). A ``--find-links`` location holding a credential
    (a password, a signed URL) moves to PIP_FIND_LINKS likewise; pip adds a command line's ``--find-links`` to its
    environment's, so plain folders stay where they are."""
    out, env = [], dict(env or {})
    extra = [u for u in env.get("PIP_EXTRA_INDEX_URL", "").split() if u]
    links = [u for u in env.get("PIP_FIND_LINKS", "").split() if u]
    i = 0
    while i < len(argv):
        option = argv[i]
        name, eq, value = option.partition("=")
        if option in ("--find-links", "-f") and i + 1 < len(argv) and secrets.has_credentials(argv[i + 1]) or \
                eq and name == "--find-links" and secrets.has_credentials(value):
            value = value if eq and name == "--find-links" else argv[i + 1]
            i += 1 if eq and name == "--find-links" else 2
            if value not in links:
                links.append(value)
            continue
        if option in _INDEX_OPTIONS and i + 1 < len(argv):
            name, value, i = option, argv[i + 1], i + 2
        elif eq and name in ("--index-url", "--extra-index-url"):
            i += 1
        else:
            out.append(option)
            i += 1
            continue
        if _INDEX_OPTIONS[name] == "PIP_INDEX_URL":
            env.setdefault("PIP_INDEX_URL", value)
        elif value not in extra:
            extra.append(value)
    if extra:
        env["PIP_EXTRA_INDEX_URL"] = " ".join(extra)
    if links:
        env["PIP_FIND_LINKS"] = " ".join(links)
    return out, env


def mask_url(text):
    """``text`` with the credentials of every URL in it masked: the one masking function, ascend_grpo.common.secrets."""
    return secrets.mask_url(text)
