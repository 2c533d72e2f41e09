"""Installing the chat template: every other key kept, the original kept once, idempotent, .jinja files too."""

import json
import os

import pytest

from ascend_grpo import chat_template

ORIGINAL = {"add_bos_token": False, "model_max_length": 131072, "chat_template": "{{ original }}",
            "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "eos_token": "<|im_end|>"}


@pytest.fixture()
def model(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(ORIGINAL, indent=2))
    return tmp_path


def test_install_keeps_other_keys_and_backs_up_once(model):
    result = chat_template.apply(str(model), "{{ new }}")
    assert result["changed"] and result["backups"] == [str(model / "tokenizer_config.json.orig")]
    config = json.loads((model / "tokenizer_config.json").read_text())
    assert config == dict(ORIGINAL, chat_template="{{ new }}") and list(config) == list(ORIGINAL)
    assert result["diff"][0]["before"] == "{{ original }}" and result["diff"][0]["after"] == "{{ new }}"
    again = chat_template.apply(str(model), "{{ new }}")
    assert again == {"changed": False, "files": [], "backups": [], "diff": []}
    # a second, different template: the first original stays the backup
    chat_template.apply(str(model), "{{ newer }}")
    assert json.loads((model / "tokenizer_config.json.orig").read_text()) == ORIGINAL


def test_check_mode_writes_nothing(model):
    before = (model / "tokenizer_config.json").read_text()
    result = chat_template.apply(str(model), "{{ new }}", check=True)
    assert result["changed"] and (model / "tokenizer_config.json").read_text() == before
    assert not (model / "tokenizer_config.json.orig").exists()


def test_a_jinja_file_beside_it_gets_the_template_too(model):
    (model / "chat_template.jinja").write_text("{{ saved separately }}")
    result = chat_template.apply(str(model), "{{ new }}")
    assert sorted(os.path.basename(f) for f in result["files"]) == ["chat_template.jinja", "tokenizer_config.json"]
    assert (model / "chat_template.jinja").read_text() == "{{ new }}"
    assert (model / "chat_template.jinja.orig").read_text() == "{{ saved separately }}"


def test_named_templates_replace_the_default_only(model):
    named = dict(ORIGINAL, chat_template=[{"name": "default", "template": "a"}, {"name": "tool_use", "template": "b"}])
    (model / "tokenizer_config.json").write_text(json.dumps(named))
    chat_template.apply(str(model), "{{ new }}")
    assert json.loads((model / "tokenizer_config.json").read_text())["chat_template"] == [
        {"name": "default", "template": "{{ new }}"}, {"name": "tool_use", "template": "b"}]


@pytest.mark.parametrize("content, words", [(None, "has no tokenizer_config.json"), ("{nope", "not valid JSON"),
                                            ("[1]", "does not hold a JSON object")])
def test_bad_folders(tmp_path, content, words):
    if content is not None:
        (tmp_path / "tokenizer_config.json").write_text(content)
    with pytest.raises(chat_template.TemplateError, match=words):
        chat_template.apply(str(tmp_path), "x")
