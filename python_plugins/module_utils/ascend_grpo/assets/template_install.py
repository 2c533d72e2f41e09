"""Put a chat template into a model folder's tokenizer files, keeping everything else and the original.

``tokenizer_config.json`` keeps every key but ``chat_template``; a ``chat_template.jinja`` beside it (which
transformers prefers over the JSON key when both exist) gets the same text. The first time a file is changed, its
original is kept as ``<file>.orig`` and never overwritten afterwards. Nothing is written when the template is
already in place.

The guide's sample ships its chat template inside a whole ``tokenizer_config.json`` (cann-recipes-train,
``llm_rl/qwen2_5/verl_npu_demo/``), which the guide copies over the model's own. :func:`sample_template` takes that
file's text, or a ``git archive`` tarball holding it, proves it by sha256 and hands back only its ``chat_template``:
the model's other tokenizer keys stay its own (a model with a tokenizer of its own, such as the simulated host's,
would break under a whole-file copy). The template is data: it is checked to be a string of Jinja that parses, never
rendered here (transformers renders it in its sandboxed environment).
"""

import hashlib
import io
import json
import os
import re
import tarfile
import time

from ..common import proxy
from ..common.errors import StageFailure

CONFIG = "tokenizer_config.json"
JINJA = "chat_template.jinja"
SOURCES = ("template", "sample_file", "sample_url")
# A download larger than this is not the sample's file.
MAX_DOWNLOAD = 256 * 1024 * 1024
# A tokenizer_config.json is a few kB (the sample's: 8 kB); anything far larger is not one.
MAX_CONFIG_BYTES = 4 * 1024 * 1024


class TemplateError(StageFailure):
    """A template that cannot be installed: a sample that is not the pinned file, or a model folder whose tokenizer
    config cannot take it. The message names the chat_template module's option to change as ``{field}`` (in the
    assets stage, ``sample_url`` is fed by assets_chat_template_sample_url and ``sample_file`` by
    assets_chat_template_sample_file)."""


