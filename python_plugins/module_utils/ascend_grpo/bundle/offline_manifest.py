"""The offline bundle's manifest: every file of the bundle with its size and sha256, written on the exporting host
and checked on the host without network before anything in the bundle is used.

An offline bundle is a folder (``wheels/``, ``verl/``, ``model/``, ``data/``, ``sample/``, ``image/``) that
``--tags export`` fills on a connected host and a user copies to a host with no network. :func:`write` lists every
plain file in it as a member of ``MANIFEST.json`` (size and sha256, keyed by the file's POSIX path below the
bundle) and writes the same sums as ``SHA256SUMS``, so a person can check a copy by hand::

    cd bundle && sha256sum -c SHA256SUMS

:func:`verify` checks the members of the parts a stage is about to use: a member that is missing, of another size
or of another sha256, a file the manifest does not list (pip's ``--find-links`` would take a wheel planted beside
the others) and a link are each a problem; all of them are named at once, each with what to do.

A converged rerun must take seconds, and a bundle holds gigabytes (wheels ~5 GB, the image up to 10 GB), so
:func:`verify` can keep a *memo* outside the bundle (the bundle may be read-only): per member, the file's size,
mtime_ns, ctime_ns, inode and device when its sha256 was last proven. A member whose stat still matches its memo
entry, and whose proven sha256 is the manifest's, is not hashed again. The memo belongs to one manifest (its own
sha256) and one bundle folder; another manifest or folder makes it start over.

The limit of the memo: it trusts the file system's stat. A file changed in place keeps its size only by chance,
and its mtime only if someone sets it back (``os.utime``, ``touch -d``); setting it back moves the ctime, which the
memo also compares, so that case is caught too. What the memo cannot see is a change that leaves all of size,
mtime, ctime, inode and device as they were (a write to the raw device, a clock set back around a write, a file
system that does not keep ctime), nor a change within the same tick of the file system's clock as the proof. So
the first check of a bundle on a host (no memo, or a memo of another manifest) always hashes every member it
checks, and anyone who doubts a bundle checks it without the memo (or runs ``sha256sum -c``). Neither the memo nor the manifest guards against someone who may rewrite ``MANIFEST.json``
itself: the manifest proves the copy is the export, not who made the export.

Standard library only (and the package's own ``common`` helpers): it runs in the training environment, as part of
modules.
"""

import hashlib
import json
import os
import re
import stat

from ..common import errors, workspace

MANIFEST = "MANIFEST.json"
SUMS = "SHA256SUMS"
FORMAT = 1
MEMO_FORMAT = 1
CHUNK = 1 << 20  # 1 MiB
SHOWN = 10  # problems a message lists; the result carries them all
_HEX = re.compile(r"^[0-9a-f]{64}$")
_NOT_A_BUNDLE = "not a bundle made by --tags export: export it again"
_COPY_AGAIN = "copy it again from the exporting host, or export again"


class BundleError(errors.StageFailure):
    """A bundle that cannot be written or read: the message names the file and what to do."""


def _walk(root, top=None):
    """(files, refused) below ``root`` (or only below its entry ``top``): ``files`` {POSIX path: lstat} of the
    plain files, sorted; ``refused`` {POSIX path: what it is} of every link and every other non-regular entry (a
    linked folder is not entered). The manifest and the sums at the top are left out."""
    files, refused = {}, {}

    def kind(st):
        if stat.S_ISLNK(st.st_mode):
            return "a symbolic link"
        return "not a plain file (mode %o)" % stat.S_IFMT(st.st_mode)

    def visit(folder, prefix):
        with os.scandir(folder) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            if not prefix and name in (MANIFEST, SUMS):
                continue
            rel, path = prefix + name, os.path.join(folder, name)
            st = os.lstat(path)
            if stat.S_ISDIR(st.st_mode):
                visit(path, rel + "/")
            elif stat.S_ISREG(st.st_mode):
                files[rel] = st
            else:
                refused[rel] = kind(st)

    if top is None:
        visit(root, "")
    else:
        try:
            st = os.lstat(os.path.join(root, top))
        except FileNotFoundError:
            return files, refused
        if stat.S_ISDIR(st.st_mode):
            visit(os.path.join(root, top), top + "/")
        elif stat.S_ISREG(st.st_mode):
            files[top] = st
        else:
            refused[top] = kind(st)
    return files, refused


def _under(rel, paths):
    """Whether ``rel`` or a folder above it is one of ``paths``."""
    parts = rel.split("/")
    return any("/".join(parts[:n]) in paths for n in range(1, len(parts) + 1))


