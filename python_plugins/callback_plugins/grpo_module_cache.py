# -*- coding: utf-8 -*-
"""Callback: keep the modules' AnsiballZ payloads from one run to the next while nothing they are built from changed."""

DOCUMENTATION = r"""
name: grpo_module_cache
type: aggregate
short_description: Keep built module payloads across runs while their sources are unchanged
description:
  - Before a module runs, Ansible builds its payload (the module and every module_utils file it imports, zipped)
    and keeps it for the rest of that run only, in the run's own temporary folder. A converged rerun of the chain
    builds some 25 payloads again, about 0.2 s each, in every C(ansible-playbook) run.
  - This callback points that cache at a folder of the user's own, C(<ANSIBLE_HOME>/grpo_module_cache/<fingerprint>),
    where the fingerprint covers everything a payload is built from - Ansible's and Python's versions, the
    configured module and module_utils folders (each file's path, size and modification time), and the
    collections' C(MANIFEST.json) files - so a changed file means a new, empty cache.
  - The payloads are Python that runs on the hosts and are read back with pickle, so the folder must be a real
    folder (not a link) owned by the user running Ansible and not writable by anyone else, inside an ANSIBLE_HOME
    that is the user's and not writable by others; otherwise the cache is off for that run and Ansible's own
    per-run cache is used, as without this callback.
  - Only the newest three fingerprint folders are kept. Pruning removes nothing but real folders named as a
    fingerprint (32 hexadecimal characters) directly in C(<ANSIBLE_HOME>/grpo_module_cache); any other file, folder
    or link there is left alone.
  - C(GRPO_MODULE_CACHE=off) in the environment turns it off. It never fails a run.
"""

import glob
import hashlib
import os
import re
import shutil
import stat
import sys
import time

from ansible import constants as C
from ansible import release
from ansible.plugins.callback import CallbackBase

KEEP = 3
# a folder a run started with this recently may be in use (a long playbook of another checkout): kept
BUSY_S = 86400
FOLDER = "grpo_module_cache"
_FINGERPRINT = re.compile(r"^[0-9a-f]{32}$")


def _private_folder(path, uid):
    """Whether ``path`` is a real folder (not a link) owned by ``uid`` that no one else may write to."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == uid and not info.st_mode & 0o022


def cache_root(home, uid=None):
    """``<home>/grpo_module_cache``, made private when missing; None when ``home`` or the folder is not the user's
    alone (a relative or empty ``home`` included): the cache is then off."""
    uid = os.geteuid() if uid is None else uid
    if not home or not os.path.isabs(home) or not _private_folder(home, uid):
        return None
    root = os.path.join(home, FOLDER)
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return root if _private_folder(root, uid) else None


def _files(folder, suffixes=(".py", ".ps1", ".psm1", ".cs")):
    for here, dirs, names in os.walk(folder):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(suffixes):
                yield os.path.join(here, name)


def fingerprint(module_paths, module_utils_paths, collection_paths):
    """32 hexadecimal characters that change whenever a payload could: Ansible's and Python's versions and where
    Ansible is, each file of the module and module_utils folders (path, size, modification time), and each
    collection's MANIFEST.json (path, size, modification time)."""
    digest = hashlib.sha256()
    digest.update(("%s\0%s\0%s\0%s\n" % (release.__version__, sys.version, sys.executable,
                                         os.path.dirname(release.__file__))).encode())
    watched = [path for folder in list(module_paths) + list(module_utils_paths) if os.path.isdir(folder)
               for path in _files(folder)]
    watched += sorted(path for folder in collection_paths
                      for path in glob.glob(os.path.join(folder, "ansible_collections", "*", "*", "MANIFEST.json")))
    for path in watched:
        try:
            info = os.stat(path)
        except OSError:
            continue
        digest.update(("%s\0%d\0%d\n" % (path, info.st_size, info.st_mtime_ns)).encode())
    return digest.hexdigest()[:32]


def prune(root, keep=KEEP, current=None, busy_s=BUSY_S, now=None):
    """Remove all but the ``keep`` newest fingerprint folders in ``root`` (``current`` always stays, and so does any
    folder a run started with in the last ``busy_s`` seconds: another checkout's playbook, running beside this one,
    still loads its payloads from it). Only real folders whose name is 32 hexadecimal characters are considered;
    nothing else in ``root`` is touched."""
    now = time.time() if now is None else now
    found = []
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if not _FINGERPRINT.match(name):
            continue
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            found.append((info.st_mtime_ns, name))
    found.sort(reverse=True)
    removed = []
    for mtime_ns, name in found[keep:]:
        if name != current and now - mtime_ns / 1e9 > busy_s:
            shutil.rmtree(os.path.join(root, name))
            removed.append(name)
    return removed


def collection_paths():
    """Where collections are found: the configured paths and the ``ansible`` package's own (site-packages)."""
    paths = list(C.COLLECTIONS_PATHS or [])
    try:
        import ansible_collections  # the ``ansible`` package's collections

        paths += [os.path.dirname(path) for path in ansible_collections.__path__]
    except ImportError:
        pass
    return paths


def link_cache(run_tmp, home, env=None):
    """Point ``<run_tmp>/ansiballz_cache`` (Ansible's per-run payload cache) at this fingerprint's folder; returns
    that folder, or None when the cache is off, the folders are not private, or Ansible already made its own."""
    env = os.environ if env is None else env
    if str(env.get("GRPO_MODULE_CACHE", "on")).lower() in ("0", "off", "false", "no"):
        return None
    root = cache_root(home)
    link = os.path.join(run_tmp, "ansiballz_cache")
    if root is None or os.path.lexists(link):
        return None
    roles = [os.path.join(path, role, sub) for path in C.DEFAULT_ROLES_PATH
             for role in (os.listdir(path) if os.path.isdir(path) else []) for sub in ("library", "module_utils")]
    current = fingerprint(list(C.DEFAULT_MODULE_PATH) + roles, list(C.DEFAULT_MODULE_UTILS_PATH), collection_paths())
    folder = os.path.join(root, current)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    if not _private_folder(folder, os.geteuid()):
        return None
    os.utime(folder)  # the newest, for the pruning
    prune(root, current=current)
    os.symlink(folder, link)
    return folder


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "grpo_module_cache"
    CALLBACK_NEEDS_ENABLED = False

    def v2_playbook_on_start(self, playbook):
        try:
            folder = link_cache(C.DEFAULT_LOCAL_TMP, C.config.get_config_value("ANSIBLE_HOME"))
        except Exception as err:  # pylint: disable=broad-except  # a cache never fails a run
            self._display.vvv("grpo_module_cache: off for this run (%s)" % err)
            return
        if folder:
            self._display.vvv("grpo_module_cache: module payloads kept in %s" % folder)
