"""Checks of the settings themselves, before a stage acts on them: each problem names the setting and the fix.

- ``name``: a value that becomes a folder name (an experiment, a project): letters, digits, ``.``, ``_`` and ``-``,
  starting with a letter or digit, so it can neither leave its folder (``..``, ``/``) nor make nested ones;
- ``env``: a mapping whose keys become environment variables: POSIX names (letters, digits, ``_``; not starting
  with a digit);
- ``count``: a whole number at least a minimum and at most a maximum, where its use has one (minutes, retries);
  ``port``: a TCP port, from a minimum (1, or 1024) to 65535;
- ``path``: an absolute path with no control character and no ``..`` part;
- ``url``/``urls``: package index URLs, parsed (shown with their credentials masked);
- ``mounts``: a container's extra volumes, none of which hands it the host (the Docker socket, ``/``, ...);
- ``proxy``: a proxy mapping (http_proxy, https_proxy: URLs with a scheme and a host; no_proxy: a comma list of
  hosts, domains and address blocks), shown masked (``common.proxy``);
- ``subpath``: a folder given relative to the workspace (so that it lives, and survives, there): ``name`` parts
  joined by ``/``; empty means the setting is off;
- ``hub``: a hub or mirror the stage fetches from, https (plain http only when the setting named after it allows
  it: ``[kind, setting, value, allow_http, allow_setting]``);
- ``endpoint`` (a hub mirror), ``git`` (a repository), ``source`` (a file or its URL), ``file`` (read on the
  controller), ``profile`` (a name or a profile file), ``ref``, ``repo``, ``host``, ``image``, ``command``,
  ``identifier``, ``requirement``, ``size``, ``sha256``: each what its name says, matched whole; ``text``: one line of
  free text; ``secret``: one line, never shown in a problem.

Every string setting of every role declares one of these in its meta/argument_specs.yml (its description's
last sentence, ``Check: KIND ...``: check_settings below reads it), and its stage's first preflight task runs them
(a test walks the argument specs and fails on one that declares none). ``kind?`` lets an empty value (the setting
off) by; ``kind[]`` checks each entry of a list.

Standard library only (the controller's filters use it), but for size_bytes, which asks Ansible's human_to_bytes.
"""

import re

from . import proxy, secrets

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
_MOUNT = re.compile(r"/[^:\x00-\x1f\x7f]*:/[^:\x00-\x1f\x7f]*(:(ro|rw))?")


def mount_problems(setting, volumes, allow_host_access=False, allow_setting="the setting that allows it"):
    """The entries of a container's extra volumes (``/host:/container[:ro|rw]``) that hand the container the host:
    the Docker socket, ``/``, ``/etc``, ``/root``, ``/var/lib/docker``, a folder above one of them, or anything inside
    Docker's data (or writable inside /etc and /root). ``allow_host_access`` (the value of the setting named
    ``allow_setting``, which the message names as the way out) lets them by."""
    import posixpath

    if not isinstance(volumes, list):
        return ["%s is a list of /host:/container[:ro] entries, not %r" % (setting, volumes)]
    out = ["%s: %r is not a mount: give /host/path:/container/path, with :ro for read-only" % (setting, entry)
           for entry in volumes if not (isinstance(entry, str) and _MOUNT.fullmatch(entry))]
    if allow_host_access or out:
        return out
    for entry in volumes:
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
                       "container): remove it, or set %s: true if that is what you want"
                       % (setting, entry, _what(source, danger), allow_setting))
    return out


