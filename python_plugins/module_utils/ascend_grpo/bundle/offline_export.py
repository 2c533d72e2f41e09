"""What an offline bundle holds, fetched on a host that reaches the internet, for the platform of the host that
will use it (``--tags export``; the ``offline_export`` module's work as plain Python).

A bundle is one folder, each part a top-level folder of it:

- ``wheels/``: every file pip needs to install the stack (the deps profile) and OpenCompass's venv (the eval
  profile) with ``--no-index --find-links``: the wheels for the target platform and Python, the source packages a
  profile builds (``no_binary``) and what building them takes (the profile's own build phase, setuptools, wheel);
- ``verl/``: verl's tree as a ``git archive`` tarball, which carries its commit (proven before it is kept);
- ``model/``, ``data/``: the model folder and MATH's parquet files (from the hub, or a folder here);
- ``sample/``: the guide's sample file (the chat template's source; its sha256 is proven where it is used);
- ``image/``: the container image (``docker save``; written by the playbook, not here).

The exporting host need not be the target: unless its machine, Python and C library equal the target's, pip
downloads with ``--platform``/``--python-version`` (wheels only); a package that has no wheel for the target is then
fetched as its source package when the profile lists it, and named in ``unfetched`` otherwise.

Messages name inputs as ``{field}``, options of the module: ``{dest}``, ``{target}``, ``{verl}``, ``{model}``,
``{data}``, ``{sample}``, ``{profiles}``. Standard library only, plus huggingface_hub when a part comes from the hub.
"""

import hashlib
import os
import platform
import re
import shutil
import sys
import tempfile
import urllib.request

from ..common import runner, workspace
from ..common.errors import FieldError, StageFailure
from ..deps import pins, pip_runner, tarball_proof

