# -*- coding: utf-8 -*-
"""verl's source as a tarball: prove it is the commit asked for before anything in the workspace changes.

``git archive`` of a commit stores the commit id in the tar's pax global header (the ``comment`` record that
``git get-tar-commit-id`` prints; Python's tarfile exposes it as ``TarFile.pax_headers["comment"]``). That id, or
the file's sha256 for tarballs git did not make, is the proof. :func:`prove_tarball` reads the file once, as a
stream (nothing is extracted, nothing written), and returns what it found or raises :class:`TarballError` with a
message naming the input to change as ``{field}``, an option of the ``verl_tarball`` module (``{path}``, ``{commit}``,
``{sha256}``), which names the deps stage's setting (deps_pinning_verl_tarball, deps_pinning_verl_version,
deps_pinning_verl_tarball_sha256).

Standard library only: it runs inside the training environment.
"""

import hashlib
import re
import tarfile

# the inputs a refusal names, as the verl_tarball module's options
PATH_FIELD = "{path}"
SHA256_FIELD = "{sha256}"
COMMIT_FIELD = "{commit}"
NOTHING_DONE = "Nothing was moved or replaced."

_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # sha1, or sha256 object format
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


class TarballError(Exception):
    """A refusal; the message names the input at fault (``{field}``) and says nothing was changed."""


class _HashingReader(object):
    """A file object that hashes every byte read through it, so one pass gives both the tar and the sha256."""

    def __init__(self, handle):
        self._handle = handle
        self.digest = hashlib.sha256()

    def read(self, size=-1):
        data = self._handle.read(size)
        self.digest.update(data)
        return data

    def drain(self):
        """Hash what the tar reader left unread (end-of-archive padding, the gzip trailer)."""
        while self.read(_CHUNK):
            pass
        return self.digest.hexdigest()


def _strip_components(names):
    """How many leading folders ``tar --strip-components`` must drop so verl/__init__.py lands at the top.

    1 for ``git archive --prefix=DIR/`` (every member under one folder), 0 for an archive of the tree itself;
    None when neither puts verl/__init__.py at the top."""
    split = [[p for p in name.split("/") if p] for name in names]
    split = [parts for parts in split if parts]
    if split and len({parts[0] for parts in split}) == 1 and any(p[1:] == ["verl", "__init__.py"] for p in split):
        return 1
    if any(parts == ["verl", "__init__.py"] for parts in split):
        return 0
    return None


def _where(path, origin):
    return "%s: %s%s" % (PATH_FIELD, path, " (downloaded from %s)" % origin if origin else "")


def _nothing_done(path, origin):
    """The closing sentence; a downloaded file is kept, so say how to get a fresh one."""
    return ("Delete %s to download it again. " % path if origin else "") + NOTHING_DONE


def member_problem(member, strip=0):
    """Why one tar member must not be unpacked (None when it may): a name that is absolute or climbs out with
    '..', a link whose target leaves the tree, a device, a FIFO.

    ``strip``: the ``tar --strip-components`` it will be unpacked with. A link is judged where it lands after the
    strip (the leading folders are gone, so ``top/a -> ../x`` climbs out of the destination), and a hard link's
    target loses the same leading folders, as GNU tar strips it."""
    parts = member.name.split("/")
    if member.name.startswith("/") or ".." in parts:
        return "its name leaves the folder"
    if member.ischr() or member.isblk() or member.isfifo():
        return "a device or FIFO"
    if member.issym() or member.islnk():
        target = member.linkname
        if target.startswith("/"):
            return "a link to an absolute path"
        kept = [p for p in parts if p][strip:]
        if member.issym():
            base, path = kept[:-1], target.split("/")
        else:  # a hard link names another member, from the top of the archive
            named = [p for p in target.split("/") if p]
            if ".." in named or len(named) <= strip:  # a member's name never climbs; one the strip removes is gone
                return "a link that leads out of the folder"
            base, path = [], named[strip:]
        depth = 0
        for part in base + path:
            if part == "..":
                depth -= 1
                if depth < 0:
                    return "a link that leads out of the folder"
            elif part not in ("", "."):
                depth += 1
    elif not (member.isfile() or member.isdir()):
        return "not a file, folder or link"
    return None


