"""What a setting can do to the scripts the stages render: nothing but be one quoted word or a comment's text.

The values are the issue's (a review and a user's tries on a converged host): an experiment name with a final newline
that the name check let through, a run folder with a newline and a command after it that became a live line of
run_grpo.sh (the folder was written into a comment), and an HCCL setting's key written unquoted into an export of
start_ray.sh, run as root on every node.
"""

import importlib.util
import os
import shlex
import subprocess

import jinja2
import pytest
from grpo_testkit import ROOT

from ascend_grpo.common import settings


def _filters(name):
    return importlib.import_module(name + "_filters").FilterModule().filters()


def _environment(folder):
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                                     trim_blocks=True)  # as Ansible renders
    environment.filters["quote"] = shlex.quote
    environment.filters["combine"] = lambda *maps: {k: v for m in maps for k, v in m.items()}  # Ansible's, flat
    environment.filters.update(_filters("common"))
    return environment


def _header(text):
    """The script's lines before its first command (`set -euo pipefail`): comments only, if nothing leaked."""
    lines = text.splitlines()
    return "\n".join(lines[:lines.index("set -euo pipefail")]) + "\n"


def test_a_name_with_a_final_newline_is_refused():
    assert settings.name_problem("grpo_train_experiment", "qwen") is None
    assert settings.name_problem("grpo_train_experiment", "qwen\n").startswith("grpo_train_experiment ('qwen\\n')")
    assert settings.subpath_problem("npu_container_stack_venv", "venvs/stack\n")
    assert settings.env_problems("grpo_train_env", {"HCCL_EXEC_TIMEOUT\n": "1"}) == [
        "grpo_train_env: 'HCCL_EXEC_TIMEOUT\\n' is not an environment variable name: use letters, digits and '_', "
        "not starting with a digit"]


def test_a_run_folder_with_a_command_after_a_newline_stays_in_its_comment(tmp_path):
    marker = tmp_path / "pwned-grpo"
    run_dir = "/data/grpo/runs/x\ntouch %s #" % marker
    text = _environment(os.path.join(ROOT, "roles", "grpo_train", "templates")).get_template("run_grpo.sh.j2").render(
        grpo_train_profiles=["npu-single"], grpo_train_env_scripts=[], grpo_train_env_merged={"A": "1"},
        grpo_train_dir=run_dir, grpo_train_override_list=["trainer.total_epochs=1"], grpo_stack_venv="",
        grpo_common_python="python3", grpo_common_state_dir="/data/grpo/.grpo", grpo_common_cluster_enabled=False, grpo_train_loggers=["console"],
        grpo_train_tracking={"folders": [], "file_dir": None})
    header = _header(text)
    assert "# By hand: bash /data/grpo/runs/x\\x0atouch %s #/run_grpo.sh" % marker in header
    # the header run for real: before, its last line was `touch <marker> #/run_grpo.sh ...`
    subprocess.run(["bash", "-c", header], check=True, cwd=tmp_path)  # a leak writes nowhere else
    assert not marker.exists()
    assert subprocess.run(["bash", "-n", "-c", text], check=False).returncode == 0


def test_an_hccl_key_that_is_a_command_is_never_written(tmp_path):
    environment = _environment(os.path.join(ROOT, "roles", "ray_cluster", "templates"))
    values = dict(grpo_train_env_scripts=[], grpo_train_env_merged={"A": "1"}, ray_cluster_token_auth=False,
                  grpo_stack_venv="", ray_cluster_argv=["ray", "start", "--head"], inventory_hostname="npu-a\nid",
                  grpo_common_cluster={"head": "npu-a\nid", "nnodes": 2})
    text = environment.get_template("start_ray.sh.j2").render(ray_cluster_node_env={"HCCL_IF_IP": "10.0.0.11"},
                                                               **values)
    assert "export HCCL_IF_IP=10.0.0.11\n" in text and "# Ray for node npu-a\\x0aid (head of 2)" in text
    with pytest.raises(Exception, match="'X=1; id >/tmp/pwned; Y' is not an environment variable name"):
        environment.get_template("start_ray.sh.j2").render(
            ray_cluster_node_env={"X=1; id >/tmp/pwned; Y": "900"}, **values)