def mount_target_problems(setting, entries):
    """The container paths of all the container's mounts (``entries``: [setting, '/host:/container[:ro]'] for the
    built-in ones and each extra one), which Docker refuses only when it creates the container, after the running
    one is removed: two mounts on one container path ("Duplicate mount point"), or one on ``/``. ``setting`` names
    the list in a malformed call."""
    import posixpath

    if not isinstance(entries, list):
        return ["%s is a list of [setting, mount] pairs, not %r" % (setting, entries)]
    out, seen = [], {}
    for named, entry in entries:
        parts = str(entry).split(":")
        if len(parts) < 2 or not parts[1].startswith("/"):
            continue  # not a mount: mount_problems names it
        target = posixpath.normpath(parts[1])
        target = "/" if target == "//" else target
        if target == "/":
            out.append("%s: %r mounts onto / in the container, which Docker refuses: give another container path"
                       % (named, entry))
        elif target in seen:
            out.append("%s: %r mounts onto %s in the container, where %s already mounts %r: Docker refuses two "
                       "mounts on one path (a duplicate mount point): give another container path"
                       % (named, entry, target, seen[target][0], seen[target][1]))
        else:
            seen[target] = (named, entry)
    return out


def _what(source, danger):
    """What a dangerous mount hands over: the Docker socket, or the folder (and what it holds)."""
    named = "the Docker socket" if danger.endswith("docker.sock") else danger
    return named if source in (danger, danger + "/") or source.startswith(danger + "/") else \
        "%s (which holds %s)" % (source, named)


# The networks every Docker engine has (``default`` is the bridge); any other name must exist before a container
# joins it.
DOCKER_BUILTIN_NETWORKS = ("", "bridge", "default", "host", "none")


def docker_network_problem(setting, name, info):
    """The Docker network a container joins, checked before the running container is touched: Docker refuses a
    network that does not exist only when it creates the container, after the running one is removed. ``info`` is
    community.docker.docker_network_info's result for ``name`` ({} or a skipped result when the engine was not asked:
    an engine that does not answer is its own problem)."""
    info = info if isinstance(info, dict) else {}
    if name in DOCKER_BUILTIN_NETWORKS or info.get("exists") or not info or info.get("skipped"):
        return None
    if info.get("failed"):
        return ("%s (%r): the Docker engine could not say whether this network exists (%s): fix that, or set %s to "
                "one of %s" % (setting, name, info.get("msg", "no answer"), setting,
                               ", ".join(n for n in DOCKER_BUILTIN_NETWORKS if n)))
    return ("%s (%r) names a Docker network that does not exist on this host: create it first (docker network create "
            "%s), or set %s to host, bridge, or a network `docker network ls` lists" % (setting, name, name, setting))


def url_problem(setting, value):
    """A package index URL: empty (off), or http(s)://host[/path] (file:///path for a local index); shown with its
    credentials masked."""
    from urllib.parse import urlsplit

    if value in ("", None):
        return None
    text = str(value)
    shown = secrets.mask_userinfo(secrets.mask_url(text))[0]
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


def count_problem(setting, value, minimum=0, maximum=None):
    """A whole number from ``minimum`` to ``maximum`` (None: no upper bound), the range its use allows: a port
    1-65535, minutes that become seconds or retries a week at most, so an overflow or a wait of centuries is refused
    here rather than where the number is used."""
    text = "" if isinstance(value, bool) else str(value).strip()
    if text.lstrip("+").isdigit() and int(text) >= minimum and (maximum is None or int(text) <= maximum):
        return None
    if maximum is None:
        return "%s (%r) must be a whole number of at least %d" % (setting, value, minimum)
    return "%s (%r) must be a whole number from %d to %d" % (setting, value, minimum, maximum)



def port_problem(setting, value, minimum=1):
    """A TCP port: a whole number from ``minimum`` (1; 1024 where the port is also opened by a user who is not
    root, as an SSH forward's local end) to 65535, the largest a TCP port can be."""
    text = "" if isinstance(value, bool) else str(value).strip()
    if text.isdigit() and minimum <= int(text) <= 65535:
        return None
    return "%s (%r) must be a TCP port, a whole number from %d to 65535" % (setting, value, minimum)


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


def _pattern_problem(pattern, what, example):
    def check(setting, value):
        if isinstance(value, str) and pattern.fullmatch(value) and ".." not in value:
            return None
        return "%s (%r) must be %s, e.g. %s" % (setting, value, what, example)
    return check


