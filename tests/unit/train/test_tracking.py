"""The trackers' settings refused before a launch, and where TensorBoard may listen (never every interface)."""

import shlex

from ascend_grpo.train import tracking

import train_filters  # noqa: E402


def test_the_guides_trackers_pass():
    assert tracking.problems(["console", "tensorboard"]) == []
    assert tracking.problems(["console", "swanlab", "mlflow", "file"]) == []


def test_a_misspelt_tracker_is_named_with_the_one_meant():
    found = tracking.problems(["console", "tensorbaord"])
    assert found == ["{loggers}: 'tensorbaord' is not one of verl's trackers here (console, tensorboard, "
                     "swanlab, mlflow, wandb, file); did you mean tensorboard?"]
    assert tracking.problems([]) and tracking.problems("console")  # not a list
    assert tracking.problems(["console", "console"]) == ["{loggers} names a tracker twice: console, console"]
    # the stage's filter names its setting
    assert train_filters.train_logger_problems(["console", "tensorbaord"], "", {}, {}) == [
        "grpo_train_loggers: 'tensorbaord' is not one of verl's trackers here (console, tensorboard, swanlab, mlflow, "
        "wandb, file); did you mean tensorboard?"]
    assert train_filters.train_logger_problems(["console", "console"], "", {}, {}) == [
        "grpo_train_loggers names a tracker twice: console, console"]


def test_wandb_needs_a_key_or_its_offline_mode():
    assert "set {wandb_key}" in tracking.problems(["console", "wandb"])[0]
    (problem,) = train_filters.train_logger_problems(["console", "wandb"], "", {}, {})
    assert "grpo_train_loggers has wandb" in problem and "set grpo_train_wandb_api_key" in problem
    assert problem.endswith("or WANDB_MODE: offline in grpo_train_env")
    assert tracking.problems(["console", "wandb"], wandb_key="k" * 40) == []
    assert tracking.problems(["console", "wandb"], user_env={"WANDB_MODE": "offline"}) == []


def test_the_trackers_are_set_here_not_in_the_overrides():
    found = train_filters.train_logger_problems(["console"], "", {}, {"trainer": {"logger": ["console", "wandb"]}})
    assert found == ["grpo_train_overrides sets trainer.logger: set grpo_train_loggers instead (it also places each "
                     "tracker's files in the workspace)"]
    assert train_filters.train_logger_problems(["console"], "", {}, {"trainer": {"total_epochs": 2}}) == []


def test_tensorboard_listens_on_loopback_when_the_container_shares_the_hosts_network():
    assert train_filters.tensorboard_bind("", "host", "10.0.0.5")["address"] == "127.0.0.1"


def test_on_dockers_bridge_it_listens_on_the_containers_own_address():
    bind = train_filters.tensorboard_bind("", "", "172.17.0.2")
    assert bind["address"] == "172.17.0.2" and "no port is published" in bind["reason"]
    assert "problem" in train_filters.tensorboard_bind("", "bridge", "")


def test_every_interface_is_refused():
    for asked in ("0.0.0.0", "::"):
        problem = train_filters.tensorboard_bind(asked, "host", "10.0.0.5")["problem"]
        assert problem.startswith("grpo_train_tensorboard_host: %s listens on every interface" % asked)
    assert "not an IP address" in train_filters.tensorboard_bind("localhost; id", "host", "")["problem"]
    assert train_filters.tensorboard_bind("127.0.0.2", "", "172.17.0.2")["address"] == "127.0.0.2"
    assert train_filters.tensorboard_bind("127.0.0.2", "", "")["reason"] == "as grpo_train_tensorboard_host asks"
    # the engine names its input; the filter, the stage's setting
    assert tracking.tensorboard_bind("::", "host", "")[1].startswith("{host}: :: listens on every interface")


def test_the_view_lines_quote_every_value():
    view = tracking.tensorboard_view("/data/grpo/tracking/tensorboard", "127.0.0.1", 6006, "user@npu-a",
                                     "qwen-grpo", "/data/grpo/venvs/stack/bin/python")
    assert view["ssh"] == "ssh -N -L 6006:127.0.0.1:6006 user@npu-a"
    assert view["open"] == "http://localhost:6006" and view["url"] == "http://127.0.0.1:6006"
    assert shlex.split(view["serve"]) == ["docker", "exec", "-d", "qwen-grpo", "/data/grpo/venvs/stack/bin/python",
                                          "-m", "tensorboard.main", "--logdir", "/data/grpo/tracking/tensorboard",
                                          "--host", "127.0.0.1", "--port", "6006"]
    odd = tracking.tensorboard_view("/w/a b", "127.0.0.1", 6006, "h", "c", "p")
    assert shlex.split(odd["serve"])[8] == "/w/a b"


def test_the_tunnel_names_an_address_a_laptop_can_use():
    # issue 43: the line named the inventory host (npu910b), which a laptop cannot resolve
    assert tracking.ssh_target("npu910b", "ssh", "203.0.113.10", "root") == "root@203.0.113.10"
    assert tracking.ssh_target("npu910b", "ssh", "203.0.113.10") == "203.0.113.10"
    # over ssh by its inventory name: the name the controller's ssh resolves
    assert tracking.ssh_target("npu-a", "ssh", "", "root") == "root@npu-a"
    # Ansible on the host itself: its inventory name is no address; a placeholder to fill in
    for connection in ("local", "ansible.builtin.local"):
        assert tracking.ssh_target("npu910b", connection) == "<the 910B host's address>"
    assert tracking.ssh_target("npu910b", "local", "198.51.100.7") == "198.51.100.7"
    for loopback in ("127.0.0.1", "localhost", "::1"):
        assert tracking.ssh_target("npu910b", "ssh", loopback) == "<the 910B host's address>"


def test_the_tensorboard_lines_carry_the_inventory_and_say_what_to_fill_in():
    view = train_filters.tensorboard_view("/w/tb", "172.17.0.2", 6006, "<the 910B host's address>", "qwen-grpo",
                                          "python3", "-i inventories/cloud910b")
    assert view["rerun"] == "ansible-playbook site.yml -i inventories/cloud910b --tags tensorboard"
    assert view["ssh"] == "ssh -N -L 6006:172.17.0.2:6006 <the 910B host's address>"
    assert "ansible_host" in view["ssh_note"]
    assert train_filters.tensorboard_view("/w/tb", "127.0.0.1", 6006, "root@203.0.113.10", "c", "p")["ssh_note"] == ""
