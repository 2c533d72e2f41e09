"""Run pip for a profile: read what is installed, plan (dry-run report), install the phases.

Standard library only (it runs in the training environment). ``run`` has ``module.run_command``'s shape (argv,
environ_update) -> (rc, stdout, stderr): a module passes its own; without one, :func:`common.runner.run_command`.

A message names an input as ``{field}``, an option of the modules that run pip (``pinned_venv``, ``verl_source``),
which name the setting their role maps it to: ``{index_url}``, ``{extra_index_urls}``, ``{wheelhouse}`` (the site's
index settings: deps_pinning_index_url... in the deps stage) and ``{workspace_host}`` (where the workspace is on the
host, npu_container_workspace_host, when a disk is full).
"""

import hashlib
import json
import os
import re
import shutil
import tempfile

from . import pins
from ..common import runner
from ..common.workspace import LOW_SPACE_MB, backup_path, nearest_existing

PROBE = r"""
import json, sys, platform
from importlib import metadata
editable = sys.argv[1]
versions = {}
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        versions.setdefault(name, dist.version)
where = None
try:
    direct = metadata.distribution(editable).read_text("direct_url.json")
    where = json.loads(direct)["url"] if direct else None
except Exception:
    pass
print(json.dumps({"versions": versions, "editable_url": where, "machine": platform.machine(),
                  "python": "%d.%d" % sys.version_info[:2]}))
"""


class StackError(RuntimeError):
    """pip could not do what the profile asks; the message says why in a user's terms."""


def probe(python, editable_name, run=runner.run_command):
    """{"versions": {canonical: version}, "editable_url", "machine", "python"} of ``python``'s environment."""
    rc, out, err = run([python, "-c", PROBE, editable_name])
    if rc != 0:
        raise StackError("cannot read the installed packages with %s: %s" % (python, err.strip()[-500:]))
    data = json.loads(out)
    data["versions"] = {pins.canonical(k): v for k, v in data["versions"].items()}
    return data


def read_pyvenv_cfg(venv):
    """``<venv>/pyvenv.cfg`` as a dict (``{}`` when there is none): ``home``, ``version`` (or ``version_info``),
    ``include-system-site-packages``."""
    values = {}
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
            for line in handle:
                key, sep, value = line.partition("=")
                if sep:
                    values[key.strip()] = value.strip()
    except OSError:
        return {}
    return values


# Written into a venv once its making finished (venv and its pip): one without it was cut short, or made elsewhere.
MADE_MARK = ".grpo-venv-made"
# Beside a venv while it is being made (<venv>.making): found with the venv on a later run, the making was cut short.
MAKING_SUFFIX = ".making"
# Exits 0 when the venv's own pip imports (not the base's, which --system-site-packages would show it).
OWN_PIP = "import os, sys, pip; sys.exit(0 if os.path.realpath(pip.__file__).startswith(os.path.realpath(sys.prefix)) else 1)"


def venv_problem(venv, base_version, site_packages, run=runner.run_command):
    """Why the virtual environment ``venv`` cannot serve as made from a Python ``base_version`` ("3.11") with
    (``site_packages``) or without the base's own packages; None when it can. A venv's ``bin/python`` is a link to
    the Python that made it: a new image whose Python moved or changed version leaves it dangling or wrong."""
    cfg = read_pyvenv_cfg(venv)
    python = os.path.join(venv, "bin", "python")
    if not cfg:
        return "it has no pyvenv.cfg (not a virtual environment)"
    if not os.path.exists(python):
        return "its Python %s is gone (it links to a Python this environment no longer has)" % python
    made = cfg.get("version") or cfg.get("version_info") or ""
    if ".".join(made.split(".")[:2]) != base_version:
        return "it was made by Python %s, the environment's Python is %s" % (made or "?", base_version)
    wanted = "true" if site_packages else "false"
    if cfg.get("include-system-site-packages", "false").lower() != wanted:
        return "it %s the base Python's own packages" % ("does not see" if site_packages else "sees")
    if not os.path.exists(os.path.join(venv, MADE_MARK)):
        # made by hand or by an earlier version: whole if it has its own pip (then marked); a making cut short (a
        # full disk, a kill) leaves it without one
        rc, _, _ = run([python, "-c", OWN_PIP])
        if rc != 0:
            return "it was not made whole (it has no pip of its own: cut short while it was made?)"
        try:
            with open(os.path.join(venv, MADE_MARK), "w", encoding="utf-8") as handle:
                handle.write("found whole (it has its own pip)\n")
        except OSError:
            pass
    return None