def _text_problem(setting, value):
    if isinstance(value, (str, int, float)) and not isinstance(value, bool) and not _CONTROL.search(str(value)):
        return None
    return "%s (%r) must be one line of text, without control characters (a newline, a tab...)" % (setting, value)


def _secret_problem(setting, value):
    # never shows the value: it is a password or a token
    if isinstance(value, str) and not _CONTROL.search(value):
        return None
    return "%s must be one line without control characters (a newline, a tab...); its value is not shown" % setting


def _file_problem(setting, value):
    """A file the stage reads on the controller (a template, a profile of your own): any path, one line."""
    if isinstance(value, str) and value and not _CONTROL.search(value):
        return None
    return "%s (%r) must be the path of a file, without control characters (a newline, a tab...)" % (setting, value)


def _profile_problem(setting, value):
    """A profile: a name of the role's profiles, or (with a '/') the path of a profile file of your own."""
    if isinstance(value, str) and "/" in value:
        return _file_problem(setting, value)
    return None if name_problem(setting, value) is None else (
        "%s (%r) must be a profile's name (letters, digits, '.', '_', '-') or the path of a profile file (with a '/')"
        % (setting, value))


def _source_problem(setting, value):
    """A file or a URL to fetch it from (a tarball, a find-links location)."""
    if isinstance(value, str) and "://" in value:
        return _url_problem(setting, value, ("https", "http", "file"), "https://host/path (or file:///path)")
    return path_problem(setting, value)


def _url_problem(setting, value, schemes, example):
    from urllib.parse import urlsplit

    text = value if isinstance(value, str) else repr(value)
    shown = secrets.mask_userinfo(secrets.mask_url(text))[0]
    try:
        parts = urlsplit(text)
        ok = isinstance(value, str) and parts.scheme in schemes and (parts.hostname or parts.scheme == "file") \
            and not _CONTROL.search(text) and " " not in text
        if parts.scheme == "file" and not parts.path.startswith("/"):
            ok = False
    except ValueError:
        ok = False
    return None if ok else "%s (%s) is not a URL: give %s" % (setting, shown, example)


def _hub_problem(setting, value, allow_http=False, allow_setting="its allow_http setting"):
    """A hub or mirror the weights and data come from: an https URL; plain http (anyone on the path can change
    what it serves: a model's config, code that loading it would run) only when ``allow_setting`` says so."""
    problem = _url_problem(setting, value, ("https", "http"), "https://host (the hub mirror's address)")
    if problem or not value.lower().startswith("http:") or allow_http is True:
        return problem
    return ("%s (%s) is plain http: anyone on the path can change the model and data it serves (a config that "
            "asks for code, the code itself). Give its https:// address, or set %s: true to accept http"
            % (setting, re.sub(r"(//)[^/@\s]*@", r"\1***@", value), allow_setting))