def _part(rel):
    return rel.split("/", 1)[0]


def _open_plain(path):
    """A descriptor of the plain file ``path``, never through a link as its last part."""
    return os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))


def _hash(fd):
    """(sha256 hex, bytes read) of an open file, in 1 MiB chunks."""
    digest, size, buf = hashlib.sha256(), 0, bytearray(CHUNK)
    view = memoryview(buf)
    with os.fdopen(fd, "rb", buffering=0, closefd=False) as handle:
        while True:
            got = handle.readinto(buf)
            if not got:
                return digest.hexdigest(), size
            digest.update(view[:got])
            size += got


def _sums_line(rel, sha):
    return "%s  %s\n" % (sha, rel)


def manifest_text(manifest):
    """The text of MANIFEST.json for ``manifest``: the same manifest always gives the same bytes."""
    return json.dumps(manifest, indent=1, sort_keys=True) + "\n"


def sums_text(manifest):
    """SHA256SUMS for ``manifest``, in the format ``sha256sum -c`` reads (text mode: two spaces)."""
    return "".join(_sums_line(rel, member["sha256"]) for rel, member in sorted(manifest["members"].items()))


def build(root, meta):
    """The manifest of what ``root`` holds now (every plain file hashed). A link or any other non-regular file is
    refused, naming it: a bundle holds plain files. A name ``sha256sum -c`` would read otherwise (a newline, a
    backslash) is refused too."""
    if not os.path.isdir(root):
        raise BundleError("%s is no folder: the offline bundle is a folder that --tags export fills" % root)
    files, refused = _walk(root)
    if refused:
        raise BundleError("%s holds %s: a bundle holds plain files. Replace each with the file itself (cp -L, or "
                          "move the file there) or remove it, then write the manifest again"
                          % (root, "; ".join("%s (%s)" % (rel, what) for rel, what in sorted(refused.items()))))
    odd = [rel for rel in files if any(c in rel for c in "\\\n\r")]
    if odd:
        raise BundleError("%s holds files whose names sha256sum -c would not read (a backslash or a line break): "
                          "%s. Rename them, then write the manifest again" % (root, ", ".join(map(repr, odd))))
    members, parts = {}, {}
    for rel in files:
        fd = _open_plain(os.path.join(root, rel))
        try:
            sha, size = _hash(fd)
        finally:
            os.close(fd)
        members[rel] = {"size": size, "sha256": sha}
        part = parts.setdefault(_part(rel), {"files": 0, "bytes": 0})
        part["files"] += 1
        part["bytes"] += size
    return {"format": FORMAT, "meta": meta or {}, "members": members, "parts": parts,
            "bytes": sum(m["size"] for m in members.values())}


def write_manifest(root, meta, check_mode=False):
    """(manifest, changed): :func:`build`, then SHA256SUMS and MANIFEST.json written (the manifest last), each only
    when its text differs; ``changed`` is whether MANIFEST.json changes. Nothing is written in check mode."""
    manifest = build(root, meta)
    try:
        workspace.write_text(os.path.join(root, SUMS), sums_text(manifest), mode=0o644, check_mode=check_mode,
                             root=root)
        changed, _ = workspace.write_text(os.path.join(root, MANIFEST), manifest_text(manifest), mode=0o644,
                                          check_mode=check_mode, root=root)
    except OSError as err:
        raise BundleError("the manifest of %s cannot be written: %s" % (root, err)) from err
    return manifest, changed


def write(root, meta, check_mode=False):
    """Write MANIFEST.json and SHA256SUMS of the bundle ``root`` (see :func:`write_manifest`); returns the
    manifest."""
    return write_manifest(root, meta, check_mode)[0]


def _safe_rel(rel):
    parts = rel.split("/") if isinstance(rel, str) else [""]
    return rel not in (MANIFEST, SUMS) and all(p not in ("", ".", "..") for p in parts)


