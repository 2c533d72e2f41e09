"""A support bundle: what maintainers ask for when a run fails, in one archive, with every secret taken out.

:func:`redact` takes out, from any text: the secrets given (the hub token, the registry password, the Ray token,
values of environment variables whose names say secret or that are marked so, the wandb key; longest first, so a
secret that holds another goes whole), the credentials of every URL whatever they hold (``https://user:pa/ss@host``
-> ``https://***@host``), signature query parameters, tokens of the well-known shapes (``hf_``, ``ghp_``,
``github_pat_``, ``AKIA``, ``sk-``, ``xoxb-``, JWTs), and the whole value of every ``NAME=value`` / ``NAME: value``
whose name says it is secret (ascend_grpo.common.secrets.secret_name: TOKEN, KEY, SECRET, PASS, PAT, AUTH, ...).
:func:`write` puts the members into a gzipped tar, each redacted, owner root and mode 0644, and lists them.
:func:`make` is the ``grpo_bundle`` module's whole work: :func:`collect` the members (pip freeze through the
caller's ``run_command``), then write them, or in check mode only name them.

Standard library only.
"""

import glob
import io
import json
import os
import re
import shlex
import tarfile
import time

from ..common import secrets as masking

REDACTED = "***"
MIN_SECRET = 4  # shorter values would take out ordinary words
# NAME=value, NAME: value, "NAME": "value", NAME='a value with spaces': the whole value, quoted or not
_ASSIGNMENT = re.compile(r"""\b([A-Za-z_][A-Za-z0-9_.-]*)(['"]?[ \t]*[=:][ \t]*)"""
                         r"""(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'|([^\s'",]+))""")
# values a secret-named setting holds that are no secret (ray_cluster_auth: token)
_NOT_SECRET_VALUES = {"token", "none", "true", "false", "yes", "no", "on", "off", "null", "", REDACTED}


# Files that hold secrets as they are, never collected wherever they sit: the secret environment a job keeps for
# the resume hook's relaunch (common.jobs.SECRET_ENV), the Ray token.
NEVER_COLLECTED = ("secret-env.json", "token")


def secrets_of(values):
    """The secret strings among ``values`` (strings, lists and mappings, nested), each once, longest first; empty
    and too short ones left out (a placeholder such as '' is no secret)."""
    found = set()

    def walk(value):
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif isinstance(value, str) and len(value.strip()) >= MIN_SECRET:
            found.add(value.strip())
    walk(values)
    return sorted(found, key=lambda s: (-len(s), s))


def _forms(secret):
    """A secret as a text may hold it: as it is, JSON-escaped, shell-quoted."""
    return [f for f in dict.fromkeys([secret, json.dumps(secret)[1:-1], shlex.quote(secret)]) if f]


def redact(text, secrets):
    """``text`` with the secrets (by value, longest first, also JSON-escaped or shell-quoted), URL credentials (any
    characters), signature query parameters, tokens of the well-known shapes and the whole values of secret-named
    assignments (quoted ones with their spaces) replaced by ``***``; and how many replacements were made."""
    count = 0
    for secret in secrets:
        for form in _forms(secret):
            if form in text:
                count += text.count(form)
                text = text.replace(form, REDACTED)
    text, n = masking.mask_userinfo(text)
    count += n
    masked = masking.mask_url(text)  # the signature parameters (the user part is masked already)
    count += masked.count(REDACTED) - text.count(REDACTED)
    text, n = masking.mask_tokens(masked)
    count += n

    def assignment(match):
        name, sep = match.group(1), match.group(2)
        value = next(v for v in (match.group(3), match.group(4), match.group(5)) if v is not None)
        if not masking.secret_name(name) or value.strip().lower() in _NOT_SECRET_VALUES:
            return match.group(0)
        quote = '"' if match.group(3) is not None else "'" if match.group(4) is not None else ""
        assignment.count += 1
        return name + sep + quote + REDACTED + quote
    assignment.count = 0
    text = _ASSIGNMENT.sub(assignment, text)
    return text, count + assignment.count