def ensure_venv(venv, maker, base_version, site_packages, check_mode=False, run=runner.run_command):
    """Make the virtual environment ``venv`` with the Python ``maker`` (of version ``base_version``) when it is
    missing, or when it cannot serve (:func:`venv_problem`): then the old one is first moved aside, never deleted
    (someone may have installed into it by hand), except one whose making by this function was cut short (its
    ``<venv>.making`` mark is still there): that is removed. Returns ``{"action": "kept"|"made"|"remade", "python",
    "reason", "moved_to"}``; in check mode nothing is done and the action says what would be."""
    python = os.path.join(venv, "bin", "python")
    making = venv.rstrip("/") + MAKING_SUFFIX
    exists = os.path.lexists(venv)
    ours_cut_short = exists and os.path.exists(making)
    if ours_cut_short:
        reason = "its making here was cut short (a full disk, a kill)"
    else:
        reason = venv_problem(venv, base_version, site_packages, run) if exists else "it does not exist"
    result = {"action": "kept", "python": python, "reason": None, "moved_to": None}
    if reason is None:
        return result
    result.update(action="remade" if exists else "made", reason=reason)
    if check_mode:
        return result
    if ours_cut_short:
        shutil.rmtree(venv)  # half of what this function began: nobody's work, and it holds the space needed
    elif exists:
        result["moved_to"] = backup_path(venv)
        os.rename(venv, result["moved_to"])
    os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
    with open(making, "w", encoding="utf-8") as handle:
        handle.write("venv being made; if this stays, the making was cut short\n")
    argv = [maker, "-m", "venv"] + (["--system-site-packages"] if site_packages else []) + [venv]
    rc, out, err = run(argv)
    if rc != 0:
        raise StackError("cannot make the virtual environment %s with %s (%s): %s" % (
            venv, maker, " ".join(argv), "; ".join(filter(None, [disk_full(out + err, venv),
                                                                   err.strip()[-800:]]))))
    with open(os.path.join(venv, MADE_MARK), "w", encoding="utf-8") as handle:
        handle.write("made whole by %s\n" % " ".join(argv))
    os.unlink(making)
    return result


def manylinux_platforms(arch, glibc):
    """pip needs every compatible tag spelled out: manylinux_2_35_aarch64 ... manylinux2014_aarch64."""
    major, minor = (int(x) for x in str(glibc).split(".")[:2])
    tags = ["manylinux_%d_%d_%s" % (major, m, arch) for m in range(minor, 16, -1)]
    return tags + ["manylinux2014_%s" % arch, "linux_%s" % arch]


_NOT_FOUND = re.compile(r"Could not find a version that satisfies the requirement (?P<req>.+?)"
                        r"(?: \(from (?!versions:)(?P<who>[^()]*)\))?"
                        r"(?: \(from versions: (?P<versions>[^()]*)\))?\s*$")


def no_distribution(text):
    """The requirement pip found no distribution of, as "req (from who; the index has: versions)", or None.

    pip before 24 prints the requirement with its environment marker ("triton==3.4.0; platform_machine ==
    \"x86_64\" (from torch)"), later ones without: the marker is dropped so both read the same."""
    for line in text.splitlines():
        match = _NOT_FOUND.search(line)
        if match:
            req = match.group("req").split(";", 1)[0].strip()
            said = [("from " + match.group("who")) if match.group("who") else "",
                    ("the index has: " + match.group("versions")) if (match.group("versions") or "").strip()
                    and match.group("versions").strip() != "none" else ""]
            said = "; ".join(part for part in said if part)
            return "%s (%s)" % (req, said) if said else req
    for line in text.splitlines():
        if "No matching distribution found for" in line:
            return line.split("found for", 1)[1].split(";", 1)[0].strip()
    return None