def test_the_eval_scripts_header_keeps_a_model_name_in_its_comment(tmp_path):
    marker = tmp_path / "pwned-eval"
    text = _environment(os.path.join(ROOT, "roles", "grpo_eval", "templates")).get_template("run_eval.sh.j2").render(
        _grpo_eval_model={"name": "trained\ntouch %s" % marker}, grpo_eval_profile="npu",
        _grpo_eval_query={"work_dir": "/data/grpo/eval/x"}, grpo_eval_env_scripts=[],
        grpo_eval_env_merged={"B": "x y"}, grpo_eval_venv="/data/grpo/venvs/opencompass")
    subprocess.run(["bash", "-c", _header(text)], check=True, cwd=tmp_path)
    assert not marker.exists()
    assert "export B='x y'\n" in text


def test_exports_are_quoted_sorted_as_dictsort_and_refuse_a_bad_key():
    assert settings.shell_exports({"b": "1", "A": "x y", "HCCL": "it's"}) == (
        "export A='x y'\nexport b=1\nexport HCCL='it'\"'\"'s'")
    for key in ("1A", "A-B", "A B", "A\n", ""):
        with pytest.raises(ValueError, match="is not an environment variable name"):
            settings.shell_exports({key: "1"})
    assert settings.shell_comment("a\tb\x7fc\rd") == "a\\x09b\\x7fc\\x0dd"


@pytest.mark.parametrize("setting, value, words", [
    ("grpo_train_dir", "/data/grpo/runs/x\ntouch /tmp/pwned-grpo #", "holds a control character"),
    ("grpo_train_checkpoint_dir", "checkpoints/qwen", "must be an absolute path"),
    ("grpo_eval_dir", "/data/grpo/../../etc", "holds a '..' part"),
    ("assets_reward_path", 7, "must be an absolute path"),
])
def test_path_settings_are_checked_naming_the_setting(setting, value, words):
    problems = settings.problems([["path", setting, value]])
    assert len(problems) == 1 and problems[0].startswith(setting + " (") and words in problems[0]
    assert settings.problems([["path", setting, "/data/grpo/runs/qwen_2.5-math"]]) == []


def test_a_profile_files_env_key_that_is_a_command_is_refused_naming_the_file(tmp_path):
    own = tmp_path / "mine.yml"
    own.write_text('overrides: {}\nenv:\n  "X=1; id >/tmp/pwned; Y": "1"\n')
    profiles = _filters("deps")["grpo_profiles"]
    with pytest.raises(Exception, match=r"train profile %s: env: 'X=1; id >/tmp/pwned; Y' is not an environment "
                                        r"variable name" % own):
        profiles([str(own)], "train", os.path.join(ROOT, "roles", "grpo_train", "files", "profiles"))
    own.write_text("overrides: {}\nenv:\n  HCCL_EXEC_TIMEOUT: '900'\n")
    assert profiles([str(own)], "train", os.path.join(ROOT, "roles", "grpo_train", "files", "profiles"))[0]["data"][
        "env"] == {"HCCL_EXEC_TIMEOUT": "900"}


@pytest.mark.parametrize("entry, what", [
    ("/var/run/docker.sock:/var/run/docker.sock", "the Docker socket"),  # the issue's
    ("/:/host", "/ (which holds the Docker socket)"),  # the issue's: the host's root holds all of them
    ("/run/docker.sock:/d.sock:ro", "the Docker socket"),
    ("/var/lib/docker/volumes:/v", "/var/lib/docker"),
    ("/var:/v", "/var (which holds the Docker socket)"),
    ("/var/lib:/v", "/var/lib (which holds /var/lib/docker)"),
    ("/root/.ssh:/keys", "/root"),
    ("/etc/:/hostetc:ro", "/etc"),
])
def test_a_mount_that_hands_the_container_the_host_is_refused(entry, what):
    # the engine names the setting that lets it by as the role layer gives it (the container stage's)
    problems = settings.problems([["mounts", "npu_container_extra_volumes", [entry], False,
                                   "npu_container_allow_host_access"]])
    assert len(problems) == 1 and problems[0].startswith("npu_container_extra_volumes: %r mounts" % entry)
    assert ("mounts %s into the container" % what) in problems[0]
    assert "npu_container_allow_host_access: true" in problems[0]
    assert settings.problems([["mounts", "npu_container_extra_volumes", [entry], True]]) == []


def test_ordinary_mounts_pass():
    # the sim's own (the host's CA bundle read-only), a shared checkpoint folder, a data disk
    assert settings.mount_problems("npu_container_extra_volumes", [
        "/etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/host-ca-bundle.crt:ro", "/mnt/grpo-shared:/shared",
        "/data/models:/models:ro", "/var/tmp/grpo-cache/downloads:/var/cache/grpo-downloads"]) == []
