# -*- coding: utf-8 -*-
"""verl's source tree in the workspace: which source it holds, how another one replaces it, and the stamp.

The deps stage's source step. The stamp (``verl-source.json`` in the workspace's state folder) names what the tree
holds: ``{"kind": "git", "repo", "commit"}``, ``{"kind": "registry", "release"}``, ``{"kind": "tarball",
"tarball", "commit"}`` or ``{"kind": "path", "path"}``. When another source is asked for, the new one is fetched
and proven first; only then is the old tree (which may carry the patch stage's edits) moved aside under a new
name, so a source that cannot be had leaves the workspace exactly as it was, and the message names the setting.
A message names an input as ``{field}``, an option of the ``verl_source`` module: ``{source}`` (which source:
deps_pinning_verl_source in the deps stage), ``{commit}``, ``{repo}``, ``{release}``, ``{tarball}`` (what the
source's keys come from: deps_pinning_verl_version, _repo, _release, _tarball); the module names the settings.

A git tree already at the pinned commit is left alone even when the patch stage has edited it; one at another
commit is moved there only without local edits (a checkout would overwrite them).

Commands go through ``run(argv, env=None) -> (rc, stdout, stderr)``: the module passes AnsibleModule.run_command.
Standard library only (and this package's pins and stack engines): it runs inside the training environment.
"""

import glob
import json
import os
import sys
import time
import zipfile

from ..common import proxy, secrets
from . import pins, pip_runner, tarball_proof
from ..common.errors import StageFailure

STAMP = "verl-source.json"
KINDS = ("git", "registry", "tarball", "path")
MARKER = os.path.join("verl", "__init__.py")
REPLACED_TIME = "%Y%m%dT%H%M%S"  # UTC, in the name an old tree is moved aside to


class SourceError(Exception):
    """A refusal; the message names the input to change (``{field}``) and what was left as it was, every URL in it
    masked."""

    def __init__(self, message):
        super().__init__(secrets.mask_url(message))


