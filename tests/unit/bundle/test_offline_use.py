"""With an offline bundle, a setting that would take a part from elsewhere is refused, naming it (the expected
paths are the bundle's layout as docs/offline.md gives it: /grpo-bundle/<part>)."""

import pytest

COMMIT = "634bd9352bfd21df3abab2dcfb86deb91f04c1ba"


@pytest.fixture(name="problems")
def _problems():
    import common_filters  # here, not at collection: it imports Ansible

    return common_filters.bundle_setting_problems


def test_the_defaults_a_bundle_gives_pass(problems):
    values = {"deps_pinning_wheelhouse": "/grpo-bundle/wheels", "deps_pinning_verl_source": "tarball",
              "deps_pinning_verl_tarball": "/grpo-bundle/verl/verl-%s.tar.gz" % COMMIT,
              "assets_model_source": "local", "assets_model_local_dir": "/grpo-bundle/model",
              "assets_data_source": "local", "assets_data_local_dir": "/grpo-bundle/data",
              "assets_chat_template_sample_file": "/grpo-bundle/sample/s.tar.gz",
              "grpo_eval_site.wheelhouse": "/grpo-bundle/wheels"}
    assert problems(values, ["wheels", "verl", "model", "data", "sample"], "/b",
                    {"verl_commit": COMMIT, "sample": "sample/s.tar.gz"}) == []


def test_a_hub_source_set_by_the_user_is_refused_naming_it_and_the_fix(problems):
    found = problems({"assets_model_source": "hf", "assets_model_local_dir": "/grpo-bundle/model"}, ["model"],
                     "/srv/b")
    assert len(found) == 1
    assert found[0].startswith("assets_model_source is 'hf'") and "grpo_offline_bundle (/srv/b)" in found[0]
    assert "Remove assets_model_source" in found[0]


def test_a_setting_the_stage_does_not_pass_is_not_judged(problems):
    assert problems({"deps_pinning_wheelhouse": "/grpo-bundle/wheels"}, ["wheels"], "/b") == []


def test_another_wheel_folder_and_another_verl_commit_are_refused(problems):
    found = problems({"deps_pinning_wheelhouse": "/srv/wheels", "deps_pinning_verl_source": "tarball",
                      "deps_pinning_verl_tarball": "/grpo-bundle/verl/verl-%s.tar.gz" % ("a" * 40)},
                     ["wheels", "verl"], "/b", {"verl_commit": COMMIT})
    assert [p.split(" ", 1)[0] for p in found] == ["deps_pinning_wheelhouse", "deps_pinning_verl_tarball"]