def read_manifest(root, field="bundle"):
    """(manifest, its sha256) of the bundle ``root``. A bundle without one, or with one that is not a manifest
    of this format (unreadable, another format, a member path that leaves the bundle, a size or sum that is none)
    is refused as not a bundle."""
    def refuse(why):
        raise errors.FieldError(field, "{%s} (%s): %s; %s" % (field, root, why, _NOT_A_BUNDLE),
                                {"path": root})

    path = os.path.join(root, MANIFEST)
    try:
        fd = _open_plain(path)
    except FileNotFoundError:
        refuse("%s is missing" % MANIFEST)
    except OSError as err:
        if os.path.islink(path):
            refuse("%s is a symbolic link" % MANIFEST)
        refuse("%s cannot be read (%s)" % (MANIFEST, err.strerror or err))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            refuse("%s is not a plain file" % MANIFEST)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            raw = handle.read()
    finally:
        os.close(fd)
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except ValueError:
        refuse("%s is not JSON" % MANIFEST)
    members = manifest.get("members") if isinstance(manifest, dict) else None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(members, dict):
        refuse("%s is not a manifest of format %d" % (MANIFEST, FORMAT))
    for rel, member in members.items():
        if not (_safe_rel(rel) and isinstance(member, dict) and type(member.get("size")) is int
                and member["size"] >= 0 and isinstance(member.get("sha256"), str) and _HEX.match(member["sha256"])):
            refuse("%s lists %r, which is no member a bundle can hold" % (MANIFEST, rel))
    return manifest, hashlib.sha256(raw).hexdigest()


def _stat_key(st):
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _memo_path(memo, root, field):
    """``memo`` as an absolute path, refused when it lies inside the bundle or it or its folder is a link."""
    memo = os.path.abspath(memo)
    folder = os.path.dirname(memo)
    real_root = os.path.realpath(root)
    real_memo = os.path.join(os.path.realpath(folder), os.path.basename(memo))
    if real_memo == real_root or real_memo.startswith(real_root.rstrip(os.sep) + os.sep):
        raise errors.FieldError("memo", "{memo} (%s) lies inside {%s} (%s): the memo is kept outside the bundle "
                                "(which may be read-only, and whose every file is a member); name a file of the "
                                "workspace's state folder" % (memo, field, root))
    for path, what in ((folder, "its folder"), (memo, "it")):
        if os.path.islink(path):
            raise errors.FieldError("memo", "{memo} (%s): %s is a symbolic link (to %s); the memo is never read or "
                                    "written through a link. Remove the link (rm %s) or name another file"
                                    % (memo, what, os.readlink(path), path))
    return memo


def _read_memo(memo, root, manifest_sha):
    """The memo's entries {member: [size, mtime_ns, ctime_ns, inode, device, sha256]} when it belongs to this
    manifest and this bundle folder; otherwise (none yet, unreadable, another manifest) none: a memo that cannot
    be used only costs hashing again."""
    try:
        fd = _open_plain(memo)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except ValueError:
        return {}
    finally:
        os.close(fd)
    if (not isinstance(data, dict) or data.get("format") != MEMO_FORMAT or data.get("manifest_sha256") != manifest_sha
            or data.get("bundle") != os.path.realpath(root) or not isinstance(data.get("members"), dict)):
        return {}
    return {rel: entry for rel, entry in data["members"].items() if isinstance(entry, list) and len(entry) == 6}


def _write_memo(memo, root, manifest_sha, entries):
    """The memo written atomically (a new file of mode 0600 opened with O_NOFOLLOW, renamed over the memo; its
    folder made when missing and never reached through a link)."""
    text = json.dumps({"format": MEMO_FORMAT, "manifest_sha256": manifest_sha, "bundle": os.path.realpath(root),
                       "members": entries}, sort_keys=True) + "\n"
    folder = os.path.dirname(memo)
    try:
        workspace.write_text(memo, text, mode=0o600, root=os.path.dirname(folder))
    except OSError as err:
        raise errors.FieldError("memo", "{memo} (%s) cannot be written: %s" % (memo, err)) from err


