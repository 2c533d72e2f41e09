"""Model weights in the workspace: from the Hugging Face hub (or a mirror), ModelScope, or a local folder.

Two steps, so that bad input fails before anything is fetched or replaced:

- :func:`plan` looks at the destination and the source and says what to do: ``none`` (the folder is complete, as
  its manifest and the files on disk say; no network is touched), ``download`` or ``copy``. A repository or
  revision that does not exist, or a local folder without weights, is a :class:`WeightsError` naming the field
  (its message names inputs as ``{field}``: the model_weights module names the assets stage's setting for each, e.g.
  ``{local_dir}`` as assets_model_local_dir and ``{trust_remote_code}`` as grpo_trust_remote_code).
- :func:`fetch` does it: ``huggingface_hub.snapshot_download`` into the destination (resumable: an interrupted run
  leaves ``.incomplete`` files that the next run continues), ModelScope's ``snapshot_download``, or a copy. It
  prints a progress line every few seconds, checks every file's size (and the hub's sha256 of LFS files), then
  writes the manifest ``.grpo-weights.json`` that makes the next :func:`plan` say ``none``.

The manifest is what "complete" means: every file it lists present with its size. The tokenizer files the assets
stage edits (``tokenizer_config.json``, ``chat_template.jinja``) need only be present.

Standard library plus huggingface_hub (hub) or modelscope (ModelScope), imported only when used. The assets stage
ships this module with the package's ``workspace`` into the training environment and runs it as a detached job
(``python3 -m ascend_grpo.assets.weights fetch --plan FILE``); the plan's ``setting_names`` (the role's mapping)
names the fields in the job's errors.
"""

import argparse
import fnmatch
import json
import os
import shutil
import sys
import threading
import time

from ..common import errors, proxy, secrets, workspace

MANIFEST = ".grpo-weights.json"
EDITED = ("tokenizer_config.json", "chat_template.jinja")
# What training and merging need: weights, config and tokenizer files; not the repo's other formats
# (pytorch_model*.bin, gguf, onnx, original/...) and no code (*.py: a model that needs it runs it when loaded).
DEFAULT_ALLOW = ["*.json", "*.safetensors", "*.txt", "*.model", "*.tiktoken", "*.jinja"]
# The input that lets a model folder carry code that loading it would run (transformers' trust_remote_code), as
# a message names it: every module that refuses such a folder has an option of this name.
TRUST_FIELD = "{trust_remote_code}"
# What this module's refusals call the fetch's patterns (the plan's own input; other callers name the assets stage)
OWN_PATTERNS = "the default {allow}"
# The inputs a message may name as {field}: the model_weights module's options, the keys of a plan.
FIELDS = ("source", "dest", "repo", "revision", "local_dir", "endpoint", "token", "allow", "refresh",
          "trust_remote_code")


class WeightsError(errors.FieldError):
    """Bad input or a failed fetch; ``field`` names the option at fault (repo, revision, local_dir, dest, ...)."""


# The fix for each field a plan can fail on ({field}: the option, which the module names by its role's setting).
FIX = {
    "repo": "set {repo} to a model repository that exists (or {token} for a private one).",
    "revision": "set {revision} to a branch, tag or commit of %(repo)s.",
    "token": "set {token} (accept the model's terms on the hub first).",
    "endpoint": "check the link, set {endpoint} to a reachable mirror, or fetch the model elsewhere and "
                "use {source}=local.",
    "local_dir": "set {local_dir} to a folder with config.json, *.safetensors and the tokenizer files.",
    "dest": "set {dest} to a folder path.",
    "allow": 'include "*.safetensors" in {allow}.',
    "source": "set {source} to hf, modelscope or local.",
    "trust_remote_code": "use a model folder without code, or set " + TRUST_FIELD + ": true if you trust it.",
}


def hidden_values(params):
    """What the model_weights module keeps out of everything it returns: an endpoint's or the proxy's password (the
    assets stage writes the plan's endpoint from the setting itself)."""
    return secrets.credentials_in([params.get("endpoint"), params.get("proxy")])


