"""Models carry no code: a model folder that would run code of its own when loaded is refused before anything
loads it, naming the file, unless grpo_trust_remote_code says the user trusts its source; the default fetch takes
weights, config and tokenizer files only.

What "carries code" means comes from transformers' dynamic modules (transformers/dynamic_module_utils.py and the
``auto_map`` handling of AutoConfig/AutoTokenizer): an ``auto_map`` entry in ``config.json`` or
``tokenizer_config.json`` names ``module.Class``, and the module is the folder's own ``module.py``, imported (run)
when the folder is loaded with ``trust_remote_code=True`` (OpenCompass 0.5.2's default).
"""

import fnmatch
import json
import os

import pytest
import yaml

from ascend_grpo.assets import weights
from grpo_testkit import ROOT
from fakehub import FakeHub

REPO = "Org/Tiny-Instruct"
# the shape of a planted remote-code model: an auto_map naming a configuration module the folder ships
AUTO_MAP = {"AutoConfig": "configuration_x.XConfig", "AutoModelForCausalLM": "modeling_x.XForCausalLM"}
PLANTED = "import pathlib\npathlib.Path('/tmp/grpo-remote-code-ran').touch()\n"


def _model_folder(path, config=None, tokenizer_config=None, extra=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(dict({"model_type": "qwen2", "hidden_size": 64}, **(config or {}))))
    (path / "generation_config.json").write_text("{}")
    (path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE"}}))
    (path / "tokenizer_config.json").write_text(json.dumps(dict({"chat_template": "{{ messages }}"},
                                                                **(tokenizer_config or {}))))
    (path / "model.safetensors").write_bytes(os.urandom(1000))
    for name, text in (extra or {}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path


def _local(src, dest, **kw):
    return dict({"source": "local", "dest": str(dest), "local_dir": str(src)}, **kw)


def _refused(spec, *names):
    with pytest.raises(weights.WeightsError) as err:
        weights.plan(spec)
    text = str(err.value)
    assert err.value.field == "trust_remote_code", text
    assert all(name in text for name in names), text
    assert "set {trust_remote_code}: true" in text, text
    return text


# --- the engine: what in a folder would run --------------------------------------------------------------------

def test_a_config_auto_map_is_refused_naming_config_json(tmp_path):
    src = _model_folder(tmp_path / "src", config={"auto_map": AUTO_MAP})
    _refused(_local(src, tmp_path / "dest"), "config.json", "configuration_x.XConfig")
    assert not (tmp_path / "dest").exists()


def test_a_tokenizer_config_auto_map_is_refused_naming_it(tmp_path):
    src = _model_folder(tmp_path / "src", tokenizer_config={
        "auto_map": {"AutoTokenizer": ["tokenization_x.XTokenizer", None]}})
    text = _refused(_local(src, tmp_path / "dest"), "tokenizer_config.json", "tokenization_x.XTokenizer")
    assert "config.json (" not in text.replace("tokenizer_config.json (", "")


@pytest.mark.parametrize("stray", ["configuration_x.py", "sub/modeling_x.py", "__pycache__/x.cpython-311.pyc"])
def test_a_stray_code_file_is_refused_naming_it(tmp_path, stray):
    src = _model_folder(tmp_path / "src", extra={stray: PLANTED})
    _refused(_local(src, tmp_path / "dest"), stray)
    assert weights.remote_code(str(src)) == [(stray, "Python code")]


def test_a_clean_folder_carries_no_code_and_is_copied(tmp_path):
    src = _model_folder(tmp_path / "src")
    assert weights.remote_code(str(src)) == []
    assert weights.remote_code_problem(str(src), "the model") is None
    step = weights.plan(_local(src, tmp_path / "dest"))
    assert step["fetch"] == "copy" and step["trust_remote_code"] is False


def test_the_trust_setting_lets_a_folder_with_code_through(tmp_path):
    src = _model_folder(tmp_path / "src", config={"auto_map": AUTO_MAP}, extra={"configuration_x.py": PLANTED})
    assert weights.remote_code_problem(str(src), "the model", trust=True) is None
    step = weights.plan(_local(src, tmp_path / "dest", trust_remote_code=True))
    assert step["fetch"] == "copy" and step["trust_remote_code"] is True
    weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert json.loads((tmp_path / "dest" / "config.json").read_text())["auto_map"] == AUTO_MAP


def test_a_complete_folder_that_gained_an_auto_map_is_refused_again(tmp_path):
    """The folder may change after it was fetched (anything root in the container can write it): a plan that would
    say 'complete' looks again."""
    src = _model_folder(tmp_path / "src")
    dest = tmp_path / "dest"
    weights.fetch(weights.plan(_local(src, dest)), out=open(os.devnull, "w", encoding="utf-8"))
    assert weights.plan(_local(src, dest))["fetch"] == "none"
    (dest / "modeling_x.py").write_text(PLANTED)
    _refused(_local(src, dest), "modeling_x.py")


# --- the fetch's patterns ----------------------------------------------------------------------------------------

def _assets_default_patterns():
    with open(os.path.join(ROOT, "roles", "assets", "defaults", "main.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["assets_model_allow_patterns"]


@pytest.mark.parametrize("patterns", [weights.DEFAULT_ALLOW, _assets_default_patterns()],
                         ids=["engine", "assets_defaults"])
def test_the_default_patterns_take_weights_config_and_tokenizer_but_no_code(patterns):
    def taken(name):
        return any(fnmatch.fnmatch(name, p) for p in patterns)

    # Qwen2.5-1.5B-Instruct's files on the hub: weights, config and tokenizer
    for name in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                 "tokenizer_config.json", "vocab.json", "merges.txt"):
        assert taken(name), name
    for name in ("configuration_x.py", "modeling_x.py", "tokenization_x.py", "sub/modeling_x.py"):
        assert not taken(name), name


def test_a_hub_fetch_leaves_code_files_behind(tmp_path):
    root = tmp_path / "hub"
    _model_folder(root / "models" / REPO, extra={"configuration_x.py": PLANTED})
    dest = tmp_path / "dest"
    with FakeHub(str(root)) as hub:
        step = weights.plan({"source": "hf", "dest": str(dest), "repo": REPO, "revision": "main",
                             "endpoint": hub.url})
        assert "configuration_x.py" not in step["files"]
        weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert not (dest / "configuration_x.py").exists() and (dest / weights.MANIFEST).is_file()


def test_a_hub_fetch_asked_for_code_is_refused_before_anything_is_fetched(tmp_path):
    root = tmp_path / "hub"
    _model_folder(root / "models" / REPO, extra={"configuration_x.py": PLANTED})
    dest = tmp_path / "dest"
    with FakeHub(str(root)) as hub:
        _refused({"source": "hf", "dest": str(dest), "repo": REPO, "revision": "main", "endpoint": hub.url,
                  "allow": ["*.json", "*.safetensors", "*.py"]}, "configuration_x.py")
    assert not dest.exists()


def test_a_mirror_that_plants_an_auto_map_gets_no_manifest(tmp_path):
    """A hostile mirror adds an auto_map to config.json: the fetch refuses before the manifest that would make the
    folder complete, so the stage never records it as ready and the next plan does not say 'none'."""
    root = tmp_path / "hub"
    _model_folder(root / "models" / REPO, config={"auto_map": AUTO_MAP})
    dest = tmp_path / "dest"
    with FakeHub(str(root)) as hub:
        step = weights.plan({"source": "hf", "dest": str(dest), "repo": REPO, "revision": "main",
                             "endpoint": hub.url})
        with pytest.raises(weights.WeightsError) as err:
            weights.fetch(step, out=open(os.devnull, "w", encoding="utf-8"))
    assert err.value.field == "trust_remote_code" and "config.json" in str(err.value)
    assert not (dest / weights.MANIFEST).exists()