PARTS = ("wheels", "verl", "model", "data", "sample", "image")
ARCHES = ("aarch64", "x86_64")
_PYTHON = re.compile(r"^3\.[0-9]{1,2}$")
_GLIBC = re.compile(r"^2\.[0-9]{1,2}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class ExportError(FieldError):
    """An input the export cannot use, or a download that failed: ``field`` names the option."""


def check_target(target):
    """The target platform as {"arch", "python_version", "glibc"}, validated."""
    arch = str(target.get("arch") or "")
    version = str(target.get("python_version") or "")
    glibc = str(target.get("glibc") or "")
    if arch not in ARCHES:
        raise ExportError("target", "{target}: arch must be one of %s (the target host's `uname -m`), got %r"
                          % (", ".join(ARCHES), arch))
    if not _PYTHON.match(version):
        raise ExportError("target", "{target}: python_version must be the target Python's major.minor (3.11 in the "
                          "CANN image), got %r" % version)
    if not _GLIBC.match(glibc):
        raise ExportError("target", "{target}: glibc must be the target's C library version as `ldd --version` "
                          "prints it (2.34 in the CANN image), got %r" % glibc)
    return {"arch": arch, "python_version": version, "glibc": glibc}


def here():
    """This host's platform in the target's terms."""
    libc = platform.libc_ver()
    return {"arch": platform.machine(), "python_version": "%d.%d" % sys.version_info[:2],
            "glibc": libc[1] if libc[0] == "glibc" else ""}


def native(target, python_here=None):
    """True when pip on this host downloads for the target as it is (same machine, Python and C library)."""
    return dict(python_here or here()) == dict(target)


def platform_args(target):
    """pip's options for downloading another platform's wheels (wheels only: pip refuses the platform options
    otherwise)."""
    argv = ["--only-binary=:all:", "--implementation", "cp", "--python-version", target["python_version"]]
    for tag in pip_runner.manylinux_platforms(target["arch"], target["glibc"]):
        argv += ["--platform", tag]
    return argv


def _name(requirement):
    return pins.canonical(pins.split_requirement(requirement)[0])


def profile_downloads(profile, paths, read_file, target, site, python, dest, constraints, cross, cache=""):
    """The pip download commands one profile needs, in order: dicts of ``argv`` (without the requirements),
    ``source`` (the same download as source packages, platform options left out), ``cached`` (the same download
    from ``cache`` alone, a folder of files downloaded before, such as a deps stage's download cache; None without
    one), ``requirements`` and ``kind``: "wheels" (the resolved set), "fixed" (no_deps packages), "sdist" (built
    from source on the target) or "build" (setuptools and wheel, which an isolated build of a source package
    installs)."""
    request = pins.plan_request(profile, paths, read_file, target["arch"], site)
    head = [python, "-m", "pip", "download", "--disable-pip-version-check", "--retries", "2", "--timeout", "30",
            "-d", dest]
    # from the cache alone (pip takes the index's copy of a release over a find-links one, so not both at once)
    local = ["--no-index", "--find-links", cache] + [arg for link in site.get("find_links") or []
                                                     for arg in ("--find-links", link)]
    base = head + request["index_args"]
    extra = (platform_args(target) if cross else []) + (["-c", constraints] if constraints else [])
    built = {pins.canonical(name) for phase in profile["phases"] for name in phase.get("no_binary") or []}
    sdists = [r for r in request["fixed"] if _name(r) in built]
    fixed = [r for r in request["fixed"] if _name(r) not in built]
    source = base + ["--no-deps", "--no-binary", ":all:"]

    def step(argv, cached, requirements, kind, is_cross):
        return {"argv": argv, "cached": cached if cache else None, "source": source, "requirements": requirements,
                "kind": kind, "cross": is_cross}
    steps = []
    if request["requirements"]:
        steps.append(step(base + extra, head + local + extra, list(request["requirements"]), "wheels", cross))
    if fixed:
        steps.append(step(base + extra + ["--no-deps"], head + local + extra + ["--no-deps"], fixed, "fixed", cross))
    if sdists:
        steps.append(step(source, head + local + ["--no-deps", "--no-binary", ":all:"], sdists, "sdist", False))
    steps.append(step(base + extra + ["--no-deps"], head + local + extra + ["--no-deps"], ["setuptools", "wheel"],
                      "build", cross))
    return steps


def _missing(out):
    found = pip_runner.no_distribution(out)
    return pins.leading_name(found) if found else None


def download(steps, profile, env, run=runner.run_command):
    """Run one profile's downloads. A requirement with no wheel for the target (a cross download) is fetched as its
    source package when the profile lists it and is not a pin; what cannot be fetched is returned, not raised.
    Returns {"ran": n, "sdist_fallback": [...], "unfetched": [{"requirement", "why"}]}."""
    ran, fallback, unfetched = 0, [], []
    core = {pins.canonical(k) for k in profile.get("pins") or {}}
    for step in steps:
        argv, kind = step["argv"], step["kind"]
        reqs = list(step["requirements"])
        if step.get("cached"):
            ran += 1
            if run(step["cached"] + reqs, env)[0] == 0:
                continue  # every file of the step was in the cache

        for _attempt in range(30):
            if not reqs:
                break
            ran += 1
            rc, out, err = run(argv + reqs, env)
            if rc == 0:
                break
            text = out + "\n" + err
            missing = _missing(text)
            listed = {_name(r): r for r in reqs}
            name = pins.canonical(missing) if missing else None
            if step["cross"] and name in listed and name not in core:
                # no wheel for the target: its source package, built there (setuptools and wheel are in the bundle)
                ran += 1
                src_rc, src_out, src_err = run(step["source"] + [listed[name]], env)
                if src_rc == 0:
                    fallback.append(listed[name])
                else:
                    unfetched.append({"requirement": listed[name], "why": _last_lines(src_out + "\n" + src_err)})
                reqs = [r for r in reqs if _name(r) != name]
                continue
            why = pip_runner.explain_pip_error(text, [])
            unfetched.append({"requirement": " ".join(reqs) if len(reqs) < 6 else "%s (%d requirements)" % (
                kind, len(reqs)), "why": why})
            break
    return {"ran": ran, "sdist_fallback": fallback, "unfetched": unfetched}


def _last_lines(text, count=3):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " ".join(lines[-count:])[-400:]


def verl_requirements_reader(tarball, files_dir):
    """A ``read_file`` for pins.plan_request: ``{verl}/...`` read from the tarball, the rest from disk."""
    import tarfile  # pylint: disable=import-outside-toplevel

    marker = "\0verl\0"

    def read(path):
        if path.startswith(marker):
            inner = path[len(marker):].lstrip("/")
            with tarfile.open(tarball) as archive:
                for member in archive.getmembers():
                    parts = member.name.split("/", 1)
                    if member.isfile() and (member.name == inner or (len(parts) == 2 and parts[1] == inner)):
                        return archive.extractfile(member).read().decode("utf-8")
            raise ExportError("verl", "{verl}: the tarball %s holds no %s, which the profile's requirement list "
                              "names: is it verl's tree?" % (tarball, inner))
        with open(path, encoding="utf-8") as handle:
            return handle.read()

    return read, {"files": files_dir, "verl": marker}


def export_wheels(profiles, dest, target, site, python, verl_tarball, env=None, run=runner.run_command,
                  python_here=None, cache=""):
    """Download every profile's files into ``dest``. Returns {"native", "profiles": {name: download result},
    "unfetched": [...], "files", "bytes"}."""
    target = check_target(target)
    cross = not native(target, python_here)
    os.makedirs(dest, exist_ok=True)
    result = {"native": not cross, "profiles": {}, "unfetched": []}
    with tempfile.TemporaryDirectory(prefix="grpo-export-") as scratch:
        for entry in profiles:
            profile = entry["data"]
            read, paths = verl_requirements_reader(verl_tarball, entry["files"])
            constraints = pip_runner.write_constraints(profile, scratch) if profile.get("constraints") else None
            steps = profile_downloads(profile, paths, read, target, site, python, dest, constraints, cross, cache)
            done = download(steps, profile, pip_runner.pip_env(profile, env), run)
            result["profiles"][profile["name"]] = done
            result["unfetched"] += [dict(u, profile=profile["name"]) for u in done["unfetched"]]
    files = [os.path.join(dest, n) for n in os.listdir(dest) if os.path.isfile(os.path.join(dest, n))]
    result.update(files=len(files), bytes=sum(os.path.getsize(f) for f in files))
    return result


def export_verl(dest, commit, tarball="", sha256="", repo="", run=runner.run_command, check_mode=False):
    """verl's tree as ``dest/verl-<commit>.tar.gz``, proven to be ``commit`` (tarball_proof). From ``tarball`` (a
    file here) when given, else ``git archive`` of the commit fetched from ``repo``. Kept when already there and
    proven. Returns {"path", "changed", "proof"}."""
    commit = (commit or "").strip().lower()
    if not _COMMIT.match(commit):
        raise ExportError("verl", "{verl}: commit must be the full 40-character commit, got %r" % commit)
    out = os.path.join(dest, "verl-%s.tar.gz" % commit)
    if os.path.isfile(out):
        try:
            found = tarball_proof.prove_tarball(out, commit, sha256 or None)
            return {"path": out, "changed": False, "proof": found["proof"]}
        except tarball_proof.TarballError:
            pass  # made again below
    if check_mode:
        return {"path": out, "changed": True, "proof": "(check mode)"}
    os.makedirs(dest, exist_ok=True)
    if tarball:
        try:
            found = tarball_proof.prove_tarball(tarball, commit, sha256 or None)
        except tarball_proof.TarballError as err:
            raise ExportError("verl", "{verl}: %s" % err) from err
        _copy_file(tarball, out)
        return {"path": out, "changed": True, "proof": found["proof"]}
    if not repo:
        raise ExportError("verl", "{verl}: neither a tarball nor a repository to take verl at %s from" % commit)
    with tempfile.TemporaryDirectory(prefix="grpo-verl-") as scratch:
        for argv in (["git", "init", "-q", scratch],
                     ["git", "-C", scratch, "fetch", "-q", "--depth", "1", repo, commit],
                     ["git", "-C", scratch, "archive", "--format=tar.gz", "--prefix=verl/", "-o", out + ".part",
                      commit]):
            rc, stdout, stderr = run(argv, {"GIT_TERMINAL_PROMPT": "0"})
            if rc != 0:
                raise ExportError("verl", "{verl}: `%s` failed: %s. With no way to %s, give a tarball of the commit "
                                  "(git archive) instead." % (" ".join(argv[:4]), _last_lines(stdout + stderr),
                                                              "reach the repository"))
    try:
        found = tarball_proof.prove_tarball(out + ".part", commit)
    except tarball_proof.TarballError as err:
        os.unlink(out + ".part")
        raise ExportError("verl", "{verl}: %s" % err) from err
    os.replace(out + ".part", out)
    return {"path": out, "changed": True, "proof": found["proof"]}


def _copy_file(src, dest):
    tmp = dest + ".part"
    shutil.copyfile(src, tmp)
    shutil.copystat(src, tmp)
    os.replace(tmp, dest)


def _same(src, dest):
    try:
        a, b = os.stat(src), os.lstat(dest)
    except OSError:
        return False
    return os.path.isfile(dest) and not os.path.islink(dest) and a.st_size == b.st_size and \
        int(a.st_mtime) == int(b.st_mtime)


def copy_folder(src, dest, field, check_mode=False):
    """Copy the regular files of ``src`` (a folder here) into ``dest``, keeping its layout; a file already there
    with the same size and time is kept. A symbolic link in ``src`` is refused (the bundle holds plain files), and
    so is a file in ``dest`` that ``src`` does not have (an earlier export of something else: remove the folder).
    Returns {"files", "copied", "bytes"}."""
    if not os.path.isdir(src) or os.path.islink(src):
        raise ExportError(field, "{%s}: %s is not a folder on the exporting host" % (field, src))
    wanted = {}
    for root, dirs, files in os.walk(src):
        for name in sorted(dirs + files):
            path = os.path.join(root, name)
            if os.path.islink(path):
                raise ExportError(field, "{%s}: %s is a symbolic link; a bundle holds plain files: copy what it "
                                  "points to in its place" % (field, path))
        for name in files:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                wanted[os.path.relpath(path, src)] = path
    if os.path.isdir(dest):
        for root, _dirs, files in os.walk(dest):
            for name in files:
                rel = os.path.relpath(os.path.join(root, name), dest)
                if rel not in wanted:
                    raise ExportError(field, "{%s}: %s holds %s, which %s does not: it is another export's; remove "
                                      "%s and export again" % (field, dest, rel, src, dest))
    copied = 0
    for rel, path in sorted(wanted.items()):
        out = os.path.join(dest, rel)
        if _same(path, out):
            continue
        copied += 1
        if not check_mode:
            os.makedirs(os.path.dirname(out), exist_ok=True)
            _copy_file(path, out)
    return {"files": len(wanted), "copied": copied, "bytes": sum(os.path.getsize(p) for p in wanted.values())}


def hub_snapshot(spec, dest, field, token=None, check_mode=False):
    """A hub repository's files (``spec``: repo, revision, repo_type, allow_patterns, endpoint) into ``dest`` with
    huggingface_hub's snapshot_download, resumable; its bookkeeping folder (``.cache``) taken out once complete."""
    if check_mode:
        return {"repo": spec["repo"], "changed": True}
    try:
        from huggingface_hub import snapshot_download  # pylint: disable=import-outside-toplevel
    except ImportError as err:
        raise ExportError(field, "{%s}: exporting from the hub needs huggingface_hub on the exporting host "
                          "(pip install huggingface_hub), or give a folder that holds %s" % (field, spec["repo"])) \
            from err
    try:
        snapshot_download(spec["repo"], repo_type=spec.get("repo_type") or "model",
                          revision=spec.get("revision") or None, local_dir=dest,
                          allow_patterns=spec.get("allow_patterns") or None,
                          endpoint=spec.get("endpoint") or None, token=token or None)
    except Exception as err:  # pylint: disable=broad-except  # the hub's errors are many; its words are kept
        raise ExportError(field, "{%s}: the hub did not give %s (%s: %s); check the repository and revision, "
                          "the hub's address (a mirror) and the network, or give a folder that holds it"
                          % (field, spec["repo"], type(err).__name__, str(err)[:300])) from err
    shutil.rmtree(os.path.join(dest, ".cache"), ignore_errors=True)
    files = [os.path.join(r, n) for r, _d, fs in os.walk(dest) for n in fs]
    return {"repo": spec["repo"], "changed": True, "files": len(files),
            "bytes": sum(os.path.getsize(f) for f in files)}


def export_sample(dest, file="", url="", sha256="", check_mode=False, opener=urllib.request.urlopen):
    """The guide's sample into ``dest``: ``file`` (here: the sample's tokenizer_config.json or its folder's git
    archive) copied as it is, or ``url`` downloaded and proven by ``sha256`` (the file the assets stage proves
    again where it is used). Returns {"path", "changed"}."""
    if file:
        if not os.path.isfile(file):
            raise ExportError("sample", "{sample}: %s is not a file on the exporting host" % file)
        out = os.path.join(dest, os.path.basename(file))
        if _same(file, out):
            return {"path": out, "changed": False}
        if not check_mode:
            os.makedirs(dest, exist_ok=True)
            _copy_file(file, out)
        return {"path": out, "changed": True}
    if not url.startswith("https://"):
        raise ExportError("sample", "{sample}: the sample's URL must be https:// (got %r), or give the file" % url)
    name = os.path.basename(url.split("?", 1)[0]) or "tokenizer_config.json"
    if not _NAME.match(name):
        raise ExportError("sample", "{sample}: %r is no file name to keep the sample as" % name)
    out = os.path.join(dest, name)
    if os.path.isfile(out) and workspace.sha256_file(out) == sha256.lower():
        return {"path": out, "changed": False}
    if check_mode:
        return {"path": out, "changed": True}
    os.makedirs(dest, exist_ok=True)
    try:
        with opener(url, timeout=60) as response:
            body = response.read()
    except OSError as err:
        raise ExportError("sample", "{sample}: %s could not be downloaded (%s); give the file instead"
                          % (url, err)) from err
    if hashlib.sha256(body).hexdigest() != sha256.lower():
        raise ExportError("sample", "{sample}: %s has sha256 %s, not the %s it is proven by: nothing was kept"
                          % (url, hashlib.sha256(body).hexdigest(), sha256))
    with open(out + ".part", "wb") as handle:
        handle.write(body)
    os.replace(out + ".part", out)
    return {"path": out, "changed": True}


def check_dest(dest, parts):
    """The bundle folder: absolute, not a link, and the parts asked for known."""
    if not os.path.isabs(dest or ""):
        raise ExportError("dest", "{dest} must be an absolute path, got %r" % dest)
    if os.path.islink(dest):
        raise ExportError("dest", "{dest}: %s is a symbolic link; name the folder itself" % dest)
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        raise ExportError("parts", "{parts}: %s unknown; a bundle's parts are %s" % (
            ", ".join(unknown), ", ".join(PARTS)))


class Incomplete(StageFailure):
    """The export ran, but some files could not be fetched for the target."""


def hidden_values(params):
    """What the result must not show: the index URLs (they may hold a password) and the hub token."""
    values = [params.get("index_url") or "", params.get("token") or ""] + list(params.get("extra_index_urls") or [])
    return {v for v in values if v}


def _source_part(part, spec, dest, token, check_mode):
    if spec.get("source") == "local":
        return dict(copy_folder(spec.get("local_dir") or "", dest, part, check_mode), source="local")
    if spec.get("source") != "hf":
        raise ExportError(part, "{%s}: source must be hf (the hub) or local (a folder on the exporting host), got "
                          "%r; ModelScope is not exported" % (part, spec.get("source")))
    if os.path.isfile(os.path.join(dest, ".grpo-export-complete")) and not check_mode:
        return {"source": "hf", "repo": spec["repo"], "changed": False}
    done = hub_snapshot(dict(spec, repo_type="dataset" if part == "data" else "model"), dest, part, token,
                        check_mode)
    if not check_mode:
        with open(os.path.join(dest, ".grpo-export-complete"), "w", encoding="utf-8") as handle:
            handle.write("%s@%s\n" % (spec["repo"], spec.get("revision") or "main"))
    return dict(done, source="hf")


def run_export(params, check_mode=False, run=runner.run_command):
    """One call of the ``offline_export`` module: the parts asked for (image aside) into ``params["dest"]``.
    Returns the module's result; raises ExportError for a bad input, Incomplete when pip could not fetch
    everything for the target (the result says what). ``run``: ``module.run_command`` or one with its signature."""

    def run_env(argv, env=None):
        # an index URL may hold a password: pip reads it from its environment, never from the command line
        argv, env = pins.index_env(argv, env)
        return run(argv, environ_update=env)

    dest, parts = params["dest"], list(params["parts"])
    check_dest(dest, parts)
    target = check_target(params["target"])
    result = {"changed": False, "dest": dest, "target": target, "parts": {}}
    verl = params.get("verl") or {}
    if "verl" in parts or "wheels" in parts:
        done = export_verl(os.path.join(dest, "verl"), verl.get("commit", ""), verl.get("tarball", ""),
                           verl.get("tarball_sha256", ""), verl.get("repo", ""), run_env, check_mode)
        result["parts"]["verl"] = done
        result["changed"] |= done["changed"]
    if "wheels" in parts:
        site = dict(params.get("site") or {}, index_url=params.get("index_url") or "",
                    extra_index_urls=list(params.get("extra_index_urls") or []))
        env = {"PIP_CACHE_DIR": params["pip_cache"]} if params.get("pip_cache") else {}
        wheels_dir = os.path.join(dest, "wheels")
        before = set(os.listdir(wheels_dir)) if os.path.isdir(wheels_dir) else set()
        if check_mode:
            done = {"native": native(target), "planned": [p["data"]["name"] for p in params["profiles"]]}
            result["changed"] = True
        else:
            done = export_wheels(params["profiles"], wheels_dir, target, site, params["python"] or sys.executable,
                                 result["parts"]["verl"]["path"], env, run_env, cache=params.get("wheel_cache") or "")
            done["added"] = len(set(os.listdir(wheels_dir)) - before)
            result["changed"] |= done["added"] > 0
        result["parts"]["wheels"] = done
    for part in ("model", "data"):
        if part in parts:
            done = _source_part(part, params.get(part) or {}, os.path.join(dest, part), params.get("token"),
                                check_mode)
            result["parts"][part] = done
            result["changed"] |= bool(done.get("changed", done.get("copied")))
    if "sample" in parts:
        sample = params.get("sample") or {}
        done = export_sample(os.path.join(dest, "sample"), sample.get("file", ""), sample.get("url", ""),
                             sample.get("sha256", ""), check_mode)
        result["parts"]["sample"] = done
        result["changed"] |= done["changed"]
    unfetched = result["parts"].get("wheels", {}).get("unfetched") or []
    if unfetched:
        raise Incomplete("pip could not fetch %d of what the profiles need for %s, Python %s (glibc %s): %s. Those "
                         "packages have no file for that platform on the index ({index_url}, {extra_index_urls}, "
                         "{site}); put their wheels in a folder and list it in find_links, then export again." % (
                             len(unfetched), target["arch"], target["python_version"], target["glibc"],
                             "; ".join("%s (%s): %s" % (u["requirement"], u["profile"], u["why"])
                                       for u in unfetched[:5])), result)
    return result
