"""Generated: hostile text for every string that reaches a script the stages render, through the validators and the
templates. Each value is either refused by name by its validator or reaches the script only as (part of) one shell
word or inside a comment: read back with shlex (POSIX rules, comments dropped), every word that holds a piece of
the value holds all of it, so no piece of it became a command, an option or a second word.

The values: control characters (a newline first of all), shell metacharacters and quotes, '..', a very long one
and non-ASCII text, each around a marker word.
"""

import importlib.util
import itertools
import os
import re
import shlex
import subprocess

import jinja2
import pytest
from grpo_testkit import ROOT

from ascend_grpo.common import settings
from grpo_testkit.hostile import HOSTILE, MARK



def _filters(name):
    return importlib.import_module(name + "_filters").FilterModule().filters()


def _env(folder):
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(folder), undefined=jinja2.StrictUndefined,
                                     trim_blocks=True)
    environment.filters["quote"] = shlex.quote
    environment.filters["combine"] = lambda *maps: {k: v for m in maps for k, v in m.items()}
    environment.filters.update(_filters("common"))
    return environment


def _confined(script, value):
    """Every shlex word of ``script`` that holds a piece of ``value`` (its marker) holds all of it, and bash reads
    the script."""
    words = shlex.split(script, comments=True, posix=True)
    holding = [w for w in words if MARK in w]
    assert all(value in w for w in holding), [w[:120] for w in holding]
    assert subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True, check=False).returncode == 0


def _train(**over):
    values = dict(grpo_train_profiles=["npu-single"], grpo_train_env_scripts=["/usr/local/Ascend/set_env.sh"],
                  grpo_train_env_merged={"A": "1"}, grpo_train_dir="/data/grpo/runs/p/e",
                  grpo_train_override_list=["trainer.total_epochs=1"], grpo_stack_venv="/data/grpo/venvs/stack",
                  grpo_common_python="/data/grpo/venvs/stack/bin/python", grpo_common_state_dir="/data/grpo/.grpo",
                  grpo_common_cluster_enabled=True,
                  grpo_train_loggers=["console", "tensorboard", "file"],
                  grpo_train_tracking={"folders": ["/data/grpo/tracking/tensorboard/p/e"],
                                       "file_dir": "/data/grpo/tracking/file/p/e"},
                  _grpo_train_cluster_handover={"records": {"cluster": {
                      "nnodes": 2, "head": "npu-a", "head_ip": "10.0.0.11", "port": 6379, "auth": "token",
                      "token_path": "/data/grpo/.grpo/ray/auth_token"}}})
    for key, value in over.items():
        if key.startswith("cluster_"):
            values["_grpo_train_cluster_handover"]["records"]["cluster"][key[8:]] = value
        else:
            values[key] = value
    return _env(os.path.join(ROOT, "roles", "grpo_train", "templates")).get_template("run_grpo.sh.j2").render(**values)


def _eval(**over):
    values = dict(_grpo_eval_model={"name": "trained"}, grpo_eval_profile="npu", _grpo_eval_query={"work_dir": "/w"},
                  grpo_eval_env_scripts=["/usr/local/Ascend/set_env.sh"], grpo_eval_env_merged={"B": "2"},
                  grpo_eval_venv="/data/grpo/venvs/opencompass")
    for key, value in over.items():
        if key == "model_name":
            values["_grpo_eval_model"] = {"name": value}
        elif key == "work_dir":
            values["_grpo_eval_query"] = {"work_dir": value}
        else:
            values[key] = value
    return _env(os.path.join(ROOT, "roles", "grpo_eval", "templates")).get_template("run_eval.sh.j2").render(**values)


def _ray(**over):
    values = dict(grpo_train_env_scripts=["/usr/local/Ascend/set_env.sh"], grpo_train_env_merged={"A": "1"},
                  ray_cluster_node_env={"HCCL_IF_IP": "10.0.0.11"}, ray_cluster_token_auth=True,
                  ray_cluster_token_path="/data/grpo/.grpo/ray/auth_token", grpo_stack_venv="/data/grpo/venvs/stack",
                  ray_cluster_argv=["ray", "start", "--head"], inventory_hostname="npu-a",
                  grpo_common_cluster={"head": "npu-a", "nnodes": 2})
    values.update(over)
    return _env(os.path.join(ROOT, "roles", "ray_cluster", "templates")).get_template("start_ray.sh.j2").render(
        **values)


