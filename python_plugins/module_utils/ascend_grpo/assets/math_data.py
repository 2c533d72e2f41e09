"""MATH (problem, level, type, solution) into verl's training format and OpenCompass's math.json.

verl's own ``examples/data_preprocess/math_dataset.py`` at the pinned commit can only download (no offline option)
and registry wheels do not carry it, so this is the project's own preprocessing, producing the same schema:

- ``train.parquet`` / ``test.parquet``: the source columns, plus ``data_source``, ``prompt`` (one user message:
  the problem and the instruction), ``ability`` ("math"), ``reward_model`` ({style: rule, ground_truth: the last
  ``\\boxed{}`` of the solution}) and ``extra_info`` ({split, index});
- ``math.json`` (OpenCompass's MATH reader): the test split as one object keyed ``<type>_<n>``, values
  {problem, level, type, solution}.

The source is the hub (``datasets.load_dataset(repo)``) or local parquet files (``train*.parquet`` and
``test*.parquet`` under a folder), read with ``datasets`` either way. A manifest (``.grpo-data.json``) records what
the outputs were made from; :func:`plan` says whether they are current, so a rerun does no work.
"""

import glob
import json
import os

from ..common import proxy, secrets, workspace
from ..common.errors import FieldError
from ..common.workspace import sha256_file

REQUIRED = ("problem", "level", "type", "solution")
DATA_SOURCE = "DigitalLearningGmbH/MATH-lighteval"
INSTRUCTION = "Let's think step by step and output the final answer within \\boxed{}."
MANIFEST = ".grpo-data.json"
OUTPUTS = ("train.parquet", "test.parquet", "math.json")


class DataError(FieldError):
    """Bad input; ``field`` names the option at fault."""


# The fix for each field a plan can fail on ({field}: the option, which the module names by its role's setting).
FIX = {
    "repo": "set {repo} to a dataset repository that exists.",
    "revision": "set {revision} to a branch, tag or commit of %(repo)s.",
    "endpoint": "check the link or set {endpoint}, or fetch the parquet files elsewhere and use "
                "{source}=local.",
    "local_dir": "set {local_dir} to a folder holding train*.parquet and test*.parquet with the columns "
                 "problem, level, type and solution.",
    "dest": "set {dest} to a folder path.",
    "source": "set {source} to hf or local.",
}


def hidden_values(params):
    """What the math_dataset module keeps out of everything it returns: an endpoint's or the proxy's password."""
    return secrets.credentials_in([params.get("endpoint"), params.get("proxy")])


def module_build(params, check_mode):
    """What the math_dataset module returns for its arguments: :func:`plan` of the one source asked for, then
    :func:`build` unless the outputs are current or in check mode. A refusal is a :class:`DataError` whose message
    ends with the fix. The hub is asked through ``params["proxy"]`` (huggingface_hub and datasets read it from the
    environment); a proxy that cannot be used raises ``common.proxy.ProxyError``."""
    spec = dict(params)
    spec.pop("proxy", None)
    if spec["source"] == "local":
        spec.update(repo=None, revision=None)
    else:
        spec["local_dir"] = None
    try:
        with proxy.proxy_environ(params.get("proxy")):
            step = plan(spec)
            if step["action"] == "none":
                return dict(changed=False, build="none", reason=step["reason"], rows=step["rows"])
            if check_mode:
                return dict(changed=True, build="build", reason=step["reason"], rows={})
            result = build(spec, step)
    except DataError as err:
        raise DataError(err.field, secrets.mask_url("%s. Fix: %s" % (str(err).rstrip("."), FIX.get(
            err.field, FIX["source"]) % {"repo": spec.get("repo")}))) from err
    return dict(changed=True, build="build", reason=step["reason"], **result)