def _webhook_problem(setting, value):
    """A webhook's URL: http(s)://host/path, one line. Its path or query is a secret (a chat webhook's token), so
    a problem never shows it."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value) if isinstance(value, str) else None
        ok = bool(parts) and parts.scheme in ("https", "http") and bool(parts.hostname) \
            and not _CONTROL.search(value) and " " not in value
        ok = ok and (parts.port is None or parts.port > 0)
    except ValueError:
        ok = False
    return None if ok else ("%s is not a webhook URL (its value is not shown: it is a secret): give the address the "
                            "service gave, https://host/path, e.g. https://hooks.slack.com/services/..." % setting)


def _git_problem(setting, value):
    """A git repository: a URL (https, ssh, git, file), user@host:path, or an absolute path."""
    if isinstance(value, str) and _SCP.fullmatch(value):
        return None
    if isinstance(value, str) and value.startswith("/"):
        return path_problem(setting, value)
    return _url_problem(setting, value, ("https", "http", "ssh", "git", "file"),
                        "https://github.com/volcengine/verl.git (or git@host:path, or an absolute path)")


def _size_problem(setting, value):
    if isinstance(value, (str, int)) and not isinstance(value, bool) and _SIZE.fullmatch(str(value)):
        if size_bytes(value) <= INT64_MAX:
            return None
        return ("%s (%r) is more bytes than Docker takes (a signed 64-bit number, at most 2^63-1 bytes, about 8 EiB): "
                "Docker would refuse it only when it makes the container, after the running one is removed; give a "
                "size that fits, e.g. 8g" % (setting, value))
    return "%s (%r) must be a size: a whole number with an optional unit b, k, m or g, e.g. 8g" % (setting, value)


# Docker keeps sizes (HostConfig.ShmSize, Memory, ...) as Go int64 bytes and refuses a larger number when it
# decodes the create request.
INT64_MAX = 2 ** 63 - 1


def size_bytes(value):
    """A size setting (``8g``) in bytes as the Docker modules convert it before they ask the engine: Ansible's own
    human_to_bytes (the number as a float times the binary unit, so 9223372036854775807 becomes 2^63); None when
    it is no size."""
    from ansible.module_utils.common.text.formatters import human_to_bytes  # the controller's; its filters call this

    text = "" if isinstance(value, bool) else str(value)
    if not _SIZE.fullmatch(text):
        return None
    try:
        return human_to_bytes(text)
    except OverflowError:  # more digits than a float holds: far past any 64-bit number
        return INT64_MAX + 1


def _sha256_problem(setting, value):
    if isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{64}", value):
        return None
    return "%s (%r) must be a sha256: 64 hexadecimal digits (sha256sum FILE prints it)" % (setting, value)


def _lease_problem(setting, value):
    """An instance's lease end: an ISO 8601 time with its zone, epoch seconds or a duration (train.lease)."""
    from ..train import lease  # the train stage's engine reads it; no import of a stage at this module's load
    return lease.setting_problem(setting, value)


_SCP = re.compile(r"[A-Za-z0-9_.-]+@[A-Za-z0-9.-]+:[A-Za-z0-9_.~/-]+")
_SIZE = re.compile(r"[0-9]+[bkmgBKMG]?")
_ONE = {
    "name": name_problem,
    "subpath": subpath_problem,
    "path": path_problem,
    "url": url_problem,
    "endpoint": lambda setting, value: _url_problem(setting, value, ("https", "http"),
                                                    "https://host (the hub mirror's address)"),
    "git": _git_problem,
    "hub": _hub_problem,
    "source": _source_problem,
    "file": _file_problem,
    "profile": _profile_problem,
    "text": _text_problem,
    "secret": _secret_problem,
    "webhook": _webhook_problem,
    "size": _size_problem,
    "sha256": _sha256_problem,
    "lease": _lease_problem,
    "count": lambda setting, value, minimum=0, maximum=None: count_problem(setting, value, minimum, maximum),
    "port": lambda setting, value, minimum=1: port_problem(setting, value, minimum),
    # a git commit, branch or tag, a hub revision, a release: letters, digits, '.', '_', '-', '+' and '/'
    "ref": _pattern_problem(re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,254}"),
                            "a commit, branch, tag or release (letters, digits, '.', '_', '-', '+', '/')", "main"),
    # a hub repository: owner/name
    "repo": _pattern_problem(re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,95})?"),
                             "a hub repository id, owner/name", "Qwen/Qwen2.5-1.5B-Instruct"),
    # a host name or address (v4, v6), with a port after ':' where the setting takes one
    "host": _pattern_problem(re.compile(r"[A-Za-z0-9:\[][A-Za-z0-9_.:%\[\]-]{0,252}"),
                             "a host name or address (optionally :port)", "npu-a or 10.0.0.11"),
    # a container image reference: [registry/]name[:tag][@digest]
    "image": _pattern_problem(re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}"),
                              "an image reference, [registry/]name[:tag]", "quay.io/ascend/cann:8.2.rc1-910b"),
    # a command: a name looked up in PATH, or an absolute path
    "command": _pattern_problem(re.compile(r"[A-Za-z0-9_./+-]{1,255}"),
                                "a command name or an absolute path", "python3 or /usr/bin/python3"),
    # a Python name (a function the trainer calls)
    "identifier": _pattern_problem(re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}"),
                                   "a Python function name", "compute_score"),
    # a pip requirement: a project name with optional extras and version specifiers
    "requirement": _pattern_problem(re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]*\])?"
                                               r"( *(==|>=|<=|~=|!=|<|>) *[A-Za-z0-9.*+!_-]+ *,?)*"),
                                    "a pip requirement", "modelscope==1.40.2"),
}
def _kwargs_problems(setting, value):
    """Keyword arguments (written into a config as a Python literal): a mapping whose keys are Python names."""
    if not isinstance(value, dict):
        return ["%s is a mapping (name: value), not %r" % (setting, value)]
    return ["%s: %r is not a Python name: use letters, digits and '_', not starting with a digit" % (setting, key)
            for key in value if not (isinstance(key, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key))]