def read_stamp(state_dir):
    """What the workspace holds by its stamp: None without one, {} for a stamp that is not a JSON object."""
    try:
        with open(os.path.join(state_dir, STAMP), encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    try:
        held = json.loads(text)
    except ValueError:
        return {}
    return held if isinstance(held, dict) else {}


def describe(held):
    """'registry 0.5.0', 'tarball /upstream/verl.tar.gz', 'git 634bd93...': a stamp in a message."""
    held = held or {}
    what = held.get("tarball") or held.get("release") or held.get("commit") or held.get("path") or ""
    return secrets.mask_url(("%s %s" % (held.get("kind") or "another", what)).strip())


def _tail(*texts, limit=400):
    """The last lines of a command's output, on one line, at most ``limit`` characters (the end kept)."""
    lines = [line.strip() for text in texts for line in (text or "").splitlines() if line.strip()]
    text = " | ".join(lines[-4:])
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def git_head(run, tree):
    """The commit ``tree`` has checked out, or None (no tree, not a git tree)."""
    if not tree or not os.path.isdir(tree):
        return None
    rc, out, _err = run(["git", "-C", tree, "rev-parse", "HEAD"])
    return out.strip() if rc == 0 else None


def git_local_changes(run, tree):
    """The tracked files ``tree`` has edited (git status --porcelain, untracked files not counted)."""
    rc, out, _err = run(["git", "-C", tree, "status", "--porcelain", "--untracked-files=no"])
    return [line for line in out.splitlines() if line.strip()] if rc == 0 else []


def _has_commit(run, tree, commit):
    return run(["git", "-C", tree, "cat-file", "-e", commit + "^{commit}"])[0] == 0


def git_fetch_commit(run, tree, repo, commit):
    """Make ``commit`` present in ``tree`` from ``repo`` (its branches and tags, then the commit by name, which
    servers that allow it serve even when no branch reaches it). None, or why not."""
    if _has_commit(run, tree, commit):
        return None
    url, env = secrets.git_url_env(repo)  # a password reaches git through its environment, never its argv
    rc, out, err = run(["git", "-C", tree, "fetch", "--quiet", "--tags", url, "+refs/heads/*:refs/remotes/origin/*"],
                       env)
    if rc != 0:
        return secrets.mask_url(_tail(err, out) or "git fetch failed (rc %d)" % rc)
    if not _has_commit(run, tree, commit):
        rc, out, err = run(["git", "-C", tree, "fetch", "--quiet", url, commit], env)
        if rc != 0 or not _has_commit(run, tree, commit):
            return secrets.mask_url("commit %s is not in %s (%s)" % (
                commit, url, _tail(err, out) or "no branch or tag reaches it"))
    return None


def git_checkout(run, tree, commit):
    """Check ``commit`` out in ``tree`` (detached). None, or why not."""
    rc, out, err = run(["git", "-c", "advice.detachedHead=false", "-C", tree, "checkout", "--quiet", commit])
    return None if rc == 0 else (_tail(err, out) or "git checkout failed (rc %d)" % rc)


def git_clone(run, repo, dest, commit):
    """Clone ``repo`` into ``dest`` (which must not exist) at ``commit``. None, or why not."""
    url, env = secrets.git_url_env(repo)  # the clone's remote keeps no password either
    rc, out, err = run(["git", "clone", "--quiet", "--no-checkout", url, dest], env)
    if rc != 0:
        return secrets.mask_url(_tail(err, out) or "git clone failed (rc %d)" % rc)
    return git_fetch_commit(run, dest, repo, commit) or git_checkout(run, dest, commit)


def source_matches(source, state_dir, verl_dir, run):
    """The stamp in ``state_dir`` equals ``source`` (and a git tree is at the stamped commit): the deps stage's
    quick look, which decides whether the source step runs at all. True when no source is asked about."""
    if source is None:
        return True
    if read_stamp(state_dir) != source:
        return False
    if source.get("kind") == "git":
        return git_head(run, verl_dir) == source.get("commit")
    return True


def remove_tree(path):
    import shutil

    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def wheel_version(tree, release):
    """The ``Version:`` of ``verl-<release>.dist-info/METADATA`` in ``tree``, or None."""
    try:
        with open(os.path.join(tree, "verl-%s.dist-info" % release, "METADATA"), encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("Version: "):
                    return line[len("Version: "):].strip()
    except OSError:
        return None
    return None


class SourceStep(object):
    """One run of the source step: ``converge()`` returns the result, or raises SourceError.

    ``want``: the stamp asked for. ``dest``: the tree (deps_pinning_verl_dir). ``state_dir``: the workspace's
    state folder (stamp, downloads). ``tarball_file``/``strip_components``: the proven tarball (tarball only;
    strip_components None when it could not be proven yet, in check mode). ``python``, ``site``, ``urls``: pip
    for a registry release (``urls``: index_url and extra_index_urls, which reach pip through its environment)."""

    def __init__(self, want, dest, state_dir, run, check_mode=False, tarball_file=None, strip_components=None,
                 python="python3", site=None, urls=None, clock=time.gmtime):
        kind = (want or {}).get("kind")
        if kind not in KINDS:
            raise SourceError("{source} must be one of %s, got %r. Nothing was changed."
                              % (", ".join(KINDS), kind))
        self.want, self.kind, self.dest, self.state_dir = dict(want), kind, dest, state_dir
        self.run, self.check_mode, self.clock = run, check_mode, clock
        self.tarball_file, self.strip_components = tarball_file, strip_components
        self.python, self.site, self.urls = python, dict(site or {}), dict(urls or {})
        if kind == "tarball" and strip_components is not None and not tarball_file:
            raise SourceError("a proven tarball needs its file (tarball_file). Nothing was changed.")
        self.held = read_stamp(state_dir)
        # another source than the one the workspace holds (a path source is the user's own tree: never moved)
        self.switch = kind != "path" and self.held is not None and self.held != self.want
        self.actions, self.changed, self.replaced = [], False, None

    # -- helpers -------------------------------------------------------------------------------------------------

    def _did(self, action):
        self.actions.append(action)
        self.changed = True

    def _has_tree(self):
        return os.path.isfile(os.path.join(self.dest, MARKER))

    def _tree_stays(self):
        """A tree is there and stays (in check mode an old tree would have been moved aside)."""
        return self._has_tree() and not (self.check_mode and self.replaced)

    def _make_dest(self):
        if not os.path.isdir(self.dest):
            if not self.check_mode:
                os.makedirs(self.dest, mode=0o755)
            self._did("make %s" % self.dest)

    def _move_aside(self):
        """The old tree, kept under a new name (never deleted): only once the new source is proven."""
        if not self.switch or not os.path.lexists(self.dest):
            return
        self.replaced = "%s.replaced-%s" % (self.dest, time.strftime(REPLACED_TIME, self.clock()))
        if not self.check_mode:
            os.rename(self.dest, self.replaced)
        self._did("move %s (%s) aside to %s" % (self.dest, describe(self.held), self.replaced))

    def _switch_refused(self, why):
        return ("The verl source changed ({source} is git at %s from %s; the workspace holds %s), but "
                "the new source cannot be had: %s. %s and the workspace are exactly as they were: make the "
                "repository reachable, or set {source} (and its settings) back to what the "
                "workspace holds." % (self.want.get("commit"), self.want.get("repo"), describe(self.held),
                                      why[:300], self.dest))

    def _checkout_refused(self, why):
        return ("Cannot check out verl commit %s from %s into %s: %s. Check {commit} (a full "
                "commit that exists there) and {repo}; without GitHub use {source}: "
                "registry, tarball or path. Nothing was installed." % (self.want.get("commit"),
                                                                       self.want.get("repo"), self.dest, why))

    # -- the sources ---------------------------------------------------------------------------------------------

    def _git_incoming(self):
        """Clone into ``<dest>.incoming`` and prove the commit; on failure nothing of it is left. Returns the
        folder, or None in check mode (nothing fetched: the would-be change is reported)."""
        repo, commit = self.want.get("repo"), self.want.get("commit")
        incoming = self.dest + ".incoming"
        if self.check_mode:
            self.actions.append("clone %s at %s" % (repo, commit))
            self.changed = True
            return None
        remove_tree(incoming)  # a fetch cut short before
        why = git_clone(self.run, repo, incoming, commit)
        if why is None and git_head(self.run, incoming) != commit:
            why = "it is not at that commit"
        if why is not None:
            remove_tree(incoming)
            raise SourceError(self._switch_refused(why) if self.switch else self._checkout_refused(why))
        self._did("clone %s at %s" % (repo, commit))
        return incoming

    def git(self):
        commit = self.want.get("commit")
        head = git_head(self.run, self.dest)
        if self.switch or head is None and not os.path.lexists(self.dest):
            incoming = self._git_incoming()
            self._move_aside()
            if incoming is not None:
                os.rename(incoming, self.dest)
                self._did("put the clone in place at %s" % self.dest)
            return
        if head == commit:
            return  # local edits (the patch stage's) at the pinned commit are not an error
        if head is None:
            raise SourceError(self._checkout_refused("it is there but not a git tree (git rev-parse HEAD fails); "
                                                     "move it away, or use {source}: path"))
        edits = git_local_changes(self.run, self.dest)
        if edits:
            raise SourceError(self._checkout_refused(
                "it is at %s and has local changes a checkout would overwrite (%s)" % (head, "; ".join(edits[:5]))))
        if not self.check_mode:
            why = git_fetch_commit(self.run, self.dest, self.want.get("repo"), commit) or \
                git_checkout(self.run, self.dest, commit)
            if why is not None:
                raise SourceError(self._checkout_refused(why))
            now = git_head(self.run, self.dest)
            if now != commit:
                raise SourceError(
                    "Cannot check out verl commit %s from %s: %s is at %s. Check {commit} (a full "
                    "commit that exists there) and {repo}. Nothing was installed."
                    % (commit, self.want.get("repo"), self.dest, now))
        self._did("check out %s in %s (was %s)" % (commit, self.dest, head))

    def _download_dir(self):
        return os.path.join(self.state_dir, "dl", "verl-%s" % self.want.get("release"))

    def _wheels(self):
        return sorted(glob.glob(os.path.join(glob.escape(self._download_dir()),
                                             "verl-%s-*.whl" % glob.escape(str(self.want.get("release"))))))

    def _download(self):
        """``pip download`` the release's wheel (once: a wheel already there is kept). The index URLs reach pip
        through its environment, never its command line."""
        release, dl = self.want.get("release"), self._download_dir()
        if self._wheels():
            return
        if self.check_mode:
            self.actions.append("download verl==%s into %s" % (release, dl))
            self.changed = True
            return
        argv = [self.python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                "--disable-pip-version-check", "-d", dl] + pins.index_args({}, None, self.site) + ["verl==" + release]
        env = pins.index_env(pins.index_args({}, None, {k: v for k, v in self.urls.items() if v}))[1]
        argv, env = pins.index_env(argv, env)  # a find-links location with a credential, too
        rc, out, err = self.run(argv, env)
        if rc != 0 or not self._wheels():
            shown = [pins.mask_url(a) for a in pins.index_args({}, None, dict(self.site, **{
                k: v for k, v in self.urls.items() if v}))]
            why = pip_runner.explain_pip_error("%s\n%s" % (out or "", err or ""), shown) if rc != 0 else \
                "pip left no verl-%s-*.whl in %s" % (release, dl)
            tail = (", and the workspace is exactly as it was (it holds %s): set {source} back to "
                    "it, or make the release reachable" % (self.held or {}).get("kind", "another")) \
                if self.switch else ""
            raise SourceError("verl==%s cannot be downloaded: %s Nothing was installed%s."
                              % (release, why, tail))
        self._did("download verl==%s into %s" % (release, dl))

    def registry(self):
        release = self.want.get("release")
        self._download()
        self._move_aside()
        self._make_dest()
        wheels = self._wheels()
        if wheels and not self._tree_stays():
            if not self.check_mode:
                # Python's zipfile, since images often lack unzip; it keeps every member inside dest
                with zipfile.ZipFile(wheels[0]) as wheel:
                    wheel.extractall(self.dest)
            self._did("unpack %s into %s" % (os.path.basename(wheels[0]), self.dest))
        if self.check_mode:
            return
        found = wheel_version(self.dest, release)
        if found != release:
            raise SourceError("%s does not hold verl %s (verl-%s.dist-info/METADATA says %s): move it away, or "
                              "check {release}." % (self.dest, release, release, found or "nothing"))

    def tarball(self):
        self._move_aside()
        created = self.replaced is not None or not os.path.isdir(self.dest)
        self._make_dest()
        if self.strip_components is None or self._tree_stays():
            return  # not proven yet (check mode, a URL not downloaded), or unpacked already
        if self.check_mode and created:
            self.actions.append("unpack %s into %s" % (self.tarball_file, self.dest))
            return
        if not self.check_mode:
            # GNU tar as root would keep the archive's owners and modes: the tree gets root's and the umask's
            rc, out, err = self.run(["tar", "-xzf", self.tarball_file, "-C", self.dest,
                                     "--strip-components=%d" % int(self.strip_components), "--no-same-owner",
                                     "--no-same-permissions"])
            if rc != 0:
                raise SourceError("{tarball}: %s cannot be unpacked into %s: %s. Nothing was "
                                  "installed." % (self.tarball_file, self.dest, _tail(err, out) or "rc %d" % rc))
        self._did("unpack %s into %s" % (self.tarball_file, self.dest))

    # -- the whole step ------------------------------------------------------------------------------------------

    def converge(self):
        head_before = git_head(self.run, self.dest) if self.kind == "git" else None
        getattr(self, self.kind, lambda: None)()
        tree = self._has_tree()
        if not tree and not self.check_mode:
            raise SourceError("%s holds no verl source tree (no verl/__init__.py): check {source} "
                              "and its setting." % self.dest)
        stamp_path = os.path.join(self.state_dir, STAMP)
        if self.held != self.want:
            if not self.check_mode:
                os.makedirs(self.state_dir, exist_ok=True)
                tmp = stamp_path + ".tmp"
                with open(tmp, "w", encoding="utf-8") as handle:
                    json.dump(self.want, handle, sort_keys=True)
                os.chmod(tmp, secrets.record_mode(self.want))  # a URL with a password: 0600
                os.replace(tmp, stamp_path)
            self._did("stamp %s" % stamp_path)
        commit = git_head(self.run, self.dest) if self.kind == "git" and not self.check_mode else head_before
        if self.kind == "git" and self.check_mode and self.changed:
            commit = self.want.get("commit")  # what it would be
        return secrets.mask_all({
            "changed": self.changed, "dest": self.dest, "source": self.want, "held": self.held,
            "switched": self.switch, "replaced": self.replaced, "tree": tree,
            "commit": commit, "actions": self.actions,
            "diff": {"before": _diff_text(self.held, head_before), "after": _diff_text(self.want, commit),
                     "before_header": stamp_path, "after_header": stamp_path},
        })


def _diff_text(stamp, commit):
    if stamp is None:
        return "(no source stamped)\n"
    lines = ["%s: %s" % (k, stamp[k]) for k in sorted(stamp)]
    if commit and stamp.get("kind") == "git" and commit != stamp.get("commit"):
        lines.append("checked out: %s" % commit)
    return "\n".join(lines) + "\n"


class ModuleFailure(StageFailure):
    """What the ``verl_source`` or ``verl_tarball`` module fails with: ``msg`` (every URL in it masked) and
    ``result`` (the tree or the tarball it was about)."""


def source_credentials(p):
    """A repository's or a tarball's password in the ``verl_source`` module's ``source`` and ``site``, and the
    proxy's: for its ``no_log_values``, so they are out of everything returned, the echo of the arguments
    included."""
    return list(secrets.credentials_in(p["source"])) + list(secrets.credentials_in(p["site"])) + list(
        proxy.hidden_values(p.get("proxy")))


def source_step(p, check_mode, run_command):
    """One call of the ``verl_source`` module (``p``: its arguments): the result for ``exit_json``, or
    ModuleFailure. ``run_command``: ``module.run_command`` or one of its shape (an environment goes in as its
    ``environ_update``); pip runs with ``p["python"]``, else this Python. The proxy (``p["proxy"]``) reaches git
    and pip as their environment; one that cannot be used raises ``common.proxy.ProxyError`` before anything runs."""
    run_command = proxy.through(run_command, proxy.proxy_env(p.get("proxy")))

    def run(argv, env=None):
        return run_command(argv, environ_update=env or {})

    try:
        step = SourceStep(
            p["source"], p["dest"], p["state_dir"], run, check_mode=check_mode,
            tarball_file=p["tarball_file"], strip_components=p["strip_components"],
            python=p["python"] or sys.executable, site=p["site"],
            urls={"index_url": p["index_url"], "extra_index_urls": p["extra_index_urls"]})
        return step.converge()
    except SourceError as err:
        raise ModuleFailure(secrets.mask_url(str(err)), {"dest": p["dest"]})  # every URL in it masked


def tarball_credentials(p):
    """A tarball URL's password or signature in the ``verl_tarball`` module's ``origin``: for its no_log_values."""
    return secrets.credentials_in(p["origin"])


def tarball_step(p):
    """One call of the ``verl_tarball`` module (``p``: its arguments): the result for ``exit_json`` (nothing
    changes), or ModuleFailure. Named tarball, not path: Ansible adds a file's owner and mode to a result that
    has a path."""
    try:
        found = tarball_proof.prove_tarball(p["path"], p["commit"], p["sha256"], p["origin"] or None)
    except tarball_proof.TarballError as err:
        raise ModuleFailure(secrets.mask_url(str(err)), {"tarball": p["path"]})
    found.pop("comment")
    return dict(changed=False, tarball=p["path"], **found)