def module_plan(params):
    """What the model_weights module returns for its arguments: :func:`plan` of the one source asked for, the token
    and any endpoint password out. A refusal is a :class:`WeightsError` whose message ends with the fix. The hub is
    asked through ``params["proxy"]`` (huggingface_hub reads it from the environment); a proxy that cannot be used
    raises ``common.proxy.ProxyError``."""
    spec = dict(params)
    spec.pop("proxy", None)
    if spec["source"] == "local":
        spec.update(repo=None, revision=None)
    else:
        spec["local_dir"] = None
    try:
        with proxy.proxy_environ(params.get("proxy")):
            step = plan(spec)
    except WeightsError as err:
        raise WeightsError(err.field, secrets.mask_url("%s. Fix: %s" % (str(err).rstrip("."), FIX.get(
            err.field, FIX["source"]) % {"repo": spec.get("repo")}))) from err
    step.pop("token", None)
    return dict(changed=False, **secrets.mask_all(step))


def _read_manifest(dest):
    return workspace.read_json(os.path.join(dest, MANIFEST))


def missing_files(dest, files):
    """Files of ``{name: size}`` that are absent from ``dest`` or have another size (edited files: absent only)."""
    missing = []
    for name, size in sorted(files.items()):
        path = os.path.join(dest, name)
        try:
            actual = os.path.getsize(path)
        except OSError:
            missing.append(name)
            continue
        if os.path.basename(name) not in EDITED and size is not None and actual != size:
            missing.append(name)
    return missing


def folder_problems(path):
    """What keeps ``path`` from being a loadable causal LM folder (config, every weight shard, a tokenizer)."""
    if not os.path.isdir(path):
        return ["%s does not exist" % path]
    names = set(os.listdir(path))
    problems = []
    if "config.json" not in names:
        problems.append("no config.json")
    index = next((n for n in ("model.safetensors.index.json", "pytorch_model.bin.index.json") if n in names), None)
    if index:
        try:
            with open(os.path.join(path, index), encoding="utf-8") as handle:
                shards = sorted(set(json.load(handle)["weight_map"].values()))
        except (OSError, ValueError, KeyError) as err:
            problems.append("%s unreadable: %s" % (index, err))
            shards = []
        absent = [s for s in shards if s not in names]
        if absent:
            problems.append("shards listed in %s missing: %s" % (index, ", ".join(absent)))
    elif not any(n.endswith(".safetensors") or (n.startswith("pytorch_model") and n.endswith(".bin"))
                 for n in names):
        problems.append("no weights (*.safetensors or pytorch_model*.bin)")
    if not ({"tokenizer.json", "tokenizer.model"} & names or {"vocab.json", "merges.txt"} <= names):
        problems.append("no tokenizer (tokenizer.json, tokenizer.model or vocab.json + merges.txt)")
    return problems


def remote_code(path):
    """What in the model folder ``path`` would run code when the folder is loaded with remote code allowed:
    ``[(file, why)]``, sorted. An ``auto_map`` in a top-level ``*config.json`` (config.json, tokenizer_config.json,
    a processor's) names classes that transformers imports from the folder's own modules; any ``*.py`` (or
    ``*.pyc``) file, at any depth, is such a module. Reading is all this does: nothing is imported."""
    found = []
    if not os.path.isdir(path):
        return found
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if not name.endswith("config.json") or os.path.islink(full) or not os.path.isfile(full):
            continue
        try:
            with open(full, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue  # not this check's business: the folder checks say what is wrong with it
        if isinstance(data, dict) and data.get("auto_map"):
            found.append((name, "auto_map names code to import: %s" % ", ".join(
                sorted(str(v) for v in _flat(data["auto_map"])))[:200]))
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".pyc")):
                found.append((os.path.relpath(os.path.join(root, name), path), "Python code"))
    return sorted(found)


