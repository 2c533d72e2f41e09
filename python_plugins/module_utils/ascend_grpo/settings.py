"""Checks of the settings themselves, before a stage acts on them: each problem names the setting and the fix.

- ``name``: a value that becomes a folder name (an experiment, a project): letters, digits, ``.``, ``_`` and ``-``,
  starting with a letter or digit, so it can neither leave its folder (``..``, ``/``) nor make nested ones;
- ``env``: a mapping whose keys become environment variables: POSIX names (letters, digits, ``_``; not starting
  with a digit);
- ``count``: a whole number at least a minimum (a wait in minutes, say);
- ``path``: an absolute path with no control character and no ``..`` part;
- ``url``/``urls``: package index URLs, parsed (shown with their credentials masked);
- ``mounts``: a container's extra volumes, none of which hands it the host (the Docker socket, ``/``, ...);
- ``subpath``: a folder given relative to the workspace (so that it lives, and survives, there): ``name`` parts
  joined by ``/``; empty means the setting is off.

Standard library only (the controller's filters use it).
"""

import re

# Matched whole (fullmatch): with re.match, "$" also matches before a final newline, and "qwen\n" passed.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def name_problem(setting, value):
    if isinstance(value, str) and _NAME.fullmatch(value) and ".." not in value:
        return None
    return ("%s (%r) becomes a folder name: use 1-128 letters, digits, '.', '_' and '-', starting with a letter or "
            "digit (no '/', spaces or '..'), e.g. qwen2_5_math" % (setting, value))


def env_problems(setting, value):
    if not isinstance(value, dict):
        return ["%s is a mapping of environment variables (NAME: value), not %r" % (setting, value)]
    return ["%s: %r is not an environment variable name: use letters, digits and '_', not starting with a digit"
            % (setting, key) for key in value if not (isinstance(key, str) and _ENV.fullmatch(key))]


def subpath_problem(setting, value):
    if value == "":
        return None
    parts = value.split("/") if isinstance(value, str) else [None]
    if all(isinstance(part, str) and _NAME.fullmatch(part) and ".." not in part for part in parts):
        return None
    return ("%s (%r) is a folder inside the workspace: give it relative to the workspace, as names of letters, "
            "digits, '.', '_' and '-' joined by '/' (no leading '/', no '..'), e.g. venvs/stack; or empty to turn "
            "it off" % (setting, value))


def path_problem(setting, value):
    """A path setting (a folder or file in the environment): absolute, no control characters (a newline in a path
    makes folders no one can type and breaks every line it is written on), no '..' part."""
    if not isinstance(value, str) or not value.startswith("/"):
        return "%s (%r) must be an absolute path, e.g. /data/grpo/runs/qwen" % (setting, value)
    if _CONTROL.search(value):
        return "%s (%r) holds a control character (a newline, a tab...): remove it" % (setting, value)
    if ".." in value.split("/"):
        return "%s (%r) holds a '..' part: give the path it means, without '..'" % (setting, value)
    return None


# Host paths whose mount gives a container root on the host (the Docker socket; Docker's own data; the host's root,
# its configuration and root's home), refused with every folder above them; /etc and /root also refused below them
# unless read-only (a CA bundle mounted :ro is fine).
_HOST_ACCESS = ("/var/run/docker.sock", "/run/docker.sock", "/var/lib/docker", "/etc", "/root")
_READ_ONLY_BELOW = ("/etc", "/root")


def mount_problems(setting, volumes, allow_host_access=False):
    """The entries of a container's extra volumes (``/host:/container[:ro|rw]``) that hand the container the host:
    the Docker socket, ``/``, ``/etc``, ``/root``, ``/var/lib/docker``, a folder above one of them, or anything inside
    Docker's data (or writable inside /etc and /root). ``allow_host_access`` (a setting of its own) lets them by."""
    import posixpath

    if allow_host_access:
        return []
    out = []
    for entry in volumes or []:
        parts = str(entry).split(":")
        source = posixpath.normpath(parts[0]) if parts[0].startswith("/") else parts[0]
        read_only = len(parts) > 2 and parts[2] == "ro"
        danger = next((p for p in _HOST_ACCESS if p == source or p.startswith(source.rstrip("/") + "/")), None)
        if danger is None and source.startswith("/var/lib/docker/"):
            danger = "/var/lib/docker"
        if danger is None and not read_only:
            danger = next((p for p in _READ_ONLY_BELOW if source.startswith(p + "/")), None)
        if danger:
            out.append("%s: %r mounts %s into the container, which gives it the host (root on it for anything in the "
                       "container): remove it, or set npu_container_allow_host_access: true if that is what you want"
                       % (setting, entry, "the Docker socket" if danger.endswith("docker.sock") else danger))
    return out


def url_problem(setting, value):
    """A package index URL: empty (off), or http(s)://host[/path] (file:///path for a local index); shown with its
    credentials masked."""
    from urllib.parse import urlsplit

    if value in ("", None):
        return None
    text = str(value)
    shown = re.sub(r"(//)[^/@\s]*@", r"\1***@", text)
    try:
        parts = urlsplit(text)
        ok = ((parts.scheme in ("http", "https") and parts.hostname) or (parts.scheme == "file" and parts.path)) \
            and not _CONTROL.search(text) and " " not in text
    except ValueError:
        ok = False
    if ok:
        return None
    return "%s (%s) is not an index URL: give https://host/simple (or file:///path for a local one)" % (setting,
                                                                                                    shown)