def read_tarball(path, origin=None):
    """Read a .tar.gz as a stream: ``{commit, comment, sha256, entries, strip_components}``.

    ``commit`` is the commit id git archive stored (None without one); ``comment`` the raw pax comment. The whole
    archive is walked (no member is written anywhere) so a truncated file is noticed. ``origin``: the URL the file
    was downloaded from, for messages. Raises TarballError."""
    where, done = _where(path, origin), _nothing_done(path, origin)
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise TarballError("%s does not exist in the training environment. Set %s to a .tar.gz of verl's source "
                           "(git archive --format=tar.gz) that is there, or to a URL. %s"
                           % (where, PATH_FIELD, done))
    except OSError as err:
        raise TarballError("%s cannot be read (%s). Set %s to a readable .tar.gz of verl's source. %s"
                           % (where, err.strerror or err, PATH_FIELD, done))
    with handle:
        try:
            magic = handle.read(2)
        except OSError as err:  # a folder, or an unreadable device
            raise TarballError("%s cannot be read (%s). Set %s to a readable .tar.gz of verl's source. %s"
                               % (where, err.strerror or err, PATH_FIELD, done))
        if magic != _GZIP_MAGIC:
            raise TarballError("%s is not a gzip file (it does not start with gzip's magic bytes). Set %s to a "
                               ".tar.gz of verl's source (git archive --format=tar.gz). %s"
                               % (where, PATH_FIELD, done))
        handle.seek(0)
        reader = _HashingReader(handle)
        names, links, unsafe = [], [], []
        try:
            with tarfile.open(fileobj=reader, mode="r|gz") as tar:
                # Stream mode: each member's data is skipped by reading through it, never written.
                for member in tar:
                    names.append(member.name)
                    if member.issym() or member.islnk():
                        links.append(member)  # judged once the strip is known: where it lands is what counts
                        continue
                    why = member_problem(member)
                    if why:
                        unsafe.append("%s (%s)" % (member.name, why))
                comment = tar.pax_headers.get("comment")
        except (tarfile.TarError, EOFError, OSError, UnicodeError, ValueError) as err:
            raise TarballError("%s is not a complete .tar.gz (%s: %s). Set %s to an intact tarball of verl's "
                               "source. %s" % (where, type(err).__name__, err, PATH_FIELD, done))
        sha256 = reader.drain()
    strip = _strip_components(names)
    for member in links:
        why = member_problem(member, strip or 0)
        if why:
            unsafe.append("%s (%s)" % (member.name, why))
    if unsafe:
        raise TarballError("%s holds %d member(s) that would land outside the source folder or are not plain files, "
                           "folders or links inside it: %s. A source tarball never does: set %s to verl's own "
                           "(git archive --format=tar.gz). %s" % (where, len(unsafe), "; ".join(unsafe[:5]),
                                                                   PATH_FIELD, done))
    commit = comment.strip().lower() if comment else None
    if commit is not None and not _COMMIT.match(commit):
        commit = None
    return {"commit": commit, "comment": comment, "sha256": sha256, "entries": len(names),
            "strip_components": strip}


def prove_tarball(path, commit, sha256=None, origin=None):
    """Prove that the tarball at ``path`` is verl at ``commit``; return what :func:`read_tarball` found plus
    ``proof`` (how it was proven: ``commit``, ``sha256`` or ``commit and sha256``).

    A commit id in the tarball must equal ``commit``. A ``sha256`` given must equal the file's; it is the only
    proof for a tarball without a commit id (one not made by git archive from a commit). ``origin`` is the URL the
    file was downloaded from, named in messages. Raises TarballError before anything is changed."""
    wanted = (commit or "").strip().lower()
    if not _COMMIT.match(wanted):
        raise TarballError("%s must be a full commit (40 hexadecimal characters) to prove %s against, got %r. %s"
                           % (COMMIT_FIELD, PATH_FIELD, commit, NOTHING_DONE))
    expected = (sha256 or "").strip().lower()
    if expected.startswith("sha256:"):
        expected = expected[len("sha256:"):]
    if expected and not _SHA256.match(expected):
        raise TarballError("%s must be a sha256 (64 hexadecimal characters), got %r. %s"
                           % (SHA256_FIELD, sha256, NOTHING_DONE))
    found = read_tarball(path, origin)
    where, done = _where(path, origin), _nothing_done(path, origin)
    if found["commit"] is not None and found["commit"] != wanted:
        raise TarballError("%s is verl commit %s (the commit id git archive stored in it), not commit %s that %s "
                           "asks for. Point %s at a tarball of %s, or set %s to %s if that is the commit you want. "
                           "%s" % (where, found["commit"], wanted, COMMIT_FIELD, PATH_FIELD, wanted,
                                   COMMIT_FIELD, found["commit"], done))
    if expected and found["sha256"] != expected:
        raise TarballError("%s has sha256 %s, not %s that %s gives: it is not the file you checked. %s"
                           % (where, found["sha256"], expected, SHA256_FIELD, done))
    if found["commit"] is None and not expected:
        raise TarballError("%s carries no commit id (git archive stores one only when it archives a commit), so "
                           "nothing proves it is verl commit %s. Make it with `git archive --format=tar.gz "
                           "--prefix=verl/ %s`, or set %s to the sha256 of this tarball as published with it. %s"
                           % (where, wanted, wanted, SHA256_FIELD, done))
    if found["strip_components"] is None:
        raise TarballError("%s holds no verl/__init__.py, neither at its top nor under one top folder: it is not "
                           "verl's source tree. %s" % (where, done))
    found["proof"] = " and ".join(k for k, v in (("commit", found["commit"]), ("sha256", expected)) if v)
    return found
