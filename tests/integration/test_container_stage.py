"""The container stage against the simulated host: bad input is refused before anything is made.

These run ansible-playbook for real and need a Docker engine and root (the sim host's device nodes). Each test
uses its own container name and workspace, so nothing collides with the demo or the molecule scenario.
"""

import json
import subprocess
import uuid

import pytest
from grpo_testkit import docker_exists, playbook

pytestmark = pytest.mark.integration

@pytest.fixture
def run(sim_host, tmp_path):
    """Run the container stage with extra vars; yields (runner, container name, workspace)."""
    name = "grpo-test-" + uuid.uuid4().hex[:8]
    workspace = tmp_path / "workspace"

    def runner(extra=None, env=None, args=(), tags="container"):
        extra_vars = {"npu_container_name": name, "npu_container_workspace_host": str(workspace)}
        extra_vars.update(extra or {})
        return playbook("site.yml", "-i", "inventories/sim", "--tags", tags, "-e", json.dumps(extra_vars),
                        *args, env=env)

    yield runner, name, workspace
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


def refused(result, name, workspace, *needles):
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    for needle in needles:
        assert needle in out, "%r not in output:\n%s" % (needle, out[-4000:])
    assert not docker_exists(name), "a container was created"
    assert not workspace.exists(), "the workspace was created"


def test_missing_card_device_node(run):
    runner, name, workspace = run
    # the simulated host has cards 0 to 7, as a 910B server
    result = runner({"npu_container_visible_devices": [2, 9]})
    refused(result, name, workspace, "davinci9 is missing; card 9 is not on this host",
            "npu-smi lists no card 9", "npu_container_visible_devices")


def test_missing_driver_directory(run, tmp_path):
    runner, name, workspace = run
    result = runner({"npu_container_driver_dir": str(tmp_path / "no-driver")})
    refused(result, name, workspace, "the driver folder %s does not exist" % (tmp_path / "no-driver"),
            "npu_container_driver_dir")


def test_engine_not_running(run, tmp_path):
    runner, name, workspace = run
    result = runner(env={"DOCKER_HOST": "unix://%s/no-engine.sock" % tmp_path})
    refused(result, name, workspace, "The Docker engine on sim910b does not answer", "npu_container_mode: none")


def test_everything_not_ready_is_listed_at_once(run, tmp_path):
    """A host with several problems gets them all in one message, the engine's among them (it used to stop on the
    engine alone, and the rest came one rerun later)."""
    runner, name, workspace = run
    result = runner({"npu_container_visible_devices": [2, 9]},
                    env={"DOCKER_HOST": "unix://%s/no-engine.sock" % tmp_path})
    refused(result, name, workspace, "NPU host not ready", "The Docker engine on sim910b does not answer",
            "davinci9 is missing; card 9 is not on this host", "npu-smi lists no card 9")


def test_a_python_without_requests_is_named_with_the_rest(run, tmp_path):
    """The issue's first contact: the system's python3 without requests ran the stages; the stage stopped on
    "Failed to import the required Python library (requests)" alone. Now it is one line of the list, with the fix."""
    import shutil

    system = shutil.which("python3", path="/usr/bin")
    if not system or subprocess.run([system, "-c", "import requests"], capture_output=True,
                                    check=False).returncode == 0:
        pytest.skip("needs a system python3 without requests (this machine's has it)")
    runner, name, workspace = run
    result = runner({"ansible_python_interpreter": system, "npu_container_driver_dir": str(tmp_path / "no-driver")})
    refused(result, name, workspace, "NPU host not ready",
            "the Python that runs the stages on sim910b (%s) lacks the requests library" % system,
            "install python3-requests, or set ansible_python_interpreter",
            "the driver folder %s does not exist" % (tmp_path / "no-driver"))


def test_image_absent_and_not_pullable(run):
    runner, name, workspace = run
    result = runner({"npu_container_image": "127.0.0.1:9/nowhere/cann:absent", "npu_container_pull": True})
    refused(result, name, workspace, "Image 127.0.0.1:9/nowhere/cann:absent is not on sim910b and cannot be pulled",
            "npu_container_image")


def test_image_absent_and_pull_off(run):
    runner, name, workspace = run
    result = runner({"npu_container_image": "grpo-test/absent:1", "npu_container_pull": False})
    refused(result, name, workspace, "npu_container_pull is false")


def test_unhealthy_card(run, tmp_path):
    runner, name, workspace = run
    smi = tmp_path / "npu-smi"
    build = playbook("playbooks/sim_host.yml", "-i", "inventories/sim", "-e",
                     json.dumps({"sim_host_unhealthy_cards": [2], "npu_container_npu_smi": str(smi)}))
    assert build.returncode == 0, build.stdout[-2000:]
    # the card the simulated inventory trains on (npu_container_visible_devices: [2])
    result = runner({"npu_container_npu_smi": str(smi)})
    refused(result, name, workspace, "card 2 (910B3) reports health Critical")