def _resources_problems(setting, value):
    """Ray resources: a mapping of resource names to amounts of at least 0."""
    if not isinstance(value, dict):
        return ["%s is a mapping of resource names to amounts (e.g. {NPU: 8}), not %r" % (setting, value)]
    return ["%s: %r: a resource is a name (letters, digits, '_', '.', ':', '-') with an amount of at least 0"
            % (setting, key) for key, amount in value.items()
            if not (isinstance(key, str) and re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}", key))
            or isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0]


def _mapping_problems(setting, value):
    """A nested mapping whose keys are checked where it is used (verl's configuration, for the overrides)."""
    return [] if isinstance(value, dict) else ["%s is a mapping (e.g. {trainer: {total_epochs: 2}}), not %r"
                                               % (setting, value)]


_MANY = {"env": env_problems, "mounts": mount_problems, "mount_targets": mount_target_problems,
         "kwargs": _kwargs_problems, "proxy": proxy.proxy_problems,
         "resources": _resources_problems, "mapping": _mapping_problems}
KINDS = tuple(sorted(_ONE)) + tuple(sorted(_MANY))


def problems(checks):
    """Every problem of ``checks``: a list of [kind, setting, value] (count: [kind, setting, value, minimum,
    maximum], both optional;
    mounts: [kind, setting, value, allow_host_access]). A kind ending in ``?`` lets an empty value (the setting
    off) by; ``[]`` checks each entry of a list (``urls`` is ``url[]``)."""
    out = []
    for check in checks:
        kind, setting, value, extra = check[0], check[1], check[2], list(check[3:])
        kind = "url[]" if kind == "urls" else kind
        optional, many = kind.endswith("?"), kind.rstrip("?").endswith("[]")
        base = kind.rstrip("?")[:-2] if many else kind.rstrip("?")
        if base not in _ONE and base not in _MANY:
            raise ValueError("unknown setting check %r (one of %s, optionally with [] and ?)" % (kind,
                                                                                               ", ".join(KINDS)))
        if optional and value in ("", None, [], {}):
            continue
        if base in _MANY:
            out += _MANY[base](setting, value, *extra)
            continue
        if many and not isinstance(value, list):
            out.append("%s must be a list, not %r" % (setting, value))
            continue
        for index, item in enumerate(value if many else [value]):
            problem = _ONE[base]("%s[%d]" % (setting, index) if many else setting, item, *extra)
            out += [problem] if problem else []
    return [secrets.mask_url(problem) for problem in out]  # a value shown in a message never shows a password


# The prefixes of this package's settings: a variable a user sets with one of them names a setting of ours.
PREFIXES = ("npu_container_", "deps_pinning_", "verl_compat_patch_", "assets_", "ray_cluster_", "grpo_train_",
            "grpo_eval_", "offline_bundle_", "grpo_")