def verify(root, parts=None, memo=None, check_mode=False, field="bundle"):
    """Check the members of the bundle ``root`` under the top-level ``parts`` (None: all) against its manifest.

    Every problem is collected (a member missing, of another size or sha256; a file inside a checked part that the
    manifest does not list; a link or other non-regular file there; a part the manifest does not hold), then one
    :class:`~ascend_grpo.common.errors.FieldError` on ``field`` names up to ten of them and how many more (the
    result carries them all). A bundle without a readable manifest of this format is refused as not a bundle.

    ``memo``: a JSON file outside the bundle that remembers the members already proven (see the module's
    docstring for what it trusts); written only when it changes, never in check mode. Returns ``members`` (how
    many were checked), ``hashed`` and ``bytes_hashed`` (what was read this time), ``bytes`` (the checked members'
    total), the manifest's ``meta``, its ``manifest_sha256`` and the ``parts`` checked."""
    if not os.path.isdir(root):
        raise errors.FieldError(field, "{%s} (%s) is no folder; %s" % (field, root, _NOT_A_BUNDLE), {"path": root})
    if memo:
        memo = _memo_path(memo, root, field)
    manifest, manifest_sha = read_manifest(root, field)
    members = manifest["members"]
    held = sorted({_part(rel) for rel in members})
    problems, checked = [], []
    if parts is None:
        wanted = held
    else:
        wanted = []
        for part in parts:
            if part not in held:
                problems.append("the bundle holds no %s/: export it with --tags export on a connected host, with "
                                "%s among what it exports" % (part, part))
            elif part not in wanted:
                wanted.append(part)
    files, refused = {}, {}
    if parts is None:
        files, refused = _walk(root)
    else:
        for part in wanted:
            found, odd = _walk(root, part)
            files.update(found)
            refused.update(odd)
    for rel, what in sorted(refused.items()):
        problems.append("%s is %s: a bundle holds plain files; remove it, then %s" % (rel, what, _COPY_AGAIN))
    for rel in sorted(files):
        if rel not in members:
            problems.append("%s is not in the manifest (pip's --find-links would take a wheel planted there): "
                            "remove it, or export again" % rel)
    known = _read_memo(memo, root, manifest_sha) if memo else {}
    proven = {rel: entry for rel, entry in known.items() if rel in members and entry[5] == members[rel]["sha256"]}
    result = {"members": 0, "hashed": 0, "bytes_hashed": 0, "bytes": 0, "meta": manifest.get("meta") or {},
              "manifest_sha256": manifest_sha, "parts": list(wanted)}
    for rel in sorted(r for r in members if _part(r) in wanted):
        want = members[rel]
        result["members"] += 1
        result["bytes"] += want["size"]
        checked.append(rel)
        st = files.get(rel)
        if st is None:
            proven.pop(rel, None)
            if not _under(rel, refused):  # a link in its place (or a folder's) is named above
                problems.append("%s is missing: %s" % (rel, _COPY_AGAIN))
            continue
        if st.st_size != want["size"]:
            problems.append("%s has %d bytes where the manifest says %d: %s" % (rel, st.st_size, want["size"],
                                                                                 _COPY_AGAIN))
            proven.pop(rel, None)
            continue
        entry = proven.get(rel)
        if entry is not None and entry[:5] == _stat_key(st):
            continue
        fd = _open_plain(os.path.join(root, rel))
        try:
            before = os.fstat(fd)
            sha, size = _hash(fd)
        finally:
            os.close(fd)
        result["hashed"] += 1
        result["bytes_hashed"] += size
        if sha != want["sha256"] or size != want["size"]:
            problems.append("%s differs from the manifest (sha256 %s, not %s): %s" % (rel, sha, want["sha256"],
                                                                                     _COPY_AGAIN))
            proven.pop(rel, None)
        else:
            proven[rel] = _stat_key(before) + [sha]
    if memo and not check_mode and proven != known:
        _write_memo(memo, root, manifest_sha, proven)
    if problems:
        shown = "\n".join("- " + p for p in problems[:SHOWN])
        more = "\n... and %d more" % (len(problems) - SHOWN) if len(problems) > SHOWN else ""
        raise errors.FieldError(field, "{%s} (%s) is not the bundle its manifest describes (%d problem%s):\n%s%s"
                                % (field, root, len(problems), "" if len(problems) == 1 else "s", shown, more),
                                dict(result, problems=problems))
    return result


def run(params, check_mode=False):
    """The ``offline_bundle`` module's whole work: ``state`` present writes the manifest of what ``path`` holds
    (``changed`` when MANIFEST.json changes), verified checks it (never a change)."""
    root = params["path"]
    parts = params.get("parts")
    for part in parts or ():
        if not part or "/" in part or part in (".", "..") or part in (MANIFEST, SUMS):
            raise errors.FieldError("parts", "{parts} holds %r: each part is a top-level folder of the bundle "
                                    "(wheels, verl, model, data, sample, image)" % (part,))
    if params.get("state", "verified") == "present":
        manifest, changed = write_manifest(root, params.get("meta") or {}, check_mode)
        return {"changed": changed, "path": root, "members": len(manifest["members"]), "bytes": manifest["bytes"],
                "parts": manifest["parts"], "meta": manifest["meta"]}
    result = verify(root, parts, params.get("memo"), check_mode, field="path")
    return dict(result, changed=False, path=root)
