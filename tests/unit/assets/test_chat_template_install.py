"""Installing the chat template: every other key kept, the original kept once, idempotent, .jinja files too."""

import json
import os

import pytest

from ascend_grpo.assets import template_install

ORIGINAL = {"add_bos_token": False, "model_max_length": 131072, "chat_template": "{{ original }}",
            "additional_special_tokens": ["<|im_start|>", "<|im_end|>"], "eos_token": "<|im_end|>"}


@pytest.fixture()
def model(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(ORIGINAL, indent=2))
    return tmp_path


def test_install_keeps_other_keys_and_backs_up_once(model):
    result = template_install.apply(str(model), "{{ new }}")
    assert result["changed"] and result["backups"] == [str(model / "tokenizer_config.json.orig")]
    config = json.loads((model / "tokenizer_config.json").read_text())
    assert config == dict(ORIGINAL, chat_template="{{ new }}") and list(config) == list(ORIGINAL)
    assert result["diff"][0]["before"] == "{{ original }}" and result["diff"][0]["after"] == "{{ new }}"
    again = template_install.apply(str(model), "{{ new }}")
    assert again == {"changed": False, "files": [], "backups": [], "diff": []}
    # a second, different template: the first original stays the backup
    template_install.apply(str(model), "{{ newer }}")
    assert json.loads((model / "tokenizer_config.json.orig").read_text()) == ORIGINAL


def test_check_mode_writes_nothing(model):
    before = (model / "tokenizer_config.json").read_text()
    result = template_install.apply(str(model), "{{ new }}", check=True)
    assert result["changed"] and (model / "tokenizer_config.json").read_text() == before
    assert not (model / "tokenizer_config.json.orig").exists()


def test_a_jinja_file_beside_it_gets_the_template_too(model):
    (model / "chat_template.jinja").write_text("{{ saved separately }}")
    result = template_install.apply(str(model), "{{ new }}")
    assert sorted(os.path.basename(f) for f in result["files"]) == ["chat_template.jinja", "tokenizer_config.json"]
    assert (model / "chat_template.jinja").read_text() == "{{ new }}"
    assert (model / "chat_template.jinja.orig").read_text() == "{{ saved separately }}"


def test_named_templates_replace_the_default_only(model):
    named = dict(ORIGINAL, chat_template=[{"name": "default", "template": "a"}, {"name": "tool_use", "template": "b"}])
    (model / "tokenizer_config.json").write_text(json.dumps(named))
    template_install.apply(str(model), "{{ new }}")
    assert json.loads((model / "tokenizer_config.json").read_text())["chat_template"] == [
        {"name": "default", "template": "{{ new }}"}, {"name": "tool_use", "template": "b"}]


@pytest.mark.parametrize("content, words", [(None, "has no tokenizer_config.json"), ("{nope", "not valid JSON"),
                                            ("[1]", "does not hold a JSON object")])
def test_bad_folders(tmp_path, content, words):
    if content is not None:
        (tmp_path / "tokenizer_config.json").write_text(content)
    with pytest.raises(template_install.TemplateError, match=words):
        template_install.apply(str(tmp_path), "x")


# --- the guide's sample's template, proven by sha256 ------------------------------------------------------------

import hashlib  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import tarfile  # noqa: E402

import yaml  # noqa: E402
from grpo_testkit import ROOT, SAMPLE_COMMIT, need_sample_tarball, run_module  # noqa: E402
from grpo_testkit.setting_names import role_setting_names  # noqa: E402

