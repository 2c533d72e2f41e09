"""Every number setting has the range its use allows (issue 44, item 5): the ``count`` check had only a minimum, so
a TensorBoard port of 70000 or a wait of a million years reached the code that uses it (a bind that fails at serve
time, Ansible retries or async seconds that overflow)."""

import glob
import os
import re

import pytest
import yaml
from grpo_testkit import ROOT, run_role

from ascend_grpo.common import settings

TRAIN_CHECK = "Preflight | Check every setting of the stage (names, paths, environment variables, profiles, counts)"
# Numbers another check holds to their range: the cluster's pinned ports (firewall.port_plan: 1024-65535, distinct),
# the cards (the container stage's own assert: distinct, at least 0).
ELSEWHERE = {"ray_cluster_port", "ray_cluster_dashboard_port", "ray_cluster_client_port",
             "ray_cluster_dashboard_grpc_port", "ray_cluster_dashboard_metrics_port",
             "ray_cluster_autoscaler_metrics_port", "ray_cluster_node_manager_port", "ray_cluster_object_manager_port",
             "ray_cluster_agent_port", "ray_cluster_agent_grpc_port", "ray_cluster_runtime_env_agent_port",
             "ray_cluster_metrics_export_port", "ray_cluster_min_worker_port", "ray_cluster_max_worker_port",
             "npu_container_visible_devices"}


@pytest.mark.parametrize("port, ok", [(0, False), (1, True), (6006, True), (65535, True), (65536, False),
                                      (70000, False)])
def test_a_port_is_1_to_65535(port, ok):
    # TCP's port field is 16 bits and port 0 is "any port" to bind (RFC 793, 6335)
    problem = settings.problems([["count", "grpo_train_tensorboard_port", port, 1, 65535]])
    assert (problem == []) is ok
    if not ok:
        assert problem == ["grpo_train_tensorboard_port (%r) must be a whole number from 1 to 65535" % port]


def test_the_train_stage_refuses_a_port_and_waits_out_of_range_before_anything(tmp_path):
    done = run_role(tmp_path, "grpo_train", {"grpo_train_tensorboard_port": 70000,
                                             "grpo_train_wait_minutes": 10 ** 12, "grpo_train_doctor_deadline": 0})
    assert done.returncode != 0
    (_host, task, msg), = done.failed
    assert task == TRAIN_CHECK
    for words in ("grpo_train_tensorboard_port (70000) must be a TCP port, a whole number from 1024 to 65535",
                  "grpo_train_wait_minutes (1000000000000) must be a whole number from 0 to",
                  "grpo_train_doctor_deadline (0) must be a whole number from 1 to"):
        assert words in msg, msg
    assert os.listdir(tmp_path) == ["grpo_train.yml"]  # nothing made


def _int_options():
    out = {}
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as handle:
            for entry in (yaml.safe_load(handle)["argument_specs"] or {}).values():
                for name, option in (entry.get("options") or {}).items():
                    if option.get("type") == "int" and not option.get("choices"):
                        out[name] = path.split(os.sep)[-3]
    return out


def _count_checks():
    """{setting: number of bounds given} from every count or port check the roles' argument specs declare (an
    option's ``Check:`` sentence) and every ['count', setting, value, ...] a role's tasks still check across
    settings."""
    specs = []
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as handle:
            specs.append(yaml.safe_load(handle))
    found = {}
    for setting, check in settings.declared_checks(specs).items():
        base = check["kind"].rstrip("?")
        if base == "count":
            found[setting] = len({"min", "max"} & set(check))
        elif base == "port":  # its minimum given or 1, its maximum 65535 (settings.port_problem)
            found[setting] = 2
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
            for setting, rest in re.findall(r"\['count\??', '([a-z0-9_]+)', [^,\]]+((?:, *-?\d+)*)\]", text):
                found[setting] = max(found.get(setting, 0), len(re.findall(r"\d+", rest)))
            # a port: its minimum given or 1, its maximum 65535 (settings.port_problem)
            for setting in re.findall(r"\['port\??', '([a-z0-9_]+)'", text):
                found[setting] = 2
    return found


def test_every_whole_number_setting_of_the_specs_is_checked_in_its_range():
    options, checks = _int_options(), _count_checks()
    assert len(options) >= 20 and "grpo_train_tensorboard_port" in options  # the specs were read
    unchecked = sorted(name for name in options if name not in checks and name not in ELSEWHERE)
    assert unchecked == []
    # a port or a wait has an upper bound where it is used
    for name in options:
        if name.endswith(("_port", "_minutes", "_deadline")) and name not in ELSEWHERE:
            assert checks[name] == 2, name
