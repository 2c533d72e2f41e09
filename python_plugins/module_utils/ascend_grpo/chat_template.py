"""Put a chat template into a model folder's tokenizer files, keeping everything else and the original.

``tokenizer_config.json`` keeps every key but ``chat_template``; a ``chat_template.jinja`` beside it (which
transformers prefers over the JSON key when both exist) gets the same text. The first time a file is changed, its
original is kept as ``<file>.orig`` and never overwritten afterwards. Nothing is written when the template is
already in place.
"""

import json
import os

CONFIG = "tokenizer_config.json"
JINJA = "chat_template.jinja"


class TemplateError(Exception):
    """A model folder whose tokenizer config cannot take the template."""


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