def project_names(specs, defaults, documents):
    """What the project itself knows, from its own files as the caller read them (no list kept by hand, and no path
    of the Ansible tree here): ``specs``, the contents of the roles' meta/argument_specs.yml; ``defaults``, of their
    defaults/main.yml; ``documents``, the parsed task files and playbooks. ``settings``: every option and every
    default; ``internal``: every name the roles and playbooks set (set_fact, register, add_host); ``refused``: the
    names a stage refuses by name itself (``X is not defined``, the settings it replaced, which keep their own "was
    replaced by" message); ``derived``: the documented options whose text says the project sets them ("Derived, not
    a setting to change", "Set by the container stage")."""
    settings, internal, refused, derived = set(), set(), set(), set()
    for spec in specs:
        for entry in ((spec or {}).get("argument_specs") or {}).values():
            options = (entry or {}).get("options") or {}
            settings.update(options)
            # documented, but the project's to set: "Derived, not a setting to change", "Set by the ... stage"
            derived.update(name for name, option in options.items()
                           if _DERIVED.match(" ".join(str((option or {}).get("description", "")).split())))
    for default in defaults:
        settings.update(default or {})

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

    for document in documents:
        walk(document)
    return {"settings": settings, "internal": internal, "refused": refused, "derived": derived}


_DERIVED = re.compile(r"(Derived, not a setting to change|Set by the [a-z]+ stage)")


# Names a user's inventory may hold that are no setting of ours, however close they look: Ansible's own (ansible_*
# and its magic variables), private ones (a leading '_'), the simulated host's and its drills'.
_NOT_OURS = ("ansible_", "_", "sim_", "drill_", "molecule_")
_ANSIBLE_MAGIC = frozenset(("group_names", "groups", "hostvars", "inventory_dir", "inventory_file",
                            "inventory_hostname", "inventory_hostname_short", "omit", "play_hosts", "playbook_dir",
                            "role_name", "role_names", "role_path", "environment", "vars"))
_ADD_HOST_ARGS = frozenset(("name", "host", "hostname", "groups", "group", "groupname"))
# How alike (difflib's ratio) a name must be to a setting, or its start to one of the longer prefixes, to be taken
# for a misspelling of it: one or two letters dropped, doubled or swapped in a name of 15 or more.
_CLOSE = 0.85


def close_to_ours(name, known):
    """The settings (or, failing those, the prefix) ``name`` is close to, when it has none of our prefixes: a typo
    such as ``grp_train_project`` or ``npu_contianer_name`` would otherwise be ignored as a variable of the user's
    own. Empty for Ansible's names, private ones, the simulated host's, and any name not close to ours."""
    import difflib

    if not isinstance(name, str) or name.startswith(PREFIXES) or name.startswith(_NOT_OURS) \
            or name in _ANSIBLE_MAGIC:
        return []
    close = difflib.get_close_matches(name, sorted(known["settings"]), n=3, cutoff=_CLOSE)
    if close:
        return close
    # the short prefixes (grpo_, assets_) are too like ordinary words (group_, asset_) to judge by the start alone
    return [prefix for prefix in PREFIXES if len(prefix) >= 9
            and difflib.SequenceMatcher(None, name[:len(prefix)], prefix).ratio() >= _CLOSE][:1]


def user_set_internal(names, known):
    """The names the project sets itself (set_fact, register, add_host; an option documented as derived or set by a
    stage) among ``names``, the variables the inventory and -e set before any task ran: one problem each. Set by a
    user, such a name would override what a stage found (a cluster's token authentication said on when it is off);
    it is never a setting."""
    own = {name for name in set(known["internal"]) - set(known["settings"])
           # Ansible's own (a connection the container stage gives a host) and add_host's parameters
           if not name.startswith("ansible_") and name not in _ANSIBLE_MAGIC and name not in _ADD_HOST_ARGS}
    own |= set(known.get("derived", ()))
    return ["%s is set by the package itself (what a stage found or derived), not a setting: remove it from the "
            "inventory or -e" % name for name in sorted(n for n in names if n in own)]