def tail(path, max_lines, max_bytes=1 << 20):
    """The last ``max_lines`` lines of a text file (reading at most its last ``max_bytes``), or None when it is not
    there."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - max_bytes))
        data = handle.read().decode("utf-8", errors="replace")
    return "\n".join(data.split("\n")[-max_lines - 1:])


def newest(folder, pattern, count):
    """The ``count`` newest files under ``folder`` (walked) whose names match ``pattern`` (a regex)."""
    found = []
    if os.path.isdir(folder):
        for root, _dirs, files in os.walk(folder):
            for name in files:
                if re.search(pattern, name):
                    path = os.path.join(root, name)
                    try:
                        found.append((os.path.getmtime(path), path))
                    except OSError:
                        continue
    return [path for _mtime, path in sorted(found, reverse=True)[:count]]


def write(path, members, secrets):
    """Write ``members`` ({name in the archive: text}) redacted into the gzipped tar ``path`` (0600: until its owner
    has read it, it is theirs). Returns {"members": [names], "redacted": count}."""
    total = 0
    now = int(time.time())
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = path + ".partial"
    with tarfile.open(partial, "w:gz") as archive:
        for name in sorted(members):
            text, count = redact(members[name] if members[name] is not None else "", secrets)
            total += count
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode, info.uid, info.gid = len(data), now, 0o644, 0, 0
            archive.addfile(info, io.BytesIO(data))
    os.chmod(partial, 0o600)
    os.replace(partial, path)
    return {"members": sorted(members), "redacted": total}


def _read(path, limit=1 << 20):
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", errors="replace")


def collect(run_command, p):
    """{name in the archive: text} of everything the bundle holds (``p``: the ``grpo_bundle`` module's arguments;
    ``run_command``: ``module.run_command`` or one of its shape, for pip freeze)."""
    members = dict(p["texts"])
    rc, out, err = run_command([p["python"], "-m", "pip", "freeze", "--all"])
    members["pip-freeze.txt"] = out if rc == 0 else "pip freeze failed (%d): %s" % (rc, err)
    for name in ("run_grpo.sh", ".launch.json"):
        text = _read(os.path.join(p["run_dir"], name))
        if text is not None:
            members["run/" + name.lstrip(".")] = text
    log = os.path.join(p["run_dir"], "logs", "latest.log")
    if os.path.isfile(log):
        with open(log, "rb") as handle:
            head = handle.read(1 << 20).decode("utf-8", errors="replace").split("\n")[:300]
        members["run/latest.log.head"] = "\n".join(head)
        members["run/latest.log.tail"] = tail(log, p["log_lines"])
    state = os.path.join(p["workspace"], ".grpo")
    for path in sorted(glob.glob(os.path.join(state, "*.json")) + glob.glob(os.path.join(state, "jobs", "*.json"))):
        if os.path.basename(path) in NEVER_COLLECTED:
            continue
        members["records/" + os.path.relpath(path, state)] = _read(path)
    for path in newest(p["plog_dir"], r"\.log$", 3):
        members["plog/" + os.path.basename(path) + ".tail"] = tail(path, p["log_lines"])
    return members


def make(p, check_mode, run_command):
    """One call of the ``grpo_bundle`` module (``p``: its arguments): the result for ``exit_json``. The secrets
    are the ones given and the text of each secret file (up to 64 KiB, stripped)."""
    found = list(p["secrets"])
    for path in p["secret_files"]:
        text = _read(path, 65536)
        if text and text.strip():
            found.append(text.strip())
    members = collect(run_command, p)
    if check_mode:
        return dict(changed=True, path=p["dest"], members=sorted(members), redacted=0)
    done = write(p["dest"], members, secrets_of(found))
    return dict(changed=True, path=p["dest"], **done)