def connection_trouble(text):
    """The first line where pip could not reach an index, or None."""
    for line in text.splitlines():
        low = line.lower()
        if "is ignored: it is neither" in low:
            continue
        if any(word in low for word in ("connection broken", "connection refused", "timed out", "max retries",
                                        "name resolution", "sslerror", "proxyerror", "connectionerror")):
            return line.strip()[:300]
    return None



def _free_mb(path):
    where = nearest_existing(path)
    try:
        return where, shutil.disk_usage(where).free // (1 << 20)
    except OSError:
        return where, None


def disk_full(text, *paths):
    """When ``text`` (pip's or venv's output) says a disk is full, or a disk where ``paths`` (the venv, the download
    folder) are has less than LOW_SPACE_MB free: what to do, with the free space there; else None (naming
    ``{workspace_host}``)."""
    free = [(where, mb) for where, mb in (_free_mb(path) for path in paths if path) if mb is not None]
    said = "No space left on device" in text or "Errno 28" in text
    if not said and not any(mb < LOW_SPACE_MB for _, mb in free):
        return None
    return ("the disk is full (%s; %s). Free space there (or point {workspace_host} at a larger disk), "
            "then rerun: the stage continues from what is in place, the downloads included" % (
                "No space left on device" if said else "nearly: the likely cause",
                "; ".join("%s: %d MB free" % pair for pair in free) or "no free space figure"))


def explain_pip_error(text, index_args):
    """pip's failure in words a user can act on. Connection trouble first: pip then also reports the package as
    missing or conflicting, which would wrongly blame the pin. The site's index settings are named as ``{field}``."""
    lines = [l for l in text.splitlines() if l.strip() and "is ignored: it is neither" not in l]
    full = disk_full(text)
    if full:
        return full
    trouble = connection_trouble(text)
    if trouble:
        return ("the package index does not answer (%s). Check {index_url} / the mirror, the "
                "proxy and CA settings, or install offline with {wheelhouse}." % trouble)
    req = no_distribution(text)
    if req:
        return ("no distribution of %s for this platform and Python on the index (%s). Check the pin in the "
                "profile, or the index settings ({index_url}, {extra_index_urls}, "
                "{wheelhouse})." % (req, pins.mask_url(" ".join(index_args)) or "pip's default index"))
    return "\n".join(lines[-15:])


def profile_digest(profile, paths):
    """sha256 of the profile and the requirement files it reads: a changed profile is not 'satisfied'. A file
    that is not there yet counts as such (then nothing installed by this profile can match)."""
    digest = hashlib.sha256(json.dumps(profile, sort_keys=True).encode())
    for phase in profile["phases"]:
        for path in phase.get("requirements_files") or []:
            try:
                with open(pins.expand(path, paths), encoding="utf-8") as handle:
                    digest.update(handle.read().encode())
            except OSError:
                digest.update(b"<missing>")
    return digest.hexdigest()


def write_constraints(profile, state_dir):
    """The pins as a constraints file in state_dir (used by the plan and by every install phase)."""
    path = os.path.join(state_dir, "constraints.txt")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(pins.constraints_text(profile["pins"]))
    return path


def pip_env(profile, env=None):
    """The environment pip runs with for a profile: the caller's, no prompts, and every phase's own variables."""
    full_env = dict(env or {}, PIP_NO_INPUT="1")
    for phase in profile["phases"]:
        full_env.update({k: str(v) for k, v in (phase.get("env") or {}).items()})
    return full_env


