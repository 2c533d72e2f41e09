# -*- coding: utf-8 -*-
"""Secrets: the one place that masks what may hold one, before a message, a record or a result shows it.

- :func:`mask_url`: every URL in a text with its credentials masked (``https://user:***@host``, or
  ``https://***@host`` for a user name alone, which is often a token), whatever characters the password holds
  (``/`` and ``@`` included: users write them unescaped), and the values of signature and token query parameters
  (pre-signed URLs: ``X-Amz-Signature``, ``X-Goog-Signature``, ``Signature``, ``sig``, ``token``, ...).
- :func:`mask_endpoint`: a URL whose path is the secret (a chat webhook's) as its scheme and host only, and
  :func:`scrub`: a text with such a URL taken out wherever it appears.
- :func:`has_credentials`: whether a value holds what :func:`mask_url` would mask (a record holding it is 0600).
- :func:`git_url_env`: a git URL without its credentials, and the environment that hands them to git through a
  credential helper reading that environment (``ps`` shows every user of the host a process's arguments).
- :func:`secret_name`: whether an environment variable's name says its value is secret.
- :func:`token_shapes`: tokens of the well-known shapes in a text (Hugging Face, GitHub, AWS, OpenAI, Slack, JWT).
- :func:`printable`: a job's text with its control characters taken out, for a terminal.
- :func:`table_cell`: a name for a table's cell, escaped, so it cannot add a row or a column.

Standard library only.
"""

import re

MASK = "***"

# scheme://user:password@ with the password up to the last "@" before whitespace or a quote (users write "/", ":"
# and "@" in it unescaped); scheme://user@ with no "/" in the user (a user alone is often a token), so that
# git+https://host/repo.git@v1.0 (pip's direct reference) keeps its host
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s'\"<>/:@]*):([^\s'\"<>]*)@")
_URL_USER = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^\s'\"<>/:@]+)@")
_SIGNATURE_PARAMS = ("x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
                     "x-goog-credential", "signature", "sig", "token", "access_token", "api_key", "apikey", "key",
                     "password", "secret", "client_secret", "sas", "x-oss-signature", "ossaccesskeyid")
_QUERY_SECRET = re.compile(r"(?i)([?&;](?:%s)=)([^&#\s'\"<>(),;\]]+)"
                           % "|".join(re.escape(p) for p in _SIGNATURE_PARAMS))


def mask_url(text):
    """``text`` with the credentials of every URL in it masked (see the module's text); anything else unchanged.
    Masking twice changes nothing more."""
    text = "" if text is None else str(text)
    text = _URL_PASSWORD.sub(lambda m: "%s%s:%s@" % (m.group(1), m.group(2), MASK) if m.group(2) and m.group(2)
                             != MASK else "%s%s@" % (m.group(1), MASK), text)
    text = _URL_USER.sub(lambda m: "%s%s@" % (m.group(1), MASK), text)
    return _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)


def mask_endpoint(url):
    """A URL whose path and query are the secret (a chat webhook: Slack's ``/services/T../B../<token>``, Feishu's
    ``/hook/<uuid>``, DingTalk's ``?access_token=``) shown as ``scheme://host[:port]/***``: enough to tell which
    service it is, nothing that would let someone post to it. Not a URL: ``***``."""
    match = re.match(r"(?i)^([a-z][a-z0-9+.-]*)://(?:[^/@\s]*@)?([^/?#\s@]+)", str(url or ""))
    return "%s://%s/%s" % (match.group(1), match.group(2), MASK) if match else MASK


def scrub(text, secret):
    """``text`` with each appearance of ``secret`` (a webhook URL) replaced by :func:`mask_endpoint`'s form of it,
    then every other URL's credentials masked (:func:`mask_url`)."""
    text = "" if text is None else str(text)
    if secret:
        text = text.replace(str(secret), mask_endpoint(secret))
    return mask_url(text)


