"""Settings refused before a stage acts, each naming the setting (the cases a user tried: a path-escaping experiment,
a name with '/', ';' and spaces, an environment variable named 1BAD, a negative wait)."""

import os

import pytest
from ascend_grpo.common import settings
from grpo_testkit import ROOT, run_role


@pytest.mark.parametrize("value", ["../../escape", "a/b", "run; rm -rf /", "two words", "..", ".hidden", "", None,
                                   "x" * 129])
def test_names_that_would_not_stay_one_folder_are_refused(value):
    problem = settings.name_problem("grpo_train_experiment", value)
    assert problem.startswith("grpo_train_experiment (%r) becomes a folder name" % value)


@pytest.mark.parametrize("value", ["qwen2_5_1_5b_math_single", "verl_grpo_example_math", "run-2.1", "A"])
def test_plain_names_pass(value):
    assert settings.name_problem("grpo_train_experiment", value) is None


@pytest.mark.parametrize("value", ["/data/grpo/venv", "../venv", "venvs/../../x", "venvs//stack", "venvs/", 3, None])
def test_workspace_subfolders_that_would_leave_it_are_refused(value):
    problem = settings.subpath_problem("npu_container_stack_venv", value)
    assert problem.startswith("npu_container_stack_venv (%r) is a folder inside the workspace" % value)


@pytest.mark.parametrize("value", ["venvs/stack", "stack", "", "a.b/c_d-1"])
def test_workspace_subfolders_pass(value):
    assert settings.subpath_problem("npu_container_stack_venv", value) is None


# the first preflight task of each stage, which checks every setting of it
TRAIN_CHECK = "Preflight | Check every setting of the stage (names, paths, environment variables, profiles, counts)"
CONTAINER_CHECK = "Preflight | Check every setting of the stage (names, paths, environment variables, mounts)"
DEPS_CHECK = "Preflight | Check every setting of the stage (the index URLs, the verl source, paths, names)"

def test_env_names_and_counts():
    assert settings.env_problems("npu_container_env", {"1BAD": "x", "OK_1": "y", "_X": "z", "A-B": "w"}) == [
        "npu_container_env: '1BAD' is not an environment variable name: use letters, digits and '_', not starting "
        "with a digit",
        "npu_container_env: 'A-B' is not an environment variable name: use letters, digits and '_', not starting "
        "with a digit"]
    assert settings.env_problems("grpo_train_env", ["A=1"])[0].startswith("grpo_train_env is a mapping")
    assert settings.count_problem("grpo_train_wait_minutes", -5) == (
        "grpo_train_wait_minutes (-5) must be a whole number of at least 0")
    assert settings.count_problem("grpo_train_wait_minutes", True).startswith("grpo_train_wait_minutes (True)")
    assert settings.count_problem("grpo_train_wait_minutes", "1.5") is not None
    assert settings.count_problem("grpo_train_wait_minutes", 0) is None
    assert settings.count_problem("grpo_train_wait_minutes", "60") is None


def test_the_train_stage_refuses_them_before_it_reads_anything(tmp_path):
    """No record exists in this workspace: a refusal by the settings check comes before the stage reads one."""
    done = run_role(tmp_path, "grpo_train", {"grpo_train_experiment": "../../escape", "grpo_train_env": {"1BAD": "x"},
                                             "grpo_train_wait_minutes": -5,
                                             # the issue's: a live line of run_grpo.sh before
                                             "grpo_train_dir": "/data/grpo/runs/x\ntouch /tmp/pwned-grpo #"})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == TRAIN_CHECK
    for words in ("grpo_train_experiment ('../../escape') becomes a folder name", "grpo_train_env: '1BAD'",
                  "grpo_train_wait_minutes (-5) must be a whole number",
                  "grpo_train_dir ('/data/grpo/runs/x\\ntouch /tmp/pwned-grpo #') holds a control character",
                  "grpo_train_checkpoint_dir ("):
        assert words in msg, msg
    assert os.listdir(tmp_path) == ["grpo_train.yml"]  # nothing made