def fill_wheel_cache(request, profile, site, python, state_dir, env, run=runner.run_command):
    """Download what the plan resolves (and the no-deps packages, and setuptools and wheel, which building a source
    package needs) into site["wheel_cache"], keeping what is there. True when every download worked.

    pip download resolves as an install that ignores what is installed, so a dry run from the cache alone finds every
    file there. A failure is left to a dry run against the index, which explains conflicts and connection trouble."""
    download = [python, "-m", "pip", "download", "--disable-pip-version-check", "--retries", "2", "--timeout", "20",
                "-d", site["wheel_cache"]] + request["index_args"]
    base = download + (["-c", write_constraints(profile, state_dir)] if profile.get("constraints") else [])
    full_env = pip_env(profile, env)
    # a package built from source at install (no_binary) is fetched there: downloading would build its metadata
    built = {pins.canonical(name) for phase in profile["phases"] for name in phase.get("no_binary") or []}
    fixed = [r for r in request["fixed"] if pins.canonical(pins.split_requirement(r)[0]) not in built]
    ok = True
    if request["requirements"]:
        ok = run(base + list(request["requirements"]), full_env)[0] == 0
    if ok and fixed:
        ok = run(base + ["--no-deps"] + fixed, full_env)[0] == 0
    if ok:
        # what pip's isolated build of a source package installs, from the cache when the index is not asked
        ok = run(download + ["--no-deps", "setuptools", "wheel"], full_env)[0] == 0
    return ok


def _cache_marker(request, profile, site, arch):
    """The file that says a plan of exactly this request was resolved from the wheel cache alone, and from which
    files. A later plan of the same request skips the download pass when every file is there: it resolves the same
    releases again, from the cache (delete the cache folder to take newer releases)."""
    # not the index settings: the same releases from another mirror are the same files
    key = hashlib.sha256(json.dumps({"requirements": request["requirements"], "fixed": request["fixed"], "arch": arch,
                                     "pins": profile["pins"] if profile.get("constraints") else {}},
                                    sort_keys=True).encode()).hexdigest()[:24]
    return os.path.join(site["wheel_cache"], ".complete", key + ".json")


def _cache_complete(marker):
    try:
        with open(marker, encoding="utf-8") as handle:
            files = json.load(handle)["files"]
    except (OSError, ValueError, KeyError):
        return False
    return all(os.path.isfile(path) for path in files)


def _record_cache(marker, report):
    """After a dry run: when every package it resolved was a local file (the cache, or a site's own folder),
    record those files."""
    urls = [item.get("download_info", {}).get("url", "") for item in report.get("install", [])]
    if not urls or not all(url.startswith("file://") for url in urls):
        return
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w", encoding="utf-8") as handle:
        json.dump({"files": sorted(url[len("file://"):] for url in urls)}, handle)