def _flat(value):
    if isinstance(value, dict):
        return [x for v in value.values() for x in _flat(v)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [] if value is None else [value]


def remote_code_problem(path, what, trust=False, patterns="the assets stage's default patterns"):
    """A refusal naming every file of ``path`` that would run code when loaded (see :func:`remote_code`), or None
    (none there, or ``trust``: the user trusts this source); ``patterns``: what the fix calls the fetch's patterns.
    It names the trust input as ``{trust_remote_code}``: every module that calls this has an option of that name,
    and renders it as its role's setting (grpo_trust_remote_code)."""
    found = [] if trust else remote_code(path)
    if not found:
        return None
    return ("%s (%s) carries code that loading it would run: %s. Nothing was loaded or recorded. Use a model folder "
            "without it (%s fetch no *.py), or, only if you trust where it came from, set %s: true"
            % (what, path, "; ".join("%s (%s)" % item for item in found), patterns, TRUST_FIELD))


def safe_name(name):
    """Whether a file name from a hub stays inside the folder it is joined to: relative, in normal form (no '..',
    no '.', no empty part), '/' as its only separator, no control character."""
    import posixpath

    return (isinstance(name, str) and bool(name) and not name.startswith("/") and "\\" not in name
            and posixpath.normpath(name) == name and ".." not in name.split("/")
            and not any(ord(c) < 32 or ord(c) == 127 for c in name))


def _selected(names, allow):
    return sorted(n for n in names if any(fnmatch.fnmatch(n, pattern) for pattern in allow))


def _hub_api(endpoint, token):
    from huggingface_hub import HfApi  # pylint: disable=import-outside-toplevel
    return HfApi(endpoint=endpoint or None, token=token or None)


def _hub_error(err, spec):
    """A huggingface_hub failure as a WeightsError that says which setting to change."""
    from huggingface_hub import errors  # pylint: disable=import-outside-toplevel
    where = spec.get("endpoint") or "the hub"
    if isinstance(err, errors.RevisionNotFoundError):
        return WeightsError("revision", "%s has no revision %r at %s" % (spec["repo"], spec["revision"], where))
    if isinstance(err, errors.GatedRepoError):
        return WeightsError("token", "%s is gated at %s: accept its terms and give a token" % (spec["repo"], where))
    if isinstance(err, errors.RepositoryNotFoundError):
        return WeightsError("repo", "no model repository %s at %s (or it is private and the token does not reach it)"
                            % (spec["repo"], where))
    text = str(err)
    if "Connection broken" in text or "IncompleteRead" in text or "Read timed out" in text:
        return WeightsError("endpoint", "the download from %s for %s was cut (%s): rerun the stage; it continues "
                                        "from what was fetched (kept in %s/.cache/huggingface/download)"
                            % (where, spec["repo"], text[:300], spec["dest"]))
    return WeightsError("endpoint", "could not reach %s for %s: %s" % (where, spec["repo"], err))


def plan(spec):
    """What :func:`fetch` would do for ``spec`` (see the module doc); raises WeightsError on bad input.

    ``spec``: source (hf, modelscope, local), dest, repo, revision, local_dir, endpoint, token, allow, refresh,
    trust_remote_code (a folder, or a hub's file list, that carries code is refused unless it is true).
    """
    dest = spec["dest"]
    source = spec["source"]
    allow = spec.get("allow") or DEFAULT_ALLOW
    trust = bool(spec.get("trust_remote_code"))
    request = {"source": source, "repo": spec.get("repo"), "revision": spec.get("revision"),
               "local_dir": spec.get("local_dir"), "allow": allow}
    manifest = _read_manifest(dest)
    same_request = manifest is not None and all(manifest.get(k) == v for k, v in request.items())
    # where to and through which endpoint (a mirror serves the same files) are not part of the request
    request.update(dest=dest, endpoint=spec.get("endpoint"), trust_remote_code=trust)
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise WeightsError("dest", "%s exists and is not a folder" % dest)
    if same_request and not spec.get("refresh"):
        missing = missing_files(dest, manifest["files"])
        # a complete folder may have changed since it was fetched: it must still carry no code
        problem = remote_code_problem(dest, "the model folder {dest}", trust, OWN_PATTERNS) if not missing else None
        if problem:
            raise WeightsError("trust_remote_code", problem)
        if not missing:
            return dict(request, fetch="none", reason="complete (%d files as the manifest lists them)"
                        % len(manifest["files"]), commit=manifest.get("commit"), files=manifest["files"])
    if source == "local":
        local_dir = spec.get("local_dir") or ""
        problems = folder_problems(local_dir)
        if problems:
            raise WeightsError("local_dir", "%s is not a model folder: %s" % (local_dir, "; ".join(problems)))
        problem = remote_code_problem(local_dir, "the model source {local_dir}", trust, OWN_PATTERNS)
        if problem:
            raise WeightsError("trust_remote_code", problem)
        names = [os.path.relpath(os.path.join(root, f), local_dir)
                 for root, _dirs, files in os.walk(local_dir) for f in files]
        names = [n for n in _selected(names, allow) if n != MANIFEST and not n.startswith(".cache" + os.sep)]
        files = {n: os.path.getsize(os.path.join(local_dir, n)) for n in names}
        in_place = os.path.realpath(local_dir) == os.path.realpath(dest)
        return dict(request, fetch="record" if in_place else "copy", commit=None, files=files,
                    reason="use %s in place" % local_dir if in_place else "copy from %s" % local_dir,
                    missing=missing_files(dest, files) if not in_place else [])
    if source == "modelscope":
        return dict(request, fetch="download", commit=None, files={}, missing=[],
                    reason="fetch %s@%s from ModelScope" % (spec["repo"], spec.get("revision") or "master"))
    if source != "hf":
        raise WeightsError("source", "unknown source %r: use hf, modelscope or local" % source)
    try:
        info = _hub_api(spec.get("endpoint"), spec.get("token")).model_info(
            spec["repo"], revision=spec.get("revision") or None, files_metadata=True)
    except Exception as err:  # pylint: disable=broad-except  # every hub failure is reported with its setting
        raise _hub_error(err, spec) from err
    outside = sorted(x.rfilename for x in info.siblings if not safe_name(x.rfilename))
    if outside:
        # a hub or a mirror names the files: "../../x.json" matches *.json, and joined to the model folder it
        # would be deleted and written outside it
        raise WeightsError("repo", "%s@%s, as %s lists it, names files that would land outside the model folder: %s."
                           " Nothing was fetched: check {endpoint} (the mirror) and the repository"
                           % (spec["repo"], spec.get("revision"), spec.get("endpoint") or "the hub",
                              ", ".join(repr(n) for n in outside[:5])))
    files = {s.rfilename: s.size for s in info.siblings if s.rfilename in _selected(
        [x.rfilename for x in info.siblings], allow)}
    if not any(n.endswith(".safetensors") for n in files):
        raise WeightsError("allow", "%s@%s has no *.safetensors among the files allowed (%s)"
                           % (spec["repo"], spec.get("revision"), ", ".join(allow)))
    code = sorted(n for n in files if n.endswith((".py", ".pyc")))
    if code and not trust:
        raise WeightsError("trust_remote_code", "%s@%s: the files allowed ({allow}: %s) include code that "
                           "loading the model would run: %s. Nothing was fetched. Leave *.py out of {allow}, or, "
                           "only if you trust %s, set %s: true"
                           % (spec["repo"], spec.get("revision"), ", ".join(allow), ", ".join(code[:10]),
                              spec.get("endpoint") or "the hub", TRUST_FIELD))
    sha256 = {s.rfilename: s.lfs.sha256 for s in info.siblings if s.rfilename in files and s.lfs}
    missing = missing_files(dest, files)
    if manifest is not None and manifest.get("commit") == info.sha and not missing:
        return dict(request, fetch="none", commit=info.sha, files=files,
                    reason="complete at commit %s" % info.sha[:12])
    return dict(request, fetch="download", commit=info.sha, files=files, sha256=sha256, missing=missing,
                reason="%d of %d files to fetch at commit %s" % (len(missing), len(files), info.sha[:12]))


def _folder_bytes(dest, files):
    done = 0
    for name in files:
        try:
            done += os.path.getsize(os.path.join(dest, name))
        except OSError:
            pass
    for root, _dirs, names in os.walk(os.path.join(dest, ".cache", "huggingface", "download")):
        done += sum(os.path.getsize(os.path.join(root, n)) for n in names if n.endswith(".incomplete"))
    return done


class Progress:
    """Prints 'fetched X of Y GB (P%), R MB/s' every ``interval`` seconds while a fetch runs."""

    def __init__(self, dest, files, interval=5.0, out=sys.stdout):
        self.dest, self.files, self.interval, self.out = dest, files, interval, out
        self.total = sum(v for v in files.values() if v) or None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def line(self, done, rate):
        total = "%.2f GB (%d%%)" % (self.total / 1e9, 100 * done // self.total) if self.total else "? GB"
        return "fetched %.2f of %s, %.1f MB/s" % (done / 1e9, total, rate / 1e6)

    def _run(self):
        last, last_t = _folder_bytes(self.dest, self.files), time.monotonic()
        while not self._stop.wait(self.interval):
            done, now = _folder_bytes(self.dest, self.files), time.monotonic()
            print(self.line(done, (done - last) / max(now - last_t, 1e-6)), file=self.out, flush=True)
            last, last_t = done, now

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


sha256_file = workspace.sha256_file


def fetch(step, token=None, out=sys.stdout, interval=5.0):
    """Carry out a :func:`plan` result; returns the manifest written."""
    dest = step["dest"]
    os.makedirs(dest, exist_ok=True)
    files = dict(step.get("files") or {})
    print("%s: %s" % (step["fetch"], step["reason"]), file=out, flush=True)
    if step["fetch"] == "download" and step["source"] == "hf":
        from huggingface_hub import snapshot_download  # pylint: disable=import-outside-toplevel
        for name in step.get("missing") or []:
            # a file of the wrong size is damaged, whatever huggingface_hub's own metadata says: fetch it anew
            for path in (os.path.join(dest, name),
                         os.path.join(dest, ".cache", "huggingface", "download", name + ".metadata")):
                if os.path.isfile(path):
                    os.unlink(path)
        with Progress(dest, files, interval, out):
            try:
                # only what is missing: a re-fetch never overwrites the tokenizer files the stage edited
                snapshot_download(step["repo"], revision=step["commit"], local_dir=dest,
                                  allow_patterns=sorted(step.get("missing") or files),
                                  endpoint=step.get("endpoint") or None, token=token or None, max_workers=4)
            except Exception as err:  # pylint: disable=broad-except
                raise _hub_error(err, step) from err
        for name, digest in sorted((step.get("sha256") or {}).items()):
            if name in step.get("missing", files) and sha256_file(os.path.join(dest, name)) != digest:
                raise WeightsError("dest", "%s does not match the hub's sha256 after download: delete it and "
                                   "run again" % name)
    elif step["fetch"] == "download":
        try:
            from modelscope import snapshot_download as ms_download  # pylint: disable=import-outside-toplevel
        except ImportError as err:
            raise WeightsError("source", "ModelScope needs the modelscope package in the training environment: "
                               "%s" % err) from err
        ms_download(step["repo"], revision=step.get("revision") or "master", local_dir=dest,
                    allow_patterns=step["allow"])
        names = [os.path.relpath(os.path.join(r, f), dest) for r, _d, fs in os.walk(dest) for f in fs]
        files = {n: os.path.getsize(os.path.join(dest, n)) for n in _selected(names, step["allow"])
                 if n != MANIFEST and not n.startswith(".")}
    elif step["fetch"] == "copy":
        with Progress(dest, files, interval, out):
            for name in step.get("missing", sorted(files)):
                target = os.path.join(dest, name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                partial = target + ".incomplete"
                shutil.copyfile(os.path.join(step["local_dir"], name), partial)
                os.replace(partial, target)
    missing = missing_files(dest, files)
    if missing:
        raise WeightsError("dest", "after fetching, still missing or of the wrong size: %s" % ", ".join(missing))
    problems = folder_problems(dest)
    if problems:
        raise WeightsError("repo" if step["source"] != "local" else "local_dir",
                           "%s is not a usable model folder: %s" % (dest, "; ".join(problems)))
    # before the manifest that makes the folder complete: a config that asks for code (an auto_map the hub or a
    # mirror added) keeps the folder from ever being recorded as ready
    problem = remote_code_problem(dest, "the model folder {dest}", step.get("trust_remote_code"), OWN_PATTERNS)
    if problem:
        raise WeightsError("trust_remote_code", problem)
    manifest = {k: step.get(k) for k in ("source", "repo", "revision", "local_dir", "allow", "commit")}
    manifest.update(files=files, fetched_at=workspace.now_iso())
    tmp = os.path.join(dest, MANIFEST + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2, sort_keys=True)
    os.replace(tmp, os.path.join(dest, MANIFEST))
    total = sum(v for v in files.values() if v)
    print("complete: %d files, %.2f GB in %s" % (len(files), total / 1e9, dest), file=out, flush=True)
    return manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("fetch", help="carry out a plan written by the assets stage")
    run.add_argument("--plan", required=True, help="the plan (JSON) to carry out")
    run.add_argument("--interval", type=float, default=5.0, help="seconds between progress lines")
    check = sub.add_parser("check", help="say whether a folder is a complete model folder")
    check.add_argument("dest")
    args = parser.parse_args(argv)
    if args.command == "check":
        manifest = _read_manifest(args.dest)
        problems = folder_problems(args.dest)
        if manifest:
            problems += ["missing or wrong size: %s" % n for n in missing_files(args.dest, manifest["files"])]
        print("\n".join(problems) or "complete")
        return 1 if problems else 0
    with open(args.plan, encoding="utf-8") as handle:
        step = json.load(handle)
    try:
        fetch(step, token=os.environ.get("HF_TOKEN") or os.environ.get("MODELSCOPE_API_TOKEN"),
              interval=args.interval)
    except WeightsError as err:
        # the plan's inputs named as the role that wrote it names them (or by their keys in the plan)
        print("error (%s): %s" % (err.field, errors.name_fields(str(err), step.get("setting_names"), FIELDS)),
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