def test_the_container_stage_refuses_the_docker_socket_before_it_looks_at_the_host(tmp_path):
    """The issue's mount: the container was recreated with the host's Docker socket inside."""
    done = run_role(tmp_path, "npu_container", {
        "npu_container_extra_volumes": ["/var/run/docker.sock:/var/run/docker.sock"],
        "npu_container_workspace_host": str(tmp_path / "ws")})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == CONTAINER_CHECK
    assert "npu_container_extra_volumes: '/var/run/docker.sock:/var/run/docker.sock' mounts the Docker socket" in msg
    assert os.listdir(tmp_path) == ["npu_container.yml"]  # nothing made


def test_a_misspelt_setting_is_refused_naming_the_closest_one():
    known = _project_names()
    # the issue's: `grpo_train_overides: {...}` ran the stage with the defaults
    assert settings.unknown_settings(["grpo_train_overides", "grpo_train_overrides", "sim_root", "ansible_host"],
                                     known) == [
        "grpo_train_overides is not a setting of any stage, so it would be ignored: did you mean "
        "grpo_train_overrides?"]
    assert settings.unknown_settings(["npu_container_imgae"], known)[0].endswith("did you mean npu_container_image?")
    assert "see each role's meta/argument_specs.yml" in settings.unknown_settings(["grpo_zzz"], known)[0]
    # what the roles set themselves, and the replaced settings their own stage refuses with its own message
    assert settings.unknown_settings(["grpo_train_env_merged", "ray_cluster_node", "grpo_npu_host",
                                      "verl_compat_patch_profile", "grpo_cluster_head_node"], known) == []


def test_the_cluster_head_settings_that_moved_to_grpo_common_are_refused_with_their_new_names():
    known = _project_names()
    assert settings.unknown_settings(["ray_cluster_head", "ray_cluster_head_node"], known) == [
        "ray_cluster_head was renamed to grpo_cluster_head (a setting every stage shares): set grpo_cluster_head "
        "instead",
        "ray_cluster_head_node was renamed to grpo_cluster_head_node (a setting every stage shares): set "
        "grpo_cluster_head_node instead"]


def test_the_doctors_own_npu_smi_setting_is_refused_naming_the_container_stages():
    # issue 43: set only npu_container_npu_smi and the doctor's free-HBM check silently read "not on this host"
    known = _project_names()
    assert "grpo_train_npu_smi" not in known["settings"]
    (problem,) = settings.unknown_settings(["grpo_train_npu_smi", "npu_container_npu_smi"], known)
    assert problem.startswith("grpo_train_npu_smi was renamed to npu_container_npu_smi (")
    assert problem.endswith("): set npu_container_npu_smi instead")


def test_the_train_stage_refuses_a_misspelt_setting_before_anything(tmp_path):
    done = run_role(tmp_path, "grpo_train", {"grpo_train_overides": {"trainer": {"total_epochs": 2}}})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Common | Refuse a setting no stage reads (a misspelt one would be silently ignored)"
    assert "did you mean grpo_train_overrides?" in msg
    assert os.listdir(tmp_path) == ["grpo_train.yml"]  # nothing made


@pytest.mark.parametrize("url, sha", [("http://mirror.example/verl.tar.gz", "a" * 64),
                                      ("https://mirror.example/verl.tar.gz", "")])
def test_a_tarball_url_needs_https_and_its_sha256(tmp_path, url, sha):
    done = run_role(tmp_path, "deps_pinning", {"deps_pinning_verl_source": "tarball", "deps_pinning_verl_tarball": url,
                                               "deps_pinning_verl_tarball_sha256": sha})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == "Preflight | Check the source settings"
    assert "a tarball URL must be https:// with deps_pinning_verl_tarball_sha256 set" in msg
    assert os.listdir(tmp_path) == ["deps_pinning.yml"]  # nothing made


def test_an_experiment_name_with_a_final_newline_is_refused_before_anything(tmp_path):
    """The issue's: `grpo_train_experiment: "qwen\\n"` trained in a folder whose name ended in a newline."""
    done = run_role(tmp_path, "grpo_train", {"grpo_train_experiment": "qwen\n"})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == TRAIN_CHECK
    assert "grpo_train_experiment ('qwen\\n') becomes a folder name" in msg
    assert os.listdir(tmp_path) == ["grpo_train.yml"]