@pytest.mark.parametrize("extra, needle", [
    ({"npu_container_shm_size": "eight gigs"}, "npu_container_shm_size ('eight gigs') must be a size"),
    ({"npu_container_visible_devices": []}, "npu_container_visible_devices must be a non-empty list"),
    ({"npu_container_visible_devices": [0, 0]}, "distinct card numbers"),
    ({"npu_container_visible_devices": "zero"}, "npu_container_visible_devices"),
    ({"npu_container_mode": "podman"}, "npu_container_mode"),
    ({"npu_container_min_free_gib": 10 ** 9}, "npu_container_min_free_gib"),
    ({"npu_container_env": {"1BAD": "x"}}, "npu_container_env: '1BAD' is not an environment variable name"),
])
def test_bad_settings(run, extra, needle):
    runner, name, workspace = run
    refused(runner(extra), name, workspace, needle)


def test_secret_never_logged(run):
    runner, name, workspace = run
    secret = "s3cr3t-" + uuid.uuid4().hex
    result = runner({"npu_container_image": "127.0.0.1:9/nowhere/cann:absent", "npu_container_pull": True,
                     "npu_container_registry": "127.0.0.1:9", "npu_container_registry_username": "u",
                     "npu_container_registry_password": secret}, env={"ANSIBLE_VERBOSITY": "3"})
    assert result.returncode != 0
    assert secret not in result.stdout + result.stderr


def test_mode_none_uses_the_host(run):
    """With one NPU host, no container means verl's Ray on the host's own network, which no table can keep: refused
    before anything is made (issue 44), unless the user's own firewall is said to keep it."""
    runner, name, workspace = run
    refusal = runner({"npu_container_mode": "none"})
    assert refusal.returncode != 0
    (_host, _task, msg), = refusal.failed
    assert "verl's Ray would listen on the host's own addresses" in msg, msg
    assert not workspace.exists()
    result = runner({"npu_container_mode": "none", "ray_cluster_accept_open_ports_without_auth": True})
    assert result.returncode == 0, result.stdout[-3000:]
    assert not docker_exists(name)
    assert workspace.is_dir()
    # the second play ran on the host itself as a member of npu_envs
    assert "ok: [sim910b]" in result.stdout.split("Check that each training environment answers")[1]


def test_check_mode_shows_the_container_and_creates_nothing(run):
    runner, name, workspace = run
    result = runner(args=("--check", "--diff"))
    assert result.returncode == 0, result.stdout[-3000:]
    assert "-    exists: false\n+    exists: true" in result.stdout
    assert "does not run yet (check mode)" in result.stdout
    assert not docker_exists(name)
    assert not workspace.exists()


def test_other_stage_alone_still_finds_the_container(run):
    """`--tags <later stage>` skips this stage's work but still puts its container into npu_envs."""
    runner, name, workspace = run
    assert runner().returncode == 0
    alone = runner(tags="no_such_stage", args=("-v",))
    assert alone.returncode == 0, alone.stdout[-3000:]
    assert "(item=%s@sim910b)" % name in alone.stdout
    assert "grpo_env_ready: true" in alone.stdout
    assert "Run the CANN container" not in alone.stdout
    subprocess.run(["docker", "stop", name], capture_output=True, check=True)
    stopped = runner(tags="no_such_stage", args=("-v",))
    assert "grpo_env_ready: false" in stopped.stdout and "grpo_env_ready: true" not in stopped.stdout


def test_a_rerun_changes_nothing_and_skips_the_environment_probe(run):
    """Read from ansible-runner's events, by task name: the first run makes the container and probes the new
    environment; the rerun changes nothing and does not probe again (the environment is not new to the chain)."""
    runner, name, workspace = run
    probe = "Common | Ask Python for its version and the workspace"
    first = runner()
    assert first.returncode == 0, first.stdout[-3000:]
    changed = [task for _host, task in first.changed]
    assert "Container | Run the CANN container" in changed and "Container | Record what runs, in the workspace" in changed
    assert probe in [task for _host, task in first.tasks("runner_on_ok")]
    again = runner()
    assert again.returncode == 0, again.stdout[-3000:]
    assert again.changed == [], again.changed
    assert probe not in [task for _host, task in again.tasks("runner_on_ok")]
    assert {stats["changed"] for stats in again.stats.values()} == {0}


def test_check_mode_of_the_whole_chain_on_a_fresh_host_ends_green(run):
    """`--check --diff` before the first run (issue 43): the container stage previews the container, and every later
    stage says it cannot preview yet and ends for that environment instead of failing on a container that is not
    there."""
    runner, name, workspace = run
    result = runner(tags="all", args=("--check", "--diff"))
    assert result.returncode == 0, result.stdout[-3000:]
    text = " ".join(result.stdout.split())
    for stage in ("deps", "patch", "assets", "train", "eval"):
        assert "the container does not exist yet (or does not run): the %s stage cannot preview" % stage in text, stage
    assert result.failed == []
    assert not docker_exists(name)
    assert not workspace.exists()
