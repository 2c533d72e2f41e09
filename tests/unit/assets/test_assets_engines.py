"""The assets stage's engines behind its modules, called in this process: the chat template's downloader over a
``fetch`` callable shaped like Ansible's fetch_url (retries, a 4xx asked once, a size limit), the setting named when
a sample cannot be loaded, and the fix each plan refusal ends with (model_weights, math_dataset)."""

import io

import pytest

from ascend_grpo.assets import math_data, reward_deploy, template_install, weights


def _fetcher(answers):
    calls = []

    def fetch(url):
        calls.append(url)
        status, body = answers[min(len(calls), len(answers)) - 1]
        return (io.BytesIO(body) if status == 200 else None), {"status": status, "msg": "said %s" % status}
    return fetch, calls


def test_a_server_error_is_asked_three_times_then_names_the_settings_to_change():
    fetch, calls = _fetcher([(503, b""), (502, b""), (500, b"")])
    slept = []
    download = template_install.downloader(fetch, sleep=slept.append)
    with pytest.raises(template_install.TemplateError) as err:
        download("https://example.invalid/tokenizer_config.json")
    assert len(calls) == 3 and slept == [2, 4]
    assert "cannot download https://example.invalid/tokenizer_config.json (500 said 500)" in str(err.value)
    assert "set {sample_url} to a mirror, or {sample_file} to a copy" in str(err.value)


def test_a_missing_file_is_asked_once():
    fetch, calls = _fetcher([(404, b"")])
    with pytest.raises(template_install.TemplateError, match=r"\(404 said 404\)"):
        template_install.downloader(fetch, sleep=lambda s: pytest.fail("slept after a 404"))("https://x.invalid/t")
    assert len(calls) == 1


def test_a_download_after_a_failure_returns_its_bytes_and_an_oversized_one_is_refused(monkeypatch):
    fetch, _ = _fetcher([(500, b""), (200, b"{}")])
    assert template_install.downloader(fetch, sleep=lambda s: None)("https://x.invalid/t") == b"{}"
    monkeypatch.setattr(template_install, "MAX_DOWNLOAD", 4)
    fetch, _ = _fetcher([(200, b"12345")])
    with pytest.raises(template_install.TemplateError, match="is larger than 0 MB: not the sample's file"):
        template_install.downloader(fetch)("https://x.invalid/t")


def test_a_sample_that_cannot_be_loaded_names_its_setting(tmp_path):
    params = dict(model_dir=str(tmp_path), template=None, sample_file=str(tmp_path / "absent.json"),
                  sample_url=None, sample_sha256="0" * 64, cache_dir=None, state="present")
    with pytest.raises(template_install.TemplateError) as err:
        template_install.install(params, False, fetch=lambda url: pytest.fail("fetched"))
    assert str(err.value).startswith("{sample_file}: ")


def test_a_given_template_is_installed_and_its_sha_returned(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text('{"chat_template": "old", "eos_token": "x"}')
    params = dict(model_dir=str(tmp_path), template="{{ new }}", sample_file=None, sample_url=None,
                  sample_sha256=None, cache_dir=None, state="proven")
    proven = template_install.install(params, False, fetch=None)
    assert proven["changed"] is False and proven["template_sha256"] == template_install.sha256_text("{{ new }}")
    assert "sample" not in proven


def test_a_weights_refusal_ends_with_the_fix_naming_the_setting(tmp_path):
    params = dict(source="local", dest=str(tmp_path / "model"), repo="r", revision="main",
                  local_dir=str(tmp_path / "nothing"), endpoint=None, token=None, allow=None, refresh=False,
                  trust_remote_code=False)
    with pytest.raises(weights.WeightsError) as err:
        weights.module_plan(params)
    assert err.value.field == "local_dir"
    assert str(err.value).endswith(". Fix: set {local_dir} to a folder with config.json, *.safetensors "
                                   "and the tokenizer files.")


def test_an_endpoint_password_is_hidden():
    assert "s3cret" in weights.hidden_values(dict(endpoint="https://user:s3cret@mirror.invalid"))
    assert "s3cret" in math_data.hidden_values(dict(endpoint="https://user:s3cret@mirror.invalid"))


def test_a_dataset_refusal_ends_with_the_fix_naming_the_setting(tmp_path):
    params = dict(source="local", dest=str(tmp_path / "data"), repo=math_data.DATA_SOURCE, revision="main",
                  local_dir=str(tmp_path / "nothing"), endpoint=None, token=None, cache_dir=None,
                  data_source=math_data.DATA_SOURCE, instruction=math_data.INSTRUCTION)
    with pytest.raises(math_data.DataError) as err:
        math_data.module_build(params, True)
    assert err.value.field == "local_dir" and "is not a folder. Fix: set {local_dir}" in str(err.value)


def test_a_planned_reward_changes_nothing(tmp_path):
    params = dict(content="def compute_score(*a, **k):\n    return 0.0\n", engine_content=None,
                  dest=str(tmp_path / "reward.py"), name="compute_score", python="python3",
                  workspace=str(tmp_path), state_dir=str(tmp_path / "state"), state="planned")
    result = reward_deploy.module_deploy(params, False, diff=True)
    assert result["changed"] is False and result["backup"] is None and "diff" not in result
    assert not (tmp_path / "reward.py").exists()