def test_an_index_url_that_is_no_url_is_refused_even_with_nothing_to_install(tmp_path):
    done = run_role(tmp_path, "deps_pinning", {"deps_pinning_index_url": "not a url"})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == DEPS_CHECK
    assert msg == ("deps_pinning_index_url (not a url) is not an index URL: give https://host/simple (or "
                   "file:///path for a local one)")
    assert os.listdir(tmp_path) == ["deps_pinning.yml"]


# ---- the one contract: the checks an option's description declares, and the one validator over them -------------

_SPEC = {"argument_specs": {"main": {"options": {
    "x_wait_minutes": {"type": "int", "description": ["How long.", "Check: count from 1 to 10080."]},
    "x_dir": {"type": "str", "description": "A folder, absolute. Check: path?."},
    "x_hub": {"type": "str", "description": "A mirror. Check: hub? unless x_allow_http."},
    "x_allow_http": {"type": "bool", "default": False, "description": "Accept http."},
    "x_site": {"type": "dict", "description": "Index settings. Check: fields index_url=url trusted_hosts=host[]."},
    "x_free": {"type": "str", "description": "Not checked here."}}}}}


def test_the_validator_reads_each_check_from_the_spec_and_names_the_field():
    found = settings.check_settings(_SPEC, {"x_wait_minutes": 0, "x_dir": "relative", "x_hub": "http://mirror",
                                            "x_site": {"index_url": "not a url"}, "x_free": "\n"})
    assert [p["field"] for p in found] == ["x_dir", "x_hub", "x_site", "x_wait_minutes"], found
    messages = {p["field"]: p["message"] for p in found}
    assert messages["x_wait_minutes"] == "x_wait_minutes (0) must be a whole number from 1 to 10080"
    assert messages["x_dir"].startswith("x_dir ('relative') must be an absolute path")
    assert "set x_allow_http: true to accept http" in messages["x_hub"]
    assert messages["x_site"].startswith("x_site.index_url (not a url) is not an index URL")


def test_the_validator_passes_good_values_an_allowed_http_hub_and_leaves_absent_ones_alone():
    assert settings.check_settings(_SPEC, {"x_wait_minutes": 10080, "x_dir": "", "x_hub": "http://mirror",
                                           "x_allow_http": "yes", "x_site": {"trusted_hosts": ["pypi.org"]}}) == []
    assert settings.check_settings(_SPEC, {}) == []


def test_a_check_that_names_no_kind_is_refused_naming_its_option():
    spec = {"argument_specs": {"main": {"options": {"x_y": {"description": "Check: nmae."}}}}}
    with pytest.raises(settings.SettingError, match="unknown kind 'nmae'") as err:
        settings.check_settings(spec, {"x_y": "a"})
    assert err.value.field == "x_y"


def test_the_project_names_come_from_the_files_the_caller_hands_over():
    # the engine reads no path of the Ansible tree: the role layer hands it the specs, defaults and task files
    spec = {"argument_specs": {"main": {"options": {
        "x_dir": {"description": "A folder."},
        "x_seen": {"description": "Derived, not a setting to change: what the stage found."}}}}}
    tasks = [{"name": "Keep it", "ansible.builtin.set_fact": {"x_found": 1}, "register": "x_result"},
             {"name": "Refuse the old one", "ansible.builtin.assert": {"that": ["x_old is not defined"]}}]
    known = settings.project_names([spec], [{"x_default_only": 1}], [tasks])
    assert known == {"settings": {"x_dir", "x_seen", "x_default_only"}, "internal": {"x_found", "x_result"},
                     "refused": {"x_old"}, "derived": {"x_seen"}}


def _project_names():
    """The project's names as the filter layer reads them (imported here, not at collection: it imports Ansible,
    whose sys.intern patch breaks a later import of torch in the same session)."""
    import common_filters

    return common_filters.project_names(ROOT)