def _respelt(name, close):
    """The name a typo in its prefix meant (``grp_train_project`` -> ``grpo_train_project``); a setting as it is."""
    if close not in PREFIXES:
        return close
    parts = name.split("_", close.count("_"))
    return close + parts[-1] if len(parts) > close.count("_") else close


def unknown_settings(names, known):
    """The names with one of our prefixes that are neither a setting, nor set by the project itself, nor refused by
    their own stage, and the names without one that are close to a setting or a prefix of ours (a typo in the
    prefix): one problem each, naming the closest settings. A setting that was replaced by another is refused naming
    the new one and why: ``known["renamed"]`` (old name -> (new name, why)), which the role layer keeps (the
    ``unknown_settings`` filter's table), as it keeps every setting's name."""
    import difflib

    out = []
    for name in sorted(names):
        close = close_to_ours(name, known) if name not in known["internal"] else []
        if close:
            out.append("%s is not a setting of any stage, so it would be ignored, and it is close to %s: did you mean "
                       "%s? (a variable of your own: give it a name not so like the package's)"
                       % (name, " or ".join(close), _respelt(name, close[0])))
            continue
        if not (isinstance(name, str) and name.startswith(PREFIXES)):
            continue
        if name in known["settings"] or name in known["internal"] or name in known["refused"]:
            continue
        if name in (known.get("renamed") or {}):
            new_name, why = known["renamed"][name]
            out.append("%s was renamed to %s (%s): set %s instead" % (name, new_name, why, new_name))
            continue
        close = difflib.get_close_matches(name, sorted(known["settings"]), n=1, cutoff=0.75)
        out.append("%s is not a setting of any stage, so it would be ignored: %s" % (
            name, "did you mean %s?" % close[0] if close else
            "remove it, or see each role's meta/argument_specs.yml for the settings there are"))
    return out


# ---- the one settings contract: each option's check, declared beside its type and documentation ---------------------
#
# A role's meta/argument_specs.yml documents each setting once; the last sentence of an option's description says
# how the setting is checked, so the one declaration carries its check too (an extra key in the option would be
# ignored by Ansible but refused by the spec's schema):
#
#     Check: KIND [from MIN] [to MAX] [unless SETTING] [FIELD=KIND ...].
#
# KIND is one of KINDS, with ``?`` (an empty value, the setting off, passes) and ``[]`` (each entry of a list);
# ``from``/``to`` bound a count or a port; ``unless SETTING`` names the setting that lets a plain-http hub or a mount
# of the host by; ``fields`` with ``FIELD=KIND`` pairs checks the named keys of a mapping (an absent key passes).

_CHECK_LINE = re.compile(r"(?:^|\s)Check: (?P<check>[^\s].*?)\.?$")
_CHECK_KIND = re.compile(r"(?P<base>[a-z_0-9]+)(?P<many>\[\])?(?P<optional>\?)?")


class SettingError(ValueError):
    """A declaration that cannot be read (a Check sentence that names no known kind); ``.field`` is its option."""

    def __init__(self, field, message):
        super().__init__("%s: %s" % (field, message))
        self.field = field


def _description_text(option):
    text = (option or {}).get("description", "")
    return " ".join(" ".join(str(line) for line in text).split() if isinstance(text, list) else str(text).split())