def count_problem(setting, value, minimum=0):
    text = "" if isinstance(value, bool) else str(value).strip()
    if text.lstrip("+").isdigit() and int(text) >= minimum:
        return None
    return "%s (%r) must be a whole number of at least %d" % (setting, value, minimum)


def shell_exports(mapping):
    """``export KEY=value`` lines for a script, keys sorted, each value one shell word (shlex.quote, as Ansible's
    quote filter). A key that is not a POSIX variable name is refused, whatever let it through: written unquoted,
    ``X=1; id >/tmp/x; Y`` would be a command."""
    import shlex

    bad = [key for key in mapping if not (isinstance(key, str) and _ENV.fullmatch(key))]
    if bad:
        raise ValueError("%r is not an environment variable name (letters, digits and '_', not starting with a "
                         "digit): it is not written into the script" % (bad[0],))
    # ordered as Jinja's dictsort orders them (case-insensitively), so scripts render as before
    return "\n".join("export %s=%s" % (key, shell_word(mapping[key], "the value of " + key))
                     for key in sorted(mapping, key=str.lower))


def shell_word(value, what="a value"):
    """``value`` as one shell word (shlex.quote, as Ansible's quote filter), refusing a NUL byte: no script, command
    line or environment variable can hold one, and bash would silently cut the word there."""
    import shlex

    text = str(value)
    if "\x00" in text:
        raise ValueError("%s holds a NUL byte (%r...): it is not written into the script" % (what, text[:40]))
    return shlex.quote(text)


def shell_comment(text):
    """``text`` for a comment line of a script: control characters (a newline would end the comment and start a
    command) written as \\xNN."""
    return _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), str(text))


def problems(checks):
    """Every problem of ``checks``: a list of [kind, setting, value] (count: [kind, setting, value, minimum])."""
    out = []
    for check in checks:
        kind, setting, value = check[0], check[1], check[2]
        if kind == "name":
            problem = name_problem(setting, value)
            out += [problem] if problem else []
        elif kind == "env":
            out += env_problems(setting, value)
        elif kind == "subpath":
            problem = subpath_problem(setting, value)
            out += [problem] if problem else []
        elif kind == "path":
            problem = path_problem(setting, value)
            out += [problem] if problem else []
        elif kind == "url":
            problem = url_problem(setting, value)
            out += [problem] if problem else []
        elif kind == "urls":
            out += [p for p in (url_problem(setting, v) for v in (value if isinstance(value, list) else [value])) if p]
        elif kind == "mounts":
            out += mount_problems(setting, value, check[3] if len(check) > 3 else False)
        elif kind == "count":
            problem = count_problem(setting, value, check[3] if len(check) > 3 else 0)
            out += [problem] if problem else []
        else:
            raise ValueError("unknown setting check %r (name, subpath, path, env, url, urls, mounts or count)" % kind)
    return out


# The prefixes of this package's settings: a variable a user sets with one of them names a setting of ours.
PREFIXES = ("npu_container_", "deps_pinning_", "verl_compat_patch_", "assets_", "ray_cluster_", "grpo_train_",
            "grpo_eval_", "grpo_")


def project_names(root):
    """What the project itself knows, read from its files (no list kept by hand): ``settings``, every option of
    the roles' meta/argument_specs.yml and every default; ``internal``, every name its roles and playbooks set
    (set_fact, register, add_host); ``refused``, the names a stage refuses by name itself (``X is not defined``,
    the settings it replaced, which keep their own "was replaced by" message)."""
    import glob
    import os

    import yaml

    settings, internal, refused = set(), set(), set()
    for path in glob.glob(os.path.join(root, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as handle:
            for entry in ((yaml.safe_load(handle) or {}).get("argument_specs") or {}).values():
                settings.update((entry or {}).get("options") or {})
    for path in glob.glob(os.path.join(root, "roles", "*", "defaults", "main.yml")):
        with open(path, encoding="utf-8") as handle:
            settings.update(yaml.safe_load(handle) or {})

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("ansible.builtin.set_fact", "set_fact", "ansible.builtin.add_host", "add_host") \
                        and isinstance(value, dict):
                    internal.update(value)
                elif key == "register" and isinstance(value, str):
                    internal.add(value)
                elif key == "that":
                    for test in value if isinstance(value, list) else [value]:
                        refused.update(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*) is not defined\s*$", str(test)))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    paths = glob.glob(os.path.join(root, "roles", "*", "tasks", "*.yml")) + \
        glob.glob(os.path.join(root, "playbooks", "*.yml")) + [os.path.join(root, "site.yml")]
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            walk(yaml.safe_load(handle))
    return {"settings": settings, "internal": internal, "refused": refused}


def unknown_settings(names, known):
    """The names with one of our prefixes that are neither a setting, nor set by the project itself, nor refused by
    their own stage: one problem each, naming the closest settings."""
    import difflib

    out = []
    for name in sorted(names):
        if not (isinstance(name, str) and name.startswith(PREFIXES)):
            continue
        if name in known["settings"] or name in known["internal"] or name in known["refused"]:
            continue
        close = difflib.get_close_matches(name, sorted(known["settings"]), n=1, cutoff=0.75)
        out.append("%s is not a setting of any stage, so it would be ignored: %s" % (
            name, "did you mean %s?" % close[0] if close else
            "remove it, or see each role's meta/argument_specs.yml for the settings there are"))
    return out
