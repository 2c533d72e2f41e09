"""A support bundle: what maintainers ask for when a run fails, in one archive, with every secret taken out.

:func:`redact` takes out, from any text: the secrets given (the hub token, the registry password, the Ray token,
values of environment variables marked secret; longest first, so a secret that holds another goes whole), the
credentials of every URL (``https://user:password@host`` -> ``https://***@host``), and the value of every
``NAME=value`` / ``NAME: value`` whose name says it is secret (TOKEN, PASSWORD, PASSWD, SECRET, API_KEY, ...).
:func:`write` puts the members into a gzipped tar, each redacted, owner root and mode 0644, and lists them.

Standard library only.
"""

import io
import os
import re
import tarfile
import time

REDACTED = "***"
MIN_SECRET = 4  # shorter values would take out ordinary words
_URL_CREDENTIALS = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'\"]+@")
# a name that ends in a secret word (HF_TOKEN, registry_password): not max_num_batched_tokens, not RAY_AUTH_TOKEN_PATH
_SECRET_NAME = (r"[A-Za-z0-9_]*"
                r"(?:TOKEN|PASSWORD|PASSWD|SECRET|SECRET_KEY|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)")
_SECRET_ASSIGNMENT = re.compile(r"(?i)\b(%s)\b(['\"]?\s*[=:]\s*)(['\"]?)([^\s'\",]+)(\3)" % _SECRET_NAME)


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


def redact(text, secrets):
    """``text`` with the secrets, URL credentials and secret-named assignments replaced by ``***``; and how many
    replacements were made."""
    count = 0
    for secret in secrets:
        if secret in text:
            count += text.count(secret)
            text = text.replace(secret, REDACTED)
    text, n = _URL_CREDENTIALS.subn(lambda m: m.group(1) + REDACTED + "@", text)
    count += n

    def assignment(match):
        if match.group(4) == REDACTED:
            return match.group(0)
        return match.group(1) + match.group(2) + match.group(3) + REDACTED + match.group(5)
    text, n = _SECRET_ASSIGNMENT.subn(assignment, text)
    count += n
    return text, count


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