def plan(profile, paths, read_file, arch, site, python, state_dir, accept=(), cross=None, env=None,
         run=runner.run_command, fill_cache=True):
    """Resolve the whole profile without installing; returns pins.analyze_plan(...) plus overrides/unplanned.

    cross: {"arch", "python_version", "glibc"} resolves for another platform from wheel metadata only.
    site["wheel_cache"]: download into it first (fill_cache), so the dry run and the install find the files; skipped
    when a plan of the same request was resolved from the cache alone and its files are all there."""
    request = pins.plan_request(profile, paths, read_file, arch, site)
    marker = _cache_marker(request, profile, site, arch) if site.get("wheel_cache") and not cross else None
    from_cache = False
    if marker:
        from_cache = _cache_complete(marker) or (
            fill_cache and fill_wheel_cache(request, profile, site, python, state_dir, env, run))
    if from_cache:
        # pip takes the index's copy of a release over the cache's, so the cache is used alone (--no-index)
        request = pins.plan_request(profile, paths, read_file, arch, dict(site, cache_only=True))
    report_path = os.path.join(state_dir, "deps-plan-report.json")
    # Not --quiet: pip explains a conflict ("The conflict is caused by") only at its normal level.
    argv = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed",
            "--disable-pip-version-check", "--retries", "2", "--timeout", "20", "--report", report_path]
    argv += request["index_args"]
    if cross:
        argv += ["--target", tempfile.mkdtemp(prefix="deps-plan-"), "--only-binary=:all:", "--implementation",
                 "cp", "--python-version", str(cross.get("python_version", "3.11")), "--use-feature=fast-deps"]
        for tag in manylinux_platforms(cross.get("arch", "x86_64"), cross.get("glibc", "2.28")):
            argv += ["--platform", tag]
    if profile.get("constraints"):
        argv += ["-c", write_constraints(profile, state_dir)]
    full_env = pip_env(profile, env)
    requirements = list(request["requirements"])
    core = {pins.canonical(k) for k in profile["pins"]}
    unplanned = []
    for _attempt in range(20):
        rc, out, err = run(argv + requirements, full_env)
        missing = no_distribution(out + "\n" + err)
        if rc == 0 or not cross or not missing:
            break
        # A cross-platform plan sees wheels only: a source-only package cannot be planned there (it is resolved
        # natively at install). Core pins stay, so a missing pin still fails below.
        name = pins.canonical(pins.leading_name(missing))  # pip's words, not a requirement
        listed = {pins.canonical(pins.split_requirement(r)[0]) for r in requirements}
        if name in core or name not in listed:  # a pin, or a dependency of something listed: report it
            break
        unplanned.append(missing)
        requirements = [r for r in requirements if pins.canonical(pins.split_requirement(r)[0]) != name]
    resolved = conflicts = None
    if rc == 0:
        with open(report_path, encoding="utf-8") as handle:
            report = json.load(handle)
        resolved = pins.parse_report(report)
        if marker:
            _record_cache(marker, report)
    else:
        if connection_trouble(out + "\n" + err):
            raise StackError("pip could not plan profile %s: %s" % (
                profile["name"], explain_pip_error(out + "\n" + err, request["index_args"])))
        conflicts = pins.parse_conflict(out + "\n" + err)
        # Wanted only by the profile itself (its requirement and its constraint agree, since pins replace other
        # lines): no such version exists for this platform.
        ghosts = [c for c in conflicts if all(w["by"].startswith("you") for w in c["wants"])]
        if ghosts:
            raise StackError("no distribution of %s for this platform and Python on the index (%s): check the pin "
                             "in profile %s and the index settings ({index_url}, "
                             "{extra_index_urls}, {wheelhouse})." % (
                                 ", ".join(c["wants"][0]["spec"] for c in ghosts),
                                 pins.mask_url(" ".join(request["index_args"])) or "pip's default index",
                                 profile["name"]))
        if not conflicts:
            raise StackError("pip could not plan profile %s: %s" % (
                profile["name"], explain_pip_error(out + "\n" + err, request["index_args"])))
    analysis = pins.analyze_plan(profile["pins"], resolved, conflicts, request["fixed"], accept)
    analysis.update(overrides=request["overrides"], unplanned=unplanned, from_cache=from_cache)
    with open(os.path.join(state_dir, "deps-plan.json"), "w", encoding="utf-8") as handle:
        json.dump(analysis, handle, indent=2, sort_keys=True)
    return analysis


def install(steps, env=None, run=runner.run_command):
    """Run the install steps in order; a failing phase stops with its last lines."""
    for step in steps:
        rc, out, err = run(step["argv"], dict(env or {}, PIP_NO_INPUT="1", **step["env"]))
        if rc != 0 and step.get("retry_argv"):
            # from the download cache alone it failed (a build tool not there?): the same phase with the index
            rc, out, err = run(step["retry_argv"], dict(env or {}, PIP_NO_INPUT="1", **step["env"]))
        if rc != 0:
            tail = "\n".join((out + "\n" + err).strip().splitlines()[-20:])
            raise StackError("phase %s failed (exit %d): %s" % (
                step["phase"], rc, "\n".join(filter(None, [
                    disk_full(out + err, os.path.dirname(step["argv"][0]), (env or {}).get("PIP_CACHE_DIR")), tail]))))
