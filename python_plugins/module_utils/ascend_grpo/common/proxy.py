# -*- coding: utf-8 -*-
"""A site's proxy for the processes that reach out from the training environment: pip, git and the hub.

The proxy is a mapping with the keys ``http_proxy``, ``https_proxy`` and ``no_proxy`` (each optional; ``{}`` is
none). pip, git, requests and huggingface_hub (through requests or httpx) read the same environment variables,
in either case (``HTTPS_PROXY`` and ``https_proxy``): the proxy reaches them as their environment, never as a
command line option (``ps`` shows every user of the host a process's arguments, and a proxy URL may hold a
password).

- :func:`proxy_problems`: what is wrong with a proxy setting, each problem naming it and the fix, the value masked;
- :func:`proxy_env`: the environment variables for a subprocess (both cases), ``{}`` for none; :func:`through`
  adds them to every command a ``run`` callable runs;
- :func:`proxy_environ`: the same set in this process's own environment for a call (a library that reads it,
  as huggingface_hub and Ansible's fetch_url do), and restored afterwards;
- :func:`hidden_values`: its passwords, for a module's ``no_log_values``.

A module refuses a bad proxy as a :class:`ProxyError` on its ``proxy`` option (``{proxy}``). Standard library only.
"""

import contextlib
import os
import re
from urllib.parse import urlsplit

from . import secrets
from .errors import FieldError

KEYS = ("http_proxy", "https_proxy", "no_proxy")
SCHEMES = ("http", "https", "socks5", "socks5h")
# a no_proxy entry: a host or a domain (optionally with a leading '.' or '*.'), an address or a CIDR block (v4, v6),
# optionally with :port; or '*' (no proxy at all)
_NO_PROXY_ENTRY = re.compile(r"\*|(\*?\.)?[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,252})(?::[0-9]{1,5})?(?:/[0-9]{1,3})?"
                             r"|\[?[0-9A-Fa-f:.]+\]?(?:/[0-9]{1,3})?")
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")


class ProxyError(FieldError):
    """A proxy that cannot be used: ``field`` is the module's ``proxy`` option, the message names it and the fix."""

    def __init__(self, msg):
        super().__init__("proxy", msg)


def _url_problem(setting, value):
    shown = secrets.mask_userinfo(secrets.mask_url(str(value)))[0]
    fix = ("give the proxy's URL with its scheme (%s) and host, e.g. http://proxy.example.com:3128"
           % ", ".join(SCHEMES))
    if not isinstance(value, str) or _SPACE_OR_CONTROL.search(value):
        return "%s (%s) must be one URL without spaces or control characters (a newline, a tab...): %s" % (
            setting, shown, fix)
    try:
        parts = urlsplit(value)
        ok = parts.scheme.lower() in SCHEMES and bool(parts.hostname)
        ok = ok and (parts.port is None or 0 < parts.port)
    except ValueError:
        ok = False
    return None if ok else "%s (%s) is not a proxy URL: %s" % (setting, shown, fix)


def _no_proxy_problem(setting, value):
    if not isinstance(value, str) or _SPACE_OR_CONTROL.search(value.replace(", ", ",")):
        return ("%s (%r) must be one line, a comma-separated list of hosts, domains and address blocks, e.g. "
                "localhost,127.0.0.1,.example.com,10.0.0.0/8" % (setting, value))
    bad = [entry for entry in value.replace(", ", ",").split(",") if entry and not _NO_PROXY_ENTRY.fullmatch(entry)]
    if not bad:
        return None
    return ("%s: %s %s no host, domain or address block: give a comma-separated list such as "
            "localhost,127.0.0.1,.example.com,10.0.0.0/8" % (setting, ", ".join(repr(b) for b in bad),
                                                             "is" if len(bad) == 1 else "are"))


def proxy_problems(setting, value):
    """What is wrong with ``value`` as the proxy setting named ``setting``: one message each, naming the setting
    (and its key) and the fix, a URL's password masked. ``[]`` when it can be used (``{}`` or None: no proxy)."""
    if value in (None, "", {}):
        return []
    if not isinstance(value, dict):
        return ["%s is a mapping with the keys %s (each optional), not a %s" % (
            setting, ", ".join(KEYS), type(value).__name__)]
    out = ["%s: %r is not a key of it: use %s" % (setting, key, ", ".join(KEYS))
           for key in value if key not in KEYS]
    for key in ("http_proxy", "https_proxy"):
        if value.get(key) not in (None, ""):
            problem = _url_problem("%s.%s" % (setting, key), value[key])
            out += [problem] if problem else []
    if value.get("no_proxy") not in (None, ""):
        problem = _no_proxy_problem("%s.no_proxy" % setting, value["no_proxy"])
        out += [problem] if problem else []
    return [secrets.mask_url(problem) for problem in out]


def proxy_env(proxy):
    """The environment variables that hand ``proxy`` to pip, git, requests and huggingface_hub: HTTP_PROXY,
    HTTPS_PROXY and NO_PROXY and their lower-case forms (curl, and so git, reads ``http_proxy`` in lower case
    only), for the keys given; ``{}`` for no proxy. A bad proxy raises :class:`ProxyError` naming ``{proxy}``."""
    problems = proxy_problems("{proxy}", proxy)
    if problems:
        raise ProxyError("; ".join(problems))
    env = {}
    for key in KEYS:
        value = (proxy or {}).get(key)
        if value not in (None, ""):
            value = value.replace(", ", ",") if key == "no_proxy" else value
            env[key.upper()] = env[key] = value
    return env


def through(run, env):
    """``run`` (``module.run_command``'s shape: ``run(argv, environ_update=None, ...)``) with ``env`` (a proxy's
    variables, :func:`proxy_env`) added to the environment of every command it runs; ``run`` itself for none."""
    if not env:
        return run

    def run_through_proxy(argv, environ_update=None, **options):
        return run(argv, environ_update=dict(env, **(environ_update or {})), **options)
    return run_through_proxy


@contextlib.contextmanager
def proxy_environ(proxy, environ=None):
    """``proxy``'s variables (:func:`proxy_env`) in ``environ`` (this process's environment) for the ``with``
    block, as they were afterwards: for a call into a library that reads them there (huggingface_hub, datasets,
    Ansible's fetch_url). No proxy leaves ``environ`` alone (a proxy the environment has already stays)."""
    environ = os.environ if environ is None else environ
    env = proxy_env(proxy)
    before = {key: environ.get(key) for key in env}
    environ.update(env)
    try:
        yield env
    finally:
        for key, value in before.items():
            if value is None:
                environ.pop(key, None)
            else:
                environ[key] = value


def hidden_values(proxy):
    """The passwords in ``proxy``'s URLs (and a user name given alone, often a token): for a module's
    ``no_log_values``, so Ansible takes them out of everything the module returns."""
    return secrets.credentials_in(proxy or {})