def mask_all(value):
    """``value`` (a string, or lists and mappings of them, nested) with every string masked by :func:`mask_url`:
    for a result or a record shown to a person."""
    if isinstance(value, dict):
        return {k: mask_all(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_all(v) for v in value]
    if isinstance(value, str):
        return mask_url(value)
    return value


def has_credentials(value):
    """``value`` (strings, lists, mappings, nested) holds a URL credential or a signature :func:`mask_url` masks."""
    if isinstance(value, dict):
        return any(has_credentials(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_credentials(v) for v in value)
    return isinstance(value, str) and mask_url(value) != value


def credentials_in(value):
    """The secret parts of ``value`` (strings, lists, mappings, nested): each URL's password (or its user name when
    it is alone) and each signature parameter's value; for a module's ``no_log_values``, so Ansible takes them out
    of everything it returns, the echo of its own arguments included."""
    found = set()
    if isinstance(value, dict):
        for item in value.values():
            found.update(credentials_in(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.update(credentials_in(item))
    elif isinstance(value, str):
        found.update(m.group(3) for m in _URL_PASSWORD.finditer(value))
        found.update(m.group(2) for m in _URL_USER.finditer(value))
        found.update(m.group(2) for m in _QUERY_SECRET.finditer(value))
    return sorted(v for v in found if v and v != MASK)


def record_mode(value, mode=0o644):
    """The mode of a file that holds ``value``: its owner's only (0600) when it holds a credential."""
    return 0o600 if has_credentials(value) else mode


def mask_userinfo(text):
    """(``text`` with the whole user part of every URL masked, ``https://***@host``, whatever characters the
    password holds; how many): for a text shared outside, where a user name may be a token too."""
    count = [0]

    def whole(match):
        if match.group(0) == match.group(1) + MASK + "@":
            return match.group(0)
        count[0] += 1
        return match.group(1) + MASK + "@"
    text = _URL_USER.sub(whole, _URL_PASSWORD.sub(whole, text))
    return text, count[0]


def split_url_credentials(url):
    """(url without its user and password, user, password); user and password '' when there are none. Only a
    URL's own userinfo (before the host) is taken: ``https://u:p/w@host/x`` -> ('https://host/x', 'u', 'p/w')."""
    match = re.match(r"(?i)^([a-z][a-z0-9+.-]*://)([^\s]*)@([^@\s]*)$", url or "")
    if not match:
        return url, "", ""
    user, _colon, password = match.group(2).partition(":")
    return match.group(1) + match.group(3), user, password


# git asks its credential helpers for a user and a password; this one answers from its environment, so neither
# is on a command line ("git help credentials": a helper starting with "!" is a shell snippet; "get" is asked).
_GIT_HELPER = ('!f() { test "$1" = get || exit 0; echo "username=${GRPO_GIT_USERNAME}"; '
               'echo "password=${GRPO_GIT_PASSWORD}"; }; f')


def git_url_env(url, env=None):
    """(the URL without its credentials, env) for git: the credentials reach git through the environment
    (``GIT_CONFIG_COUNT``/``KEY``/``VALUE``, git 2.31 or later, set a credential helper that prints
    ``GRPO_GIT_USERNAME``/``GRPO_GIT_PASSWORD``), never through its argv. A URL without credentials comes back
    as it is, with ``env`` unchanged. ssh URLs keep their user (no password there: the key authenticates)."""
    env = dict(env or {})
    clean, user, password = split_url_credentials(url)
    if clean == url or not (user or password) or re.match(r"(?i)^(ssh|git\+ssh)://", url or ""):
        return url, env
    if not password:  # a token given as the user name alone (https://<token>@host)
        user, password = "x-access-token", user
    count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    # an empty helper first: no helper configured elsewhere answers in ours' place
    for i, value in enumerate(["", _GIT_HELPER]):
        env["GIT_CONFIG_KEY_%d" % (count + i)] = "credential.helper"
        env["GIT_CONFIG_VALUE_%d" % (count + i)] = value
    env["GIT_CONFIG_COUNT"] = str(count + 2)
    env.update({"GRPO_GIT_USERNAME": user, "GRPO_GIT_PASSWORD": password, "GIT_TERMINAL_PROMPT": "0"})
    return clean, env


# an environment variable whose name says it is secret: HF_TOKEN, HF_AUTH, WANDB_API_KEY, GITHUB_PAT, DB_PASSWORD,
# AWS_SECRET_ACCESS_KEY, a registry's CREDENTIALS; not max_num_batched_tokens, not RAY_AUTH_TOKEN_PATH
_SECRET_WORDS = r"TOKEN|KEY|SECRET|PASS|PASSWORD|PASSWD|PAT|AUTH|CREDENTIALS?|SIGNATURE|COOKIE"
_SECRET_NAME = re.compile(r"(?i)^(?:.*[_.-])?(?:%s)(?:[_.-].*)?$" % _SECRET_WORDS)
_NOT_SECRET_NAME = re.compile(r"(?i)(?:_PATH|_FILE|_DIR|_ENABLED?|_MODE|_TYPE|_KIND|_METHOD|_LEN|_LENGTH|_NUM|_COUNT|"
                               r"_TIMEOUT|_TTL|_HEADER|_NAME)$")


def secret_name(name):
    """Whether a variable named ``name`` holds a secret: one of its words (split at ``_``, ``.``, ``-``) is a
    secret word (TOKEN, KEY, SECRET, PASS, PAT, AUTH, ...), and it does not name a file or a count of them."""
    name = str(name or "")
    return bool(_SECRET_NAME.match(name)) and not _NOT_SECRET_NAME.search(name)


def secret_values(envs, named=(), settings=()):
    """The values to take out of a text: of every variable in ``envs`` (mappings, merged) whose name
    :func:`secret_name` calls secret or that ``named`` lists, and ``settings`` (secret settings' values)."""
    named = set(named or [])
    found = [str(v) for v in settings or [] if v not in (None, "")]
    for env in envs or []:
        for name, value in (env or {}).items():
            if value not in (None, "") and (name in named or secret_name(name)):
                found.append(str(value))
    return found


# Token shapes from their issuers' public formats:
# Hugging Face user access tokens "hf_" + letters and digits; GitHub "ghp_/gho_/ghu_/ghs_/ghr_" + 36 base62 and
# fine-grained "github_pat_" + 22 + "_" + 59; AWS access key ids "AKIA"/"ASIA" + 16 upper-case letters or digits;
# OpenAI "sk-..." keys; Slack "xoxb-/xoxp-/xoxa-/xoxr-/xoxs-"; a JWT is three base64url parts, the first two of them
# JSON objects (so "eyJ", the encoding of '{"').
_TOKEN_SHAPES = re.compile(
    r"\bhf_[A-Za-z0-9]{30,}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{36,}\b"
    r"|\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b"
    r"|\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"
    r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
    r"|\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def mask_tokens(text):
    """(``text`` with every token of a well-known shape replaced by ``***``, how many)."""
    return _TOKEN_SHAPES.subn(MASK, text)


def token_shapes(text):
    """The tokens of a well-known shape in ``text``."""
    return _TOKEN_SHAPES.findall(text)


# CSI (ESC [ ... final byte) and OSC (ESC ] ... BEL or ESC \) sequences whole, then any other ESC with its next
# character, then every C0 and C1 control character but tab and newline
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[\s\S]?|\x9b[0-?]*[ -/]*[@-~]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text, newlines=True):
    """``text`` from a job (a log line, a command's output) fit for a terminal: escape sequences taken out whole,
    every other control character (``\\r``, ``\\b``, C1) taken out, tab kept; newlines kept unless ``newlines`` is
    False (one line: each becomes a space)."""
    text = _CONTROLS.sub("", _ESCAPES.sub("", "" if text is None else str(text)))
    return text if newlines else text.replace("\n", " ")


def table_cell(name):
    """A name shown in a table's cell: control characters and newlines escaped (``\\n``, ``\\x1b``), ``|`` as
    ``\\|`` and ``\\`` as ``\\\\``, so a folder's name shows as it is and cannot add a row or a column."""
    out = []
    for char in "" if name is None else str(name):
        if char == "\\":
            out.append("\\\\")
        elif char == "|":
            out.append("\\|")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or 0x7f <= ord(char) <= 0x9f or char in "\u2028\u2029\u0085":
            out.append("\\x%02x" % ord(char) if ord(char) < 0x100 else "\\u%04x" % ord(char))
        else:
            out.append(char)
    return "".join(out)