MEMBER = "llm_rl/qwen2_5/verl_npu_demo/tokenizer_config.json"
# The sample's default system prompt, as its chat_template writes it (DOMAIN.md, "The guide's chat template": the
# reasoning inside <think> tags, the answer inside <answer> tags with \boxed{}, each tag on its own line).
SAMPLE_PROMPT_START = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def _defaults():
    with open(os.path.join(ROOT, "roles", "assets", "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def sample_bytes():
    """The sample's tokenizer_config.json read straight out of the tarball with tarfile (not through the engine)."""
    with tarfile.open(need_sample_tarball()) as archive:
        return archive.extractfile("cann-recipes-train-%s/%s" % (SAMPLE_COMMIT, MEMBER)).read()


@pytest.fixture(scope="module")
def pinned(sample_bytes):
    return hashlib.sha256(sample_bytes).hexdigest()


def _tarball(path, files, prefix="x/"):
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return str(path)


def test_the_pin_is_the_sample_files_sha256(pinned):
    """The role's default pin is the sha256 of the file at the pinned commit, and the default URL names that commit
    and the sample's folder."""
    defaults = _defaults()
    assert defaults["assets_chat_template_sample_sha256"] == pinned
    assert defaults["assets_chat_template"] == "sample"
    url = defaults["assets_chat_template_sample_url"]
    assert SAMPLE_COMMIT in url and url.endswith("/" + MEMBER) and url.startswith("https://")


def test_the_sample_from_its_tarball(pinned, sample_bytes):
    found = template_install.read_sample(need_sample_tarball(), pinned)
    assert found["member"] == "cann-recipes-train-%s/%s" % (SAMPLE_COMMIT, MEMBER)
    assert found["commit"] == SAMPLE_COMMIT and found["sha256"] == pinned
    assert found["template"] == json.loads(sample_bytes)["chat_template"]
    assert SAMPLE_PROMPT_START in found["template"]
    for marker in ("<think>", "</think>", "<answer>", "</answer>", "\\\\boxed{}"):
        assert marker in found["template"], marker
    assert found["template_sha256"] == hashlib.sha256(found["template"].encode()).hexdigest()


def test_the_sample_from_the_file_itself(tmp_path, pinned, sample_bytes):
    (tmp_path / "tokenizer_config.json").write_bytes(sample_bytes)
    found = template_install.read_sample(str(tmp_path / "tokenizer_config.json"), pinned.upper())
    assert found["member"] is None and found["commit"] is None
    assert found["template"] == json.loads(sample_bytes)["chat_template"]


def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path, pinned, sample_bytes):
    changed = sample_bytes.replace(b"You are Qwen", b"You are Rogue")
    (tmp_path / "edited.json").write_bytes(changed)
    with pytest.raises(template_install.TemplateError, match="has sha256 %s, not %s" % (
            hashlib.sha256(changed).hexdigest(), pinned)):
        template_install.read_sample(str(tmp_path / "edited.json"), pinned)
    with pytest.raises(template_install.TemplateError, match="an error page in its place"):
        template_install.sample_template(b"<html>404</html>", pinned, "https://mirror.example/x")
    # a tarball with another tokenizer_config.json: every one it holds is named with its sha256
    other = _tarball(tmp_path / "other.tar.gz", {"a/tokenizer_config.json": changed, "README.md": b"x"})
    with pytest.raises(template_install.TemplateError, match=r"holds no tokenizer_config.json with sha256 .*found: "
                                                         r"x/a/tokenizer_config.json \(sha256 "):
        template_install.read_sample(other, pinned)
    with pytest.raises(template_install.TemplateError, match="must be 64 hexadecimal digits"):
        template_install.read_sample(other, "abc")
    with pytest.raises(template_install.TemplateError, match="cannot read"):
        template_install.read_sample(str(tmp_path / "missing.json"), pinned)


@pytest.mark.parametrize("content, words", [
    (b'{"chat_template": [{"name": "default", "template": "x"}]}', "has no chat_template string (found list)"),
    (b'{"eos_token": "x"}', "has no chat_template string (found NoneType)"),
    (b'{"chat_template": "{% for m in messages %}{{ m.content }}"}', "is not valid Jinja"),
    (b'{"chat_template": "x",}', "is not valid JSON"),
    (b'{"chat_template" "x"}', "is not valid JSON"),
])
def test_data_that_is_no_template_is_refused_even_when_pinned(tmp_path, content, words):
    """The pin proves where the file came from; what it holds is checked all the same, before anything is written."""
    digest = hashlib.sha256(content).hexdigest()
    in_tar = _tarball(tmp_path / "s.tar.gz", {"tokenizer_config.json": content})
    for path in (in_tar, str(tmp_path / "s.json")):
        (tmp_path / "s.json").write_bytes(content)
        with pytest.raises(template_install.TemplateError, match=re.escape(words)):
            template_install.read_sample(path, digest)


def test_a_download_is_proven_kept_and_read_back_without_the_network(tmp_path, pinned, sample_bytes):
    calls = []

    def download(url):
        calls.append(url)
        return sample_bytes

    cache = tmp_path / "dl"
    first = template_install.load_sample(pinned, url="https://mirror.example/t.json", download=download,
                                         cache_dir=str(cache), keep=False)
    assert not first["cached"] and not cache.exists()  # check mode: read, not kept
    template_install.load_sample(pinned, url="https://mirror.example/t.json", download=download, cache_dir=str(cache))
    again = template_install.load_sample(pinned, url="https://mirror.example/t.json", download=download,
                                         cache_dir=str(cache))
    assert again["cached"] and again["origin"] == "https://mirror.example/t.json" and len(calls) == 2
    assert [p.read_bytes() for p in cache.iterdir()] == [sample_bytes]
    # a kept copy that no longer proves itself is fetched again
    next(cache.iterdir()).write_bytes(b"{}")
    assert not template_install.load_sample(pinned, url="https://m/t.json", download=download,
                                            cache_dir=str(cache))["cached"]
    assert len(calls) == 3
    # a bad download is never kept
    with pytest.raises(template_install.TemplateError):
        template_install.load_sample(pinned, url="https://m/t.json", download=lambda url: b"<html>",
                                     cache_dir=str(tmp_path / "dl2"))
    assert not (tmp_path / "dl2").exists()


def test_the_sample_goes_in_as_the_template_only(model, pinned, sample_bytes):
    """The model's own tokenizer keys stay (its tokenizer is its own); the keys where the sample's file differs are
    named."""
    sample = template_install.read_sample(need_sample_tarball(), pinned)
    other = template_install.other_keys_differing(str(model), sample["config"])
    result = template_install.apply(str(model), sample["template"])
    config = json.loads((model / "tokenizer_config.json").read_text())
    assert config == dict(ORIGINAL, chat_template=json.loads(sample_bytes)["chat_template"])
    assert result["changed"] and "added_tokens_decoder" in other
    assert "model_max_length" not in other and "chat_template" not in other
    # the sample's own keys against themselves: only the template would differ
    (model / "tokenizer_config.json").write_bytes(sample_bytes)
    assert template_install.other_keys_differing(str(model), sample["config"]) == []


# --- the module ------------------------------------------------------------------------------------------------

def test_module_installs_the_sample_from_a_tarball_with_check_diff_and_a_quiet_rerun(model, pinned):
    params = {"model_dir": str(model), "sample_file": need_sample_tarball(), "sample_sha256": pinned}
    before = (model / "tokenizer_config.json").read_text()
    check = run_module("chat_template", params, check=True)
    assert check["changed"] and (model / "tokenizer_config.json").read_text() == before
    assert SAMPLE_PROMPT_START in check["diff"][0]["after"] and check["diff"][0]["before"] == "{{ original }}"
    done = run_module("chat_template", params)
    assert done["changed"] and done["sample"]["commit"] == SAMPLE_COMMIT and done["sample"]["sha256"] == pinned
    assert done["sample"]["member"].endswith(MEMBER) and "added_tokens_decoder" in done["sample"]["other_keys_kept"]
    installed = json.loads((model / "tokenizer_config.json").read_text())["chat_template"]
    assert done["template_sha256"] == hashlib.sha256(installed.encode()).hexdigest()
    again = run_module("chat_template", params)
    assert not again["changed"] and again["files"] == []


def test_module_refuses_a_wrong_pin_before_writing_and_proves_without_a_model(model, pinned, tmp_path):
    before = (model / "tokenizer_config.json").read_text()
    bad = run_module("chat_template", {"model_dir": str(model), "sample_file": need_sample_tarball(),
                                       "sample_sha256": "0" * 64,
                                       "setting_names": role_setting_names("assets", "chat_template")})
    assert bad["failed"] and bad["msg"].startswith("assets_chat_template_sample_file: " + need_sample_tarball())
    assert "holds no tokenizer_config.json with sha256 " + "0" * 64 in bad["msg"]
    assert (model / "tokenizer_config.json").read_text() == before
    assert not (model / "tokenizer_config.json.orig").exists()
    proven = run_module("chat_template", {"model_dir": str(tmp_path / "not-yet"), "state": "proven",
                                          "sample_file": need_sample_tarball(), "sample_sha256": pinned})
    assert not proven["changed"] and proven["sample"]["commit"] == SAMPLE_COMMIT
    both = run_module("chat_template", {"model_dir": str(model), "template": "x", "sample_file": "/x",
                                        "sample_sha256": pinned})
    assert both["failed"] and "mutually exclusive" in both["msg"]


def test_module_says_what_to_set_when_the_url_cannot_be_reached(model, pinned, tmp_path):
    failed = run_module("chat_template", {"model_dir": str(model), "sample_url": "http://127.0.0.1:9/t.json",
                                          "sample_sha256": pinned, "cache_dir": str(tmp_path / "dl"),
                                          "setting_names": role_setting_names("assets", "chat_template")})
    assert failed["failed"] and "cannot download http://127.0.0.1:9/t.json" in failed["msg"]
    assert failed["msg"].startswith("assets_chat_template_sample_url: ")
    assert "assets_chat_template_sample_file" in failed["msg"]