# (where the value goes, how it is put there): every string a user setting (or the inventory) puts into a script.
PLACES = {
    "run_grpo.sh grpo_train_dir": lambda v: _train(grpo_train_dir=v),
    "run_grpo.sh grpo_train_profiles": lambda v: _train(grpo_train_profiles=["npu-single", v]),
    "run_grpo.sh grpo_train_env value": lambda v: _train(grpo_train_env_merged={"A": v}),
    "run_grpo.sh grpo_train_overrides": lambda v: _train(grpo_train_override_list=["trainer.experiment_name=" + v]),
    "run_grpo.sh env script": lambda v: _train(grpo_train_env_scripts=[v]),
    "run_grpo.sh stack venv": lambda v: _train(grpo_stack_venv=v, grpo_common_python=v + "/bin/python"),
    "run_grpo.sh tracker folders": lambda v: _train(grpo_train_tracking={"folders": [v, v + "/x"], "file_dir": v}),
    "run_grpo.sh trackers": lambda v: _train(grpo_train_loggers=["console", v]),
    "run_grpo.sh cluster head": lambda v: _train(cluster_head=v),
    "run_grpo.sh cluster token path": lambda v: _train(cluster_token_path=v),
    "run_eval.sh model name": lambda v: _eval(model_name=v),
    "run_eval.sh grpo_eval_profile": lambda v: _eval(grpo_eval_profile=v),
    "run_eval.sh work dir": lambda v: _eval(work_dir=v),
    "run_eval.sh grpo_eval_env value": lambda v: _eval(grpo_eval_env_merged={"B": v}),
    "run_eval.sh venv": lambda v: _eval(grpo_eval_venv=v),
    "start_ray.sh ray_cluster_hccl_env value": lambda v: _ray(ray_cluster_node_env={"HCCL_IF_IP": v}),
    "start_ray.sh node name": lambda v: _ray(inventory_hostname=v),
    "start_ray.sh argv": lambda v: _ray(ray_cluster_argv=["ray", "start", "--resources=" + v]),
    "start_ray.sh token path": lambda v: _ray(ray_cluster_token_path=v),
}


@pytest.mark.parametrize("place, value", list(itertools.product(sorted(PLACES), HOSTILE)),
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 and x.isprintable() else None)
def test_a_hostile_value_stays_one_word_or_a_comment(place, value):
    try:
        script = PLACES[place](value)
    except Exception as err:  # pylint: disable=broad-except
        # the one value no script can hold as a word: a NUL byte, refused (a comment holds it escaped)
        assert "\x00" in value and "holds a NUL byte" in str(err), err
        return
    assert "\x00" not in script
    _confined(script, value)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_key_is_never_written(value):
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):  # only long: a name all the same
        assert "\nexport %s=1\n" % value in _train(grpo_train_env_merged={value: "1"})
        return
    with pytest.raises(Exception, match="is not an environment variable name"):
        _train(grpo_train_env_merged={value: "1"})
    with pytest.raises(Exception, match="is not an environment variable name"):
        _ray(ray_cluster_node_env={value: "1"})


# The validators: every hostile value is refused by name where the setting is a name, a folder of the workspace, an
# environment variable's name or an index URL; a path may hold spaces, quotes and any letter (the templates keep it
# one word), but never a control character or a '..' part.
KINDS = {"name": "grpo_train_experiment", "subpath": "npu_container_stack_venv", "url": "deps_pinning_index_url",
         "path": "grpo_train_dir"}


@pytest.mark.parametrize("kind, value", list(itertools.product(sorted(KINDS), HOSTILE)),
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 and x.isprintable() else None)
def test_each_validator_refuses_a_hostile_value_by_name(kind, value):
    if kind == "path":
        value = "/data/" + value  # absolute: what is refused is what is hostile in it
    problems = settings.problems([[kind, KINDS[kind], value]])
    must = kind != "path" or any(ord(c) < 32 or ord(c) == 127 for c in value) or ".." in value.split("/")
    assert len(problems) == (1 if must else 0), (kind, value[:60], problems)
    assert all(p.startswith(KINDS[kind] + " (") for p in problems)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        assert settings.env_problems("grpo_train_env", {value: "1"})[0].startswith("grpo_train_env: ")