def sha256_text(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tar_commit(archive):
    """The commit ``git archive`` wrote into the tarball's global header (what ``git get-tar-commit-id`` prints)."""
    comment = (archive.pax_headers or {}).get("comment", "")
    return comment if re.fullmatch(r"[0-9a-f]{40}", comment) else None


def _is_archive(data):
    """gzip, bzip2 or xz magic, or a plain tar's ustar mark: a tarball, not the JSON file itself."""
    return data[:2] == b"\x1f\x8b" or data[:3] == b"BZh" or data[:6] == b"\xfd7zXZ\x00" or data[257:262] == b"ustar"


def _from_tarball(data, sha256, origin):
    """The tokenizer_config.json inside a tarball whose sha256 is ``sha256``: (bytes, member, commit)."""
    found = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            commit = _tar_commit(archive)
            for member in archive:
                if not member.isfile() or os.path.basename(member.name) != CONFIG or member.size > MAX_CONFIG_BYTES:
                    continue
                handle = archive.extractfile(member)
                content = handle.read() if handle else b""
                digest = hashlib.sha256(content).hexdigest()
                if digest == sha256:
                    return content, member.name, commit
                found.append("%s (sha256 %s)" % (member.name, digest))
    except (tarfile.TarError, EOFError, OSError, ValueError) as err:
        raise TemplateError("%s is neither a tokenizer_config.json nor a readable tarball: %s" % (origin, err)) from err
    raise TemplateError("%s holds no %s with sha256 %s (found: %s): it is not the sample's file this package pins"
                        % (origin, CONFIG, sha256, "; ".join(found) or "none"))


def sample_template(data, sha256, origin):
    """The chat template of the sample's ``tokenizer_config.json``, proven before anything reads it.

    ``data``: the bytes of the file itself, or of a tarball (a ``git archive`` of the sample's folder or of the
    repository) that holds it; ``sha256``: the file's pinned sha256 (also for a tarball: the file inside is what is
    proven). Returns {template, config (the sample's whole JSON object), sha256, template_sha256, member (the file's
    path in a tarball, else None), commit (the tarball's git commit, else None)}. Raises TemplateError, naming
    ``origin``, for content that is not the pinned file, JSON that does not parse, or a chat_template that is not
    a string of Jinja that parses.
    """
    sha256 = (sha256 or "").strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise TemplateError("the sample's sha256 (%r) must be 64 hexadecimal digits" % sha256)
    member = commit = None
    if not _is_archive(data):
        digest = hashlib.sha256(data).hexdigest()
        if digest != sha256:
            raise TemplateError("%s has sha256 %s, not %s: it is not the sample's %s this package pins (a changed "
                                "file, another commit, or an error page in its place)" % (origin, digest, sha256,
                                                                                          CONFIG))
        content = data
    else:
        content, member, commit = _from_tarball(data, sha256, origin)
    where = "%s in %s" % (member, origin) if member else origin
    try:
        config = json.loads(content.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as err:
        raise TemplateError("%s is not valid JSON: %s" % (where, err)) from err
    if not isinstance(config, dict):
        raise TemplateError("%s does not hold a JSON object" % where)
    template = config.get("chat_template")
    if not isinstance(template, str) or not template.strip():
        raise TemplateError("%s has no chat_template string (found %s)" % (where, type(template).__name__))
    check_jinja(template, where)
    return {"template": template, "config": config, "content": content, "sha256": sha256,
            "template_sha256": sha256_text(template), "member": member, "commit": commit}


def check_jinja(template, where):
    """Parse the template with Jinja's sandboxed environment (as transformers does) when Jinja is there: a syntax
    error is refused here, not in the middle of training. Parsing runs nothing of the template."""
    try:
        from jinja2 import TemplateSyntaxError
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:  # the environment's own Python may lack Jinja; transformers checks it when it loads
        return
    try:
        ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).parse(template)
    except TemplateSyntaxError as err:
        raise TemplateError("%s: its chat_template is not valid Jinja (line %s: %s)" % (where, err.lineno,
                                                                                      err.message)) from err


def read_sample(path, sha256):
    """:func:`sample_template` of a file (the tokenizer_config.json itself, or a tarball holding it)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise TemplateError("cannot read %s: %s" % (path, err.strerror or err)) from err
    return sample_template(data, sha256, path)


def cache_path(cache_dir, sha256):
    """Where a downloaded sample is kept once proven: named by its sha256, so a rerun needs no network."""
    return os.path.join(cache_dir, "sample-%s-%s" % (sha256.strip().lower()[:16], CONFIG))


def load_sample(sha256, path=None, url=None, download=None, cache_dir=None, keep=True):
    """The sample from a file in this environment (``path``) or from ``url`` (``download(url)`` returns its bytes),
    proven by :func:`sample_template`. A proven download is kept in ``cache_dir`` (when ``keep``: not in check
    mode) and read from there the next time, proven again. Adds ``origin`` and ``cached`` to the result."""
    if path:
        return dict(read_sample(path, sha256), origin=path, cached=False)
    if not url or download is None:
        raise TemplateError("no source for the sample's %s: give a file or a URL" % CONFIG)
    kept = cache_path(cache_dir, sha256) if cache_dir else None
    if kept and os.path.isfile(kept):
        try:
            return dict(read_sample(kept, sha256), origin=url, cached=True)
        except TemplateError:
            pass  # a kept copy that no longer proves itself is fetched again
    found = dict(sample_template(download(url), sha256, url), origin=url, cached=False)
    if kept and keep:
        os.makedirs(cache_dir, exist_ok=True)
        with open(kept + ".tmp", "wb") as handle:
            handle.write(found["content"])
        os.replace(kept + ".tmp", kept)
    return found


def other_keys_differing(model_dir, sample_config):
    """The keys besides chat_template on which the model's tokenizer_config.json and the sample's differ: these stay
    the model's own (for Qwen2.5-1.5B-Instruct, none: the sample's file differs only in its template)."""
    try:
        with open(os.path.join(model_dir, CONFIG), encoding="utf-8") as handle:
            model = json.load(handle)
    except (OSError, ValueError):
        return []
    if not isinstance(model, dict):
        return []
    keys = (set(model) | set(sample_config)) - {"chat_template"}
    return sorted(k for k in keys if (k in model) != (k in sample_config) or model.get(k) != sample_config.get(k))


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _backup(path):
    """Keep the original once; returns the backup's path when this call made it."""
    backup = path + ".orig"
    if os.path.exists(backup):
        return None
    with open(path, "rb") as src, open(backup, "wb") as dst:
        dst.write(src.read())
    return backup


