"""The deps stage's modules and filters name the stage's settings in their refusals, through the mapping the role's
own tasks pass (``setting_names``) or the filter's own; pinned_venv, which the eval stage calls too, names the eval
stage's settings there. The engines know only their inputs (issue 45, item 3)."""

import pytest
from ansible.errors import AnsibleFilterError
from grpo_testkit import fake_pip_python, run_module
from grpo_testkit.setting_names import role_setting_names

from deps_filters import grpo_stack_profile, pip_error  # noqa: E402

COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"
PROFILE = {"name": "t", "pins": {"six": "1.16.0"}, "phases": [{"name": "six", "requirements": ["six==1.16.0"]}]}


def test_a_missing_tarball_names_the_deps_setting_and_its_fix(tmp_path):
    path = str(tmp_path / "verl.tar.gz")
    result = run_module("verl_tarball", dict(path=path, commit=COMMIT,
                                             setting_names=role_setting_names("deps_pinning", "verl_tarball")))
    assert result["failed"] and result["msg"].startswith(
        "deps_pinning_verl_tarball: %s does not exist in the training environment. Set deps_pinning_verl_tarball to "
        "a .tar.gz of verl's source" % path), result["msg"]
    short = run_module("verl_tarball", dict(path=path, commit="634bd935",
                                            setting_names=role_setting_names("deps_pinning", "verl_tarball")))
    assert short["msg"].startswith("deps_pinning_verl_version must be a full commit (40 hexadecimal characters) to "
                                   "prove deps_pinning_verl_tarball against"), short["msg"]


def test_a_source_of_no_kind_names_the_deps_setting(tmp_path):
    names = role_setting_names("deps_pinning", "verl_source")
    result = run_module("verl_source", dict(source={"kind": "ftp"}, dest=str(tmp_path / "verl"),
                                            state_dir=str(tmp_path / ".grpo"), setting_names=names))
    assert result["failed"] and result["msg"].startswith(
        "deps_pinning_verl_source must be one of git, registry, tarball, path, got 'ftp'. Nothing was changed.")


def test_drift_names_the_deps_setting_that_accepts_it(tmp_path):
    fake, _log = fake_pip_python(tmp_path)
    result = run_module("pinned_venv", dict(state="verified", profile=PROFILE, python=str(fake),
                                            state_dir=str(tmp_path / "st"),
                                            setting_names=role_setting_names("deps_pinning", "pinned_venv")))
    assert result["failed"] and "drift in profile t: six" in result["msg"]
    assert "accept by name with deps_pinning_accept_drift only if you know why" in result["msg"], result["msg"]


@pytest.mark.parametrize("role, settings", [
    ("deps_pinning", "deps_pinning_index_url, deps_pinning_extra_index_urls, deps_pinning_wheelhouse"),
    ("grpo_eval", "grpo_eval_site.index_url, grpo_eval_site.extra_index_urls, grpo_eval_site.wheelhouse"),
])
def test_a_pin_the_index_lacks_names_each_stages_index_settings(tmp_path, role, settings):
    """One module, two stages: each names its own settings."""
    fake, _log = fake_pip_python(tmp_path)
    result = run_module("pinned_venv", dict(state="planned", profile=PROFILE, python=str(fake),
                                            state_dir=str(tmp_path / "st"),
                                            setting_names=role_setting_names(role, "pinned_venv")))
    assert result["failed"] and "no distribution of six==1.16.0" in result["msg"], result
    assert "the index settings (%s)" % settings in result["msg"], result["msg"]
    assert "{" not in result["msg"]


def test_without_a_mapping_the_messages_name_the_options(tmp_path):
    fake, _log = fake_pip_python(tmp_path)
    planned = run_module("pinned_venv", dict(state="planned", profile=PROFILE, python=str(fake),
                                             state_dir=str(tmp_path / "st")))
    assert "the index settings (index_url, extra_index_urls, wheelhouse)" in planned["msg"], planned["msg"]
    source = run_module("verl_source", dict(source={"kind": "ftp"}, dest=str(tmp_path / "verl"),
                                            state_dir=str(tmp_path / ".grpo")))
    assert source["msg"].startswith("source must be one of git, registry, tarball, path"), source["msg"]
    tarball = run_module("verl_tarball", dict(path=str(tmp_path / "none.tar.gz"), commit=COMMIT))
    assert tarball["msg"].startswith("path: %s does not exist" % (tmp_path / "none.tar.gz")), tarball["msg"]


def test_the_filters_name_the_deps_stages_settings():
    """The filters are the role layer: pip's failure and the stack's refusal name the settings themselves."""
    said = pip_error("ERROR: Could not find a version that satisfies the requirement six==0.0.42 (from versions: "
                     "none)", [])
    assert "the index settings (deps_pinning_index_url, deps_pinning_extra_index_urls, deps_pinning_wheelhouse)" \
        in said, said
    with pytest.raises(AnsibleFilterError, match=r"^grpo_stack: no stack vllm0\.12 "):
        grpo_stack_profile("vllm0.12", "deps")