def last_boxed(text):
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``, or ``\\boxed x``) in ``text``, or None.

    Braces nest (``\\boxed{\\frac{1}{2^{3}}}`` gives ``\\frac{1}{2^{3}}``); an escaped brace (``\\{``) does not
    count. An unclosed box gives None.
    """
    if not text:
        return None
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    rest = text[start + (6 if text.startswith("\\boxed", start) else 5):]
    if rest.startswith(" "):  # \boxed 5: up to the end of the word
        word = rest[1:].split("$", 1)[0].split()
        return word[0] if word else None
    if not rest.startswith("{"):
        return None
    depth, i = 0, 0
    while i < len(rest):
        char = rest[i]
        if char == "\\":
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return rest[1:i]
        i += 1
    return None


def verl_row(record, split, index, data_source=DATA_SOURCE, instruction=INSTRUCTION):
    """One training row in verl's format (the source columns kept)."""
    row = {k: record[k] for k in REQUIRED}
    row.update({
        "data_source": data_source,
        "prompt": [{"role": "user", "content": record["problem"] + " " + instruction}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": last_boxed(record["solution"])},
        "extra_info": {"split": split, "index": index},
    })
    return row


def opencompass_json(records):
    """OpenCompass's math.json: ``{"<type>_<n>": {problem, level, type, solution}}``, n counting per type."""
    out, counts = {}, {}
    for record in records:
        n = counts.get(record["type"], 0)
        counts[record["type"]] = n + 1
        out["%s_%d" % (record["type"], n)] = {k: record[k] for k in REQUIRED}
    return out


def local_files(folder):
    """The train and test parquet files under ``folder`` (``train*.parquet``, ``test*.parquet``, any depth)."""
    if not os.path.isdir(folder or ""):
        raise DataError("local_dir", "%s is not a folder" % folder)
    found = {}
    for split in ("train", "test"):
        files = sorted(glob.glob(os.path.join(folder, "**", split + "*.parquet"), recursive=True))
        if not files:
            raise DataError("local_dir", "no %s*.parquet under %s (the hub's layout is data/%s-00000-of-00001"
                            ".parquet)" % (split, folder, split))
        found[split] = files
    return found


def _fingerprint_local(found):
    return {split: [[os.path.abspath(f), os.path.getsize(f), int(os.stat(f).st_mtime)] for f in files]
            for split, files in found.items()}


def _options(spec):
    return {"data_source": spec.get("data_source") or DATA_SOURCE,
            "instruction": spec.get("instruction") or INSTRUCTION}


def _outputs_state(out_dir):
    state = {}
    for name in OUTPUTS:
        path = os.path.join(out_dir, name)
        if os.path.isfile(path):
            state[name] = [os.path.getsize(path), int(os.stat(path).st_mtime)]
    return state


def _read_manifest(out_dir):
    return workspace.read_json(os.path.join(out_dir, MANIFEST))


def plan(spec):
    """Whether the outputs in ``spec["dest"]`` are current; returns {action: none|build, reason, source...}.

    ``spec``: source (hf or local), dest, repo, revision, local_dir, endpoint, token, data_source, instruction,
    cache_dir (datasets' cache).
    The hub is asked for the dataset's commit only when the outputs are not already current for the same request.
    """
    dest = spec["dest"]
    manifest = _read_manifest(dest)
    request = {"source": spec["source"], "repo": spec.get("repo"), "revision": spec.get("revision"),
               "local_dir": spec.get("local_dir"), "options": _options(spec)}
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise DataError("dest", "%s exists and is not a folder" % dest)
    if spec["source"] == "local":
        request["input"] = _fingerprint_local(local_files(spec.get("local_dir")))
    elif spec["source"] == "hf":
        # current for the same request: decided from the manifest, without asking the hub for its commit
        if _current(manifest, request, dest):
            return dict(request, dest=dest, action="none", rows=manifest["rows"],
                        reason="current (%s@%s)" % (spec["repo"], manifest["input"]))
        request["input"] = _hub_commit(spec)
    else:
        raise DataError("source", "unknown source %r: use hf or local" % spec["source"])
    if _current(manifest, request, dest):
        return dict(request, dest=dest, action="none", rows=manifest["rows"], reason="current")
    changed = [n for n in OUTPUTS if os.path.exists(os.path.join(dest, n))]
    return dict(request, dest=dest, endpoint=spec.get("endpoint"), action="build",
                reason="outputs missing" if not changed else "outputs out of date", replaces=changed)


def _current(manifest, request, dest):
    """Whether the outputs in ``dest`` are what ``manifest`` says this request made, untouched since."""
    return bool(manifest) and all(manifest.get(k) == v for k, v in request.items()) \
        and manifest.get("outputs") == _outputs_state(dest)


def _hub_commit(spec):
    from huggingface_hub import HfApi, errors  # pylint: disable=import-outside-toplevel
    where = spec.get("endpoint") or "the hub"
    try:
        info = HfApi(endpoint=spec.get("endpoint") or None, token=spec.get("token") or None).dataset_info(
            spec["repo"], revision=spec.get("revision") or None)
    except errors.RevisionNotFoundError as err:
        raise DataError("revision", "dataset %s has no revision %r at %s" % (spec["repo"], spec.get("revision"),
                                                                            where)) from err
    except errors.RepositoryNotFoundError as err:
        raise DataError("repo", "no dataset repository %s at %s" % (spec["repo"], where)) from err
    except Exception as err:  # pylint: disable=broad-except  # any other failure: the endpoint
        raise DataError("endpoint", "could not reach %s for dataset %s: %s" % (where, spec["repo"], err)) from err
    return info.sha


def _load(spec, step):
    """The train and test splits as ``datasets.Dataset`` objects (hub or local parquet)."""
    if spec.get("endpoint"):
        os.environ["HF_ENDPOINT"] = spec["endpoint"]  # datasets and huggingface_hub read it when imported
    import datasets  # pylint: disable=import-outside-toplevel
    if spec.get("endpoint") and datasets.config.HF_ENDPOINT != spec["endpoint"]:
        # imported before with another endpoint (in this process): datasets hands its own to huggingface_hub
        datasets.config.HF_ENDPOINT = spec["endpoint"]
        datasets.config.HUB_DATASETS_URL = spec["endpoint"] + "/datasets/{repo_id}/resolve/{revision}/{path}"
    datasets.disable_progress_bars()
    cache = spec.get("cache_dir") or None  # the workspace's, so nothing lives only in a container
    if spec["source"] == "local":
        found = local_files(spec["local_dir"])
        loaded = datasets.load_dataset("parquet", data_files=found, cache_dir=cache)
    else:
        loaded = datasets.load_dataset(spec["repo"], revision=step["input"], token=spec.get("token") or None,
                                       cache_dir=cache)
    for split in ("train", "test"):
        if split not in loaded:
            raise DataError("repo" if spec["source"] == "hf" else "local_dir",
                            "the dataset has no %s split (it has %s)" % (split, ", ".join(loaded)))
        absent = [c for c in REQUIRED if c not in loaded[split].column_names]
        if absent:
            raise DataError("local_dir" if spec["source"] == "local" else "repo",
                            "the %s split lacks column(s) %s (it has %s); MATH needs %s"
                            % (split, ", ".join(absent), ", ".join(loaded[split].column_names),
                               ", ".join(REQUIRED)))
    return loaded


def build(spec, step):
    """Write the outputs for a ``build`` plan; returns {rows: {train, test}, dropped: {...}, backups: [...]}."""
    loaded = _load(spec, step)
    dest = spec["dest"]
    os.makedirs(dest, exist_ok=True)
    options = _options(spec)
    rows, dropped, staged = {}, {}, {}
    for split in ("train", "test"):
        data = loaded[split]
        keep = [i for i, solution in enumerate(data["solution"]) if last_boxed(solution) is not None]
        dropped[split] = len(data) - len(keep)
        data = data.select(keep)
        mapped = data.map(lambda record, index, s=split: verl_row(record, s, index, **options), with_indices=True,
                          remove_columns=[c for c in data.column_names if c not in REQUIRED])
        rows[split] = len(mapped)
        staged[split + ".parquet"] = os.path.join(dest, ".%s.parquet.tmp" % split)
        mapped.to_parquet(staged[split + ".parquet"])
        if split == "test":
            staged["math.json"] = os.path.join(dest, ".math.json.tmp")
            with open(staged["math.json"], "w", encoding="utf-8") as handle:
                json.dump(opencompass_json(data.select_columns(list(REQUIRED)).to_list()), handle,
                          ensure_ascii=False, indent=1)
    backups = []
    manifest = _read_manifest(dest)
    for name, tmp in staged.items():
        path = os.path.join(dest, name)
        ours = manifest and manifest.get("outputs", {}).get(name) == _outputs_state(dest).get(name)
        if os.path.exists(path) and not ours:
            # not what this stage wrote last (edited, or from elsewhere): keep it
            backup = workspace.backup_path(path)
            os.replace(path, backup)
            backups.append(backup)
        os.replace(tmp, path)
    record = {k: step[k] for k in ("source", "repo", "revision", "local_dir", "options", "input")}
    record.update(rows=rows, dropped=dropped, outputs=_outputs_state(dest),
                  sha256={n: sha256_file(os.path.join(dest, n)) for n in OUTPUTS},
                  built_at=workspace.now_iso())
    with open(os.path.join(dest, MANIFEST), "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
    return {"rows": rows, "dropped": dropped, "backups": backups}
