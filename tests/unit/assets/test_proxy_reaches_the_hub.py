"""The site's proxy reaches the hub (issue 46, item 3): the assets stage's modules ask the hub in their own
process, through huggingface_hub and datasets (requests reads HTTP_PROXY, HTTPS_PROXY and NO_PROXY from the
environment at each request: requests' docs, "Proxies") and Ansible's fetch_url (urllib's ProxyHandler, built per
request from the environment), so the proxy is in the module's environment for those calls and gone after; the
weights fetch is a detached job, which gets the proxy in its environment as a secret. The proxy's password is never
in a result."""

import json
import os
import types

import pytest
import yaml
from grpo_testkit import ROOT, run_module

from ascend_grpo.assets import math_data, weights

SECRET = "pr0xy-s3cret"
URL = "http://builder:%s@proxy.example.internal:3128" % SECRET
PROXY = {"https_proxy": URL, "no_proxy": "localhost,.example.internal"}
EXPECTED = {"HTTPS_PROXY": URL, "https_proxy": URL, "NO_PROXY": "localhost,.example.internal",
            "no_proxy": "localhost,.example.internal"}
COMMIT = "a" * 40


def proxies_now():
    return {k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}


@pytest.fixture
def no_proxy_of_our_own(monkeypatch):
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


def hub_model_info(seen):
    def model_info(self, repo_id, revision=None, files_metadata=False, **_):
        seen.append(proxies_now())
        sibling = types.SimpleNamespace
        return types.SimpleNamespace(sha=COMMIT, siblings=[
            sibling(rfilename="config.json", size=10, lfs=None),
            sibling(rfilename="model.safetensors", size=100, lfs=types.SimpleNamespace(sha256="b" * 64))])
    return model_info


def test_the_weights_plan_asks_the_hub_through_the_proxy(tmp_path, monkeypatch, no_proxy_of_our_own):
    import huggingface_hub

    seen = []
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", hub_model_info(seen))
    result = run_module("model_weights", {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "dest": str(tmp_path / "model"),
                                           "proxy": PROXY})
    assert not result.get("failed"), result
    assert result["fetch"] == "download" and seen == [EXPECTED]
    assert SECRET not in json.dumps(result)
    # the engine itself: set for the hub's call, then as it was
    seen.clear()
    weights.module_plan({"source": "hf", "repo": "Qwen/Qwen2.5-0.5B-Instruct", "dest": str(tmp_path / "model"),
                         "revision": "main", "proxy": PROXY})
    assert seen == [EXPECTED] and proxies_now() == {}


def test_a_bad_proxy_fails_the_weights_plan_naming_the_setting(tmp_path, monkeypatch, no_proxy_of_our_own):
    import huggingface_hub

    seen = []
    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", hub_model_info(seen))
    result = run_module("model_weights", {"repo": "Qwen/Qwen2.5-0.5B-Instruct", "dest": str(tmp_path / "model"),
                                           "proxy": {"https_proxy": "socks4://u:%s@p:1080" % SECRET},
                                           "setting_names": {"proxy": "grpo_proxy"}})
    assert result["failed"] and result["field"] == "proxy" and seen == []
    assert result["msg"].startswith("grpo_proxy.https_proxy (") and SECRET not in json.dumps(result)


def test_math_data_asks_the_hub_and_loads_through_the_proxy(tmp_path, monkeypatch, no_proxy_of_our_own):
    import datasets
    import huggingface_hub

    seen = []

    def dataset_info(self, repo_id, revision=None, **_):
        seen.append(("dataset_info", proxies_now()))
        return types.SimpleNamespace(sha=COMMIT)

    def load_dataset(*args, **kwargs):
        seen.append(("load_dataset", proxies_now()))
        return {}  # no split at all: the module refuses it, after the call this test is about

    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", dataset_info)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    args = {"dest": str(tmp_path / "math"), "proxy": PROXY, "cache_dir": str(tmp_path / "cache")}
    planned = run_module("math_dataset", args, check=True)
    assert not planned.get("failed") and planned["build"] == "build", planned
    built = run_module("math_dataset", args)
    assert built["failed"] and built["field"] == "repo" and "has no train split" in built["msg"]
    assert seen == [("dataset_info", EXPECTED), ("dataset_info", EXPECTED), ("load_dataset", EXPECTED)]
    assert SECRET not in json.dumps([planned, built])
    assert set(math_data.hidden_values(args)) == {SECRET}


def test_the_chat_templates_sample_is_downloaded_through_the_proxy(tmp_path, monkeypatch, no_proxy_of_our_own):
    import ansible.module_utils.urls

    seen = []

    def fetch_url(module, url, **_):
        seen.append(proxies_now())
        return None, {"status": 404, "msg": "Not Found"}  # refused at once (a 4xx is not asked again)

    monkeypatch.setattr(ansible.module_utils.urls, "fetch_url", fetch_url)
    result = run_module("chat_template", {"model_dir": str(tmp_path / "model"), "state": "proven",
                                           "sample_url": "https://mirror.example.internal/tokenizer_config.json",
                                           "sample_sha256": "c" * 64, "proxy": PROXY,
                                           "setting_names": {"sample_url": "assets_chat_template_sample_url"}},
                        check=True)
    assert result["failed"] and result["msg"].startswith("assets_chat_template_sample_url: cannot download")
    assert seen == [EXPECTED] and SECRET not in json.dumps(result)


def test_the_weights_job_gets_the_proxy_as_a_secret_of_its_environment():
    import common_filters

    assert common_filters.proxy_env(PROXY) == EXPECTED
    assert common_filters.proxy_env({}) == {}
    from ansible.errors import AnsibleFilterError

    with pytest.raises(AnsibleFilterError) as err:
        common_filters.proxy_env({"http_proxy": "proxy:3128"})
    assert str(err.value).startswith("grpo_proxy.http_proxy (proxy:3128) is not a proxy URL")
    with open(os.path.join(ROOT, "roles", "assets", "tasks", "fetch.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    start = [t for t in tasks if t.get("grpo_job", {}).get("state") == "started"]
    assert len(start) == 1
    # a secret (never written or logged), not env, and no word of the command
    assert "grpo_proxy | proxy_env" in start[0]["grpo_job"]["secret_env"]
    assert "proxy" not in json.dumps(start[0]["grpo_job"]["command"] + [start[0]["grpo_job"]["env"]])