def apply(model_dir, template, check=False):
    """Install ``template``; returns {changed, files, backups, diff} (diff: before/after of what changed)."""
    config_path = os.path.join(model_dir, CONFIG)
    try:
        with open(config_path, encoding="utf-8") as handle:
            text = handle.read()
        config = json.loads(text)
    except FileNotFoundError as err:
        raise TemplateError("%s has no %s: fetch the weights first" % (model_dir, CONFIG)) from err
    except ValueError as err:
        raise TemplateError("%s is not valid JSON: %s" % (config_path, err)) from err
    if not isinstance(config, dict):
        raise TemplateError("%s does not hold a JSON object" % config_path)
    current = config.get("chat_template")
    if isinstance(current, list):  # named templates: replace the default one
        named = {t.get("name"): t.get("template") for t in current if isinstance(t, dict)}
        current = named.get("default")
        config["chat_template"] = [t if t.get("name") != "default" else dict(t, template=template)
                                   for t in config["chat_template"]]
        if "default" not in named:
            config["chat_template"].append({"name": "default", "template": template})
    else:
        config["chat_template"] = template
    changes = []
    if current != template:
        changes.append((config_path, text, json.dumps(config, indent=2, ensure_ascii=False) + "\n",
                        current or ""))
    jinja_path = os.path.join(model_dir, JINJA)
    if os.path.exists(jinja_path):
        with open(jinja_path, encoding="utf-8") as handle:
            jinja_text = handle.read()
        if jinja_text != template:
            changes.append((jinja_path, jinja_text, template, jinja_text))
    backups, diff = [], []
    for path, old_text, new_text, old_template in changes:
        diff.append({"before_header": path + " (chat template)", "after_header": path + " (chat template)",
                     "before": old_template, "after": template})
        if not check:
            made = _backup(path)
            if made:
                backups.append(made)
            _write(path, new_text)
    return {"changed": bool(changes), "files": [c[0] for c in changes], "backups": backups, "diff": diff}



def downloader(fetch, sleep=time.sleep):
    """``download(url)`` -> the bytes at ``url``, asked up to three times (not again after a 4xx answer) and refused
    above :data:`MAX_DOWNLOAD`. ``fetch(url)`` -> ``(response, info)`` as Ansible's ``fetch_url`` returns them."""
    def download(url):
        last = None
        for attempt in range(3):
            response, info = fetch(url)
            if response is not None and info.get("status") == 200:
                data = response.read(MAX_DOWNLOAD + 1)
                if len(data) > MAX_DOWNLOAD:
                    raise TemplateError("%s is larger than %d MB: not the sample's file"
                                        % (url, MAX_DOWNLOAD // 2 ** 20))
                return data
            last = "%s %s" % (info.get("status"), info.get("msg", ""))
            if isinstance(info.get("status"), int) and 400 <= info["status"] < 500:
                break  # not there: asking again will not help
            if attempt < 2:
                sleep(2 * (attempt + 1))
        raise TemplateError(
            "cannot download %s (%s): set {sample_url} to a mirror, or "
            "{sample_file} to a copy on the host (the file, or a git archive tarball of the "
            "sample's folder)"
            % (url, last.strip()))
    return download


def install(params, check_mode, fetch):
    """What the chat_template module returns for its arguments: the template (given, or the proven sample's)
    installed into ``model_dir`` (``state: present``) or only proven (``proven``). ``fetch``: see
    :func:`downloader`. A refusal is a :class:`TemplateError` whose message starts with the option that gave the
    sample (``{sample_file}: `` or ``{sample_url}: ``) when the sample could not be loaded."""
    proxy.proxy_env(params.get("proxy"))  # a proxy that cannot be used is refused, a download needed or not
    sample = None
    try:
        template = params["template"]
        if template is None:
            # the download goes through the proxy (fetch, Ansible's fetch_url, reads it from the environment)
            with proxy.proxy_environ(params.get("proxy")):
                sample = load_sample(params["sample_sha256"], path=params["sample_file"], url=params["sample_url"],
                                     download=downloader(fetch), cache_dir=params["cache_dir"],
                                     keep=not check_mode)
            template = sample["template"]
            other = other_keys_differing(params["model_dir"], sample["config"])
        if params["state"] == "proven":
            result = {"changed": False, "files": [], "backups": [], "diff": []}
        else:
            result = apply(params["model_dir"], template, check=check_mode)
    except (TemplateError, OSError) as err:
        # the option that gave the sample (the module names the role's setting for it), so the message names what
        # to change
        field = "" if sample is not None else (
            "{sample_file}: " if params["sample_file"] else "{sample_url}: " if params["sample_url"] else "")
        raise TemplateError(field + str(err)) from err
    result["template_sha256"] = sha256_text(template)
    if sample is not None:
        result["sample"] = {key: sample[key] for key in ("origin", "sha256", "member", "commit", "cached")}
        result["sample"]["other_keys_kept"] = other
    return result