def parse_check(field, text):
    """``count from 1 to 10080`` -> ``{kind: 'count', min: 1, max: 10080}``; ``hub? unless x`` -> ``{kind: 'hub?',
    unless: 'x'}``; ``fields a=url b=host[]`` -> ``{kind: 'fields', fields: {a: 'url', b: 'host[]'}}``."""
    words, out = text.split(), {}
    if not words:
        raise SettingError(field, "an empty Check sentence")
    out["kind"] = words.pop(0)
    fields = {}
    while words:
        word = words.pop(0)
        if word in ("from", "to", "unless") and words:
            value = words.pop(0)
            if word == "unless":
                out["unless"] = value
            elif value.lstrip("-").isdigit():
                out["min" if word == "from" else "max"] = int(value)
            else:
                raise SettingError(field, "Check: %r after %r is no whole number" % (value, word))
        elif "=" in word and out["kind"] == "fields":
            key, kind = word.split("=", 1)
            fields[key] = kind
        else:
            raise SettingError(field, "Check: cannot read %r (KIND [from MIN] [to MAX] [unless SETTING])" % word)
    kinds = list(fields.values()) if out["kind"] == "fields" else [out["kind"]]
    for kind in kinds:
        match = _CHECK_KIND.fullmatch(kind)
        base = match.group("base") if match else kind
        if base == "urls":
            continue
        if not match or (base not in _ONE and base not in _MANY):
            raise SettingError(field, "Check: unknown kind %r (one of %s, optionally with [] and ?)"
                               % (kind, ", ".join(KINDS)))
    if fields:
        out["fields"] = fields
    return out


def declared_check(field, option):
    """The check an option's description declares (its last sentence, ``Check: ...``); None when it declares none."""
    match = _CHECK_LINE.search(_description_text(option))
    return parse_check(field, match.group("check")) if match else None


def spec_options(specs):
    """{setting: option} of every entry point of one or more roles' argument specs: ``specs`` is a file's content
    (``{argument_specs: {...}}``), its ``argument_specs`` mapping, or a list of either."""
    out = {}
    for spec in specs if isinstance(specs, list) else [specs]:
        entries = (spec or {}).get("argument_specs", spec) or {}
        for entry in entries.values():
            for name, option in ((entry or {}).get("options") or {}).items():
                out.setdefault(name, option or {})
    return out


def declared_checks(specs):
    """{setting: check} for every option of ``specs`` whose description declares a check."""
    out = {}
    for name, option in spec_options(specs).items():
        check = declared_check(name, option)
        if check is not None:
            out[name] = check
    return out


def checked_names(specs):
    """The settings a check of ``specs`` reads: each one with a declared check and each one an ``unless`` names."""
    checks = declared_checks(specs)
    return sorted(set(checks) | {check["unless"] for check in checks.values() if check.get("unless")})


def _truth(value):
    """Ansible's ``bool`` filter's reading of a setting (yes, true, on, 1)."""
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "y", "true", "t", "on", "1")
    return value is True or value == 1


def _with_args(name, check, values, options):
    """The ``[kind, setting, value, ...]`` row that ``problems`` takes, for one declared check."""
    kind, row = check["kind"], [check["kind"], name, values[name]]
    base = kind.rstrip("?").replace("[]", "")
    if base == "count":
        row += [check.get("min", 0), check.get("max")]
    elif base == "port":
        row += [check.get("min", 1)]
    elif base in ("hub", "mounts") and check.get("unless"):
        other = check["unless"]
        allowed = _truth(values[other] if other in values else (options.get(other) or {}).get("default", False))
        row += [allowed, other]
    return row


def check_settings(specs, values):
    """The one validator: every problem of ``values`` ({setting: value}) under the checks ``specs`` declare, as
    ``[{field, message}]`` (the message names the field and the fix). A setting absent from ``values`` is not checked
    here (undefined, or left to its stage); a setting without a declared check is not checked."""
    options, out = spec_options(specs), []
    for name, check in sorted(declared_checks(specs).items()):
        if name not in values:
            continue
        if check["kind"] == "fields":
            value = values[name]
            if not isinstance(value, dict):
                out.append({"field": name, "message": "%s is a mapping (%s), not %r"
                            % (name, ", ".join(sorted(check["fields"])), value)})
                continue
            rows = [[kind, "%s.%s" % (name, key), value[key]] for key, kind in sorted(check["fields"].items())
                    if key in value]
        else:
            rows = [_with_args(name, check, values, options)]
        out += [{"field": name, "message": message} for message in problems(rows)]
    return out
