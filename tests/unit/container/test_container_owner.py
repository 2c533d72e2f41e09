"""The containers this package makes carry its labels (the package, the workspace's path on the host), and a
same-named container that is not this workspace's is neither recreated by the container stage nor entered by the
later stages (ascend_grpo.container.container_access.owner_problem), with a message naming the container, the label found and
the fix. The inspect objects below have docker inspect's shape (Config.Labels, Mounts[].Type/Source/Destination)."""

import os

import yaml
from grpo_testkit import ROOT

from ascend_grpo.container import container_access
from container_filters import container_owner_problem  # noqa: E402

WS_HOST, WS = "/data/grpo", "/data/grpo"


def _ours():
    return container_access.container_labels(WS_HOST)


def _inspect(labels=None, mounts=((WS_HOST, WS),)):
    return {"Name": "/qwen-grpo", "Config": {"Labels": labels},
            "Mounts": [{"Type": "bind", "Source": s, "Destination": d, "RW": True} for s, d in mounts]}


def _problem(found, purpose):
    """The refusal as the stage shows it (the filter names the engine's {name} as npu_container_name)."""
    return container_owner_problem(found, "qwen-grpo", "npu1", WS_HOST, WS, purpose)


def test_the_engine_names_the_container_name_as_its_field():
    theirs = _inspect(container_access.container_labels("/home/bob/grpo"))
    msg = container_access.owner_problem(theirs, "qwen-grpo", "npu1", WS_HOST, WS, "recreate")
    assert msg.startswith("{name}: the container qwen-grpo on npu1 is another workspace's"), msg
    assert "Set {name} to a name of its own" in msg
    assert "set {name} to another name" in container_access.owner_problem(_inspect(None), "qwen-grpo", "npu1",
                                                                          WS_HOST, WS, "recreate")


def test_the_labels_name_the_package_and_the_workspace():
    ours = _ours()
    assert ours[container_access.LABEL_WORKSPACE] == "/data/grpo"
    assert container_access.container_labels("/data/grpo/") == ours
    assert set(ours) == {container_access.LABEL_PROJECT, container_access.LABEL_WORKSPACE}


def test_no_container_or_this_workspaces_may_be_recreated_and_entered():
    for purpose in ("recreate", "enter"):
        assert _problem(None, purpose) == "" and _problem({}, purpose) == ""
        assert _problem(_inspect(dict(_ours(), **{"org.opencontainers.image.vendor": "x"})), purpose) == ""


def test_another_workspaces_container_is_refused_naming_its_label_and_the_fix():
    theirs = _inspect(container_access.container_labels("/home/bob/grpo"), mounts=(("/home/bob/grpo", WS),))
    for purpose in ("recreate", "enter"):
        msg = _problem(theirs, purpose)
        assert msg.startswith("npu_container_name: the container qwen-grpo on npu1 is another workspace's"), msg
        assert "%s=/home/bob/grpo" % container_access.LABEL_WORKSPACE in msg and "/data/grpo" in msg
        assert "docker rm -f qwen-grpo" in msg and "Nothing was changed." in msg


def test_an_unlabelled_container_is_never_recreated():
    """Made by an earlier version (the workspace mounted as it mounts it) or by someone else: recreating would end
    what runs in it, so the stage stops and says how to remove it once the user knows it is theirs."""
    for found in (_inspect(None), _inspect({}), _inspect(None, mounts=(("/srv/other", "/data"),))):
        msg = _problem(found, "recreate")
        assert msg.startswith("npu_container_name: a container named qwen-grpo already exists on npu1 without the "
                              "label %s=/data/grpo" % container_access.LABEL_WORKSPACE), msg
        assert "docker rm -f qwen-grpo" in msg and "Nothing was changed." in msg


def test_an_unlabelled_container_is_entered_only_when_it_mounts_this_workspace_exactly():
    assert _problem(_inspect(None), "enter") == ""  # an earlier version's: a run in it can still be watched
    for mounts in ((("/data/grpo2", WS),), ((WS_HOST, "/workspace"),), ()):
        msg = _problem(_inspect(None, mounts=mounts), "enter")
        assert msg.startswith("npu_container_name: the container qwen-grpo on npu1 carries no label"), msg
        assert "Nothing was changed." in msg
    volume = _inspect(None, mounts=())
    volume["Mounts"] = [{"Type": "volume", "Source": WS_HOST, "Destination": WS}]
    assert _problem(volume, "enter") != ""


def _tasks(name):
    with open(os.path.join(ROOT, "roles", "npu_container", "tasks", name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_the_stage_labels_its_container_and_checks_the_name_before_its_first_change():
    run = [t for t in _tasks("container.yml") if "community.docker.docker_container" in t][0]
    assert "container_labels" in run["community.docker.docker_container"].get("labels", ""), run
    checks = [t for t in _tasks("preflight.yml") if "container_owner_problem" in yaml.safe_dump(t)]
    assert checks and "'recreate'" in yaml.safe_dump(checks[-1]) and "ansible.builtin.assert" in checks[-1]
    main = _tasks("main.yml")
    assert main[0]["ansible.builtin.import_tasks"] == "preflight.yml"  # the checks come before anything is made
    enter = [t for t in _tasks("inventory.yml") if "container_owner_problem" in yaml.safe_dump(t)]
    assert enter and "'enter'" in yaml.safe_dump(enter[0]) and "ansible.builtin.assert" in enter[0]
