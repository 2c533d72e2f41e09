"""The failure catalogue (roles/grpo_train/files/triage.yml) and its engine: each failure named from log lines
transcribed verbatim from the upstream threads (tests/fixtures/triage/excerpts.txt, each with its source), the fix
filled with the run's own values, and an unknown failure shown by its first error, not the tail."""

import os

import pytest
import yaml
from grpo_testkit import ROOT

from ascend_grpo.train import run_spec, triage

CATALOGUE = os.path.join(ROOT, "roles", "grpo_train", "files", "triage.yml")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


ENTRIES = triage.validate(_load(CATALOGUE))
def _excerpts(path):
    """The blocks of excerpts.txt: {"expect", "source", "text"}."""
    blocks = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("=== "):
                expect, source = line[4:].rstrip("\n").split(" ", 1)
                blocks.append({"expect": expect, "source": source, "text": ""})
            elif blocks:
                blocks[-1]["text"] += line
    return blocks


EXCERPTS = _excerpts(os.path.join(FIXTURES, "triage", "excerpts.txt"))


def _log(name):
    with open(os.path.join(FIXTURES, "verl_logs", name), encoding="utf-8", newline="") as handle:
        return handle.read()


@pytest.mark.parametrize("excerpt", EXCERPTS, ids=lambda e: "%s-%s" % (e["expect"], e["source"].split()[0].rsplit("/", 1)[-1]))
def test_an_upstream_excerpt_is_named_with_its_failure(excerpt):
    verdict = triage.diagnose(excerpt["text"], ENTRIES, exit_status=1)
    assert verdict["id"] == excerpt["expect"], (verdict["id"], verdict["evidence"])
    assert verdict["evidence"] and verdict["evidence"] in excerpt["text"]


def test_every_entry_is_proven_by_an_excerpt_or_a_condition_and_cites_its_source():
    proven = {e["expect"] for e in EXCERPTS}
    for entry in ENTRIES:
        assert entry["upstream"] and all(u.startswith("https://github.com/") for u in entry["upstream"]), entry["id"]
        assert entry["id"] in proven or not entry.get("signatures"), "no excerpt for %s" % entry["id"]


def test_a_specific_failure_wins_over_the_worker_deaths_it_brings():
    # vLLM's KV cache error in a worker, then Ray's "actor died" in the driver: the KV cache is why
    text = ("(WorkerDict pid=1) ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.\n"
            "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n")
    assert triage.diagnose(text, ENTRIES, exit_status=1)["id"] == "kv_cache_does_not_fit"


def test_the_fix_names_the_runs_own_values():
    # the run's values come from its spec (the overrides as Hydra read them, over the composed summary), not from
    # the run script read back
    spec = run_spec.build({}, [], {"actor_rollout_ref.rollout.gpu_memory_utilization": 0.8,
                                   "data.max_prompt_length": 192, "+ray_kwargs.ray_init.num_gpus": 1})
    values = {k: v for k, v in run_spec.values(spec).items() if v is not None}
    assert values == {"actor_rollout_ref.rollout.gpu_memory_utilization": 0.8, "data.max_prompt_length": 192,
                      "ray_kwargs.ray_init.num_gpus": 1}
    verdict = triage.diagnose("ValueError: No available memory for the cache blocks.", ENTRIES, 1, values=values)
    assert "gpu_memory_utilization, now 0.8," in verdict["fix"]
    assert "data.max_prompt_length, now 192" in verdict["fix"]
    assert "data.max_response_length, now verl's default" in verdict["fix"]
    assert verdict["setting"] == "actor_rollout_ref.rollout.gpu_memory_utilization"


def test_the_fix_names_a_composed_value_the_overrides_never_set():
    # data.max_response_length is not overridden: the spec's composed summary has verl's value (the script reader
    # could only say "verl's default")
    spec = run_spec.build({"data": {"max_response_length": 1024, "max_prompt_length": 512}}, [],
                          {"actor_rollout_ref.rollout.gpu_memory_utilization": 0.8})
    verdict = triage.diagnose("ValueError: No available memory for the cache blocks.", ENTRIES, 1,
                              values=run_spec.values(spec))
    assert "data.max_prompt_length, now 512" in verdict["fix"]
    assert "data.max_response_length, now 1024" in verdict["fix"]


def test_the_real_failed_run_is_unknown_and_shown_by_its_first_error_not_ray_noise():
    # this stack's real start-up failure (tensor parallel 2 on one card): Ray's handled "Failed to detect NPU type"
    # tracebacks at the top are noise; the assertion at line 645 is where it failed, not the wrappers after it
    text = _log("failed_tp.log")
    verdict = triage.diagnose(text, ENTRIES, exit_status=1)
    assert verdict["id"] == "unknown"
    assert verdict["first_error"] == [645, "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2"]
    assert verdict["cause"] == ("the first error in the log (line 645): AssertionError: rollout world_size: 1 is not "
                                "divisible by infer_tp: 2")
    assert text.split("\n")[644].endswith(verdict["first_error"][1])


def test_conditions_without_a_log_line():
    assert triage.diagnose("", ENTRIES, exit_status=137)["id"] == "killed"
    assert triage.diagnose("step:3 - x\n", ENTRIES, exit_status=None)["id"] == "no_exit_status"
    full = triage.diagnose("RuntimeError: something\n", ENTRIES, exit_status=1, free_mb=3)
    assert full["id"] == "disk_full" and "(3 MB free now)" in full["fix"]
    assert triage.diagnose("RuntimeError: something\n", ENTRIES, exit_status=1, free_mb=9000)["id"] == "unknown"
    assert triage.diagnose("", ENTRIES, exit_status=1)["cause"] == "no error in the log; exit status 1"


def test_match_all_needs_every_condition():
    entries = triage.validate([{"id": "both", "cause": "c", "fix": "f", "setting": "s", "match": "all",
                                "signatures": ["Killed"], "exit_status": [137]}])
    assert triage.diagnose("Killed\n", entries, exit_status=137)["id"] == "both"
    assert triage.diagnose("Killed\n", entries, exit_status=1)["id"] == "unknown"
    assert triage.diagnose("other\n", entries, exit_status=137)["id"] == "unknown"


@pytest.mark.parametrize("entries, words", [
    ([], "non-empty list"),
    ([{"id": "a", "cause": "c", "fix": "f", "setting": "s"}], "names no condition"),
    ([{"id": "a", "cause": "c", "fix": "f", "signatures": ["x"]}], "lacks setting"),
    ([{"id": "a", "cause": "c", "fix": "f", "setting": "s", "signatures": ["("]}], "does not compile"),
    ([{"id": "a", "cause": "c", "fix": "f", "setting": "s", "signatures": ["x"]}] * 2, "the id is used twice"),
    ([{"id": "a", "cause": "c", "fix": "f", "setting": "s", "signatures": ["x"], "signature": "y"}],
     "unknown field(s) signature"),
])
def test_a_malformed_catalogue_is_refused_naming_the_entry(entries, words):
    with pytest.raises(triage.CatalogueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        triage.validate(entries)


def test_the_status_table_says_why_a_failed_run_ended_and_the_fix():
    import train_filters as module
    verdict = triage.diagnose("ValueError: No available memory for the cache blocks.\n", ENTRIES, 1,
                              values={"actor_rollout_ref.rollout.gpu_memory_utilization": "0.8"})
    table = module.train_status_table([{"host": "h", "state": "failed", "error": "ValueError: No available memory",
                                        "summary": {}, "triage": verdict}]).splitlines()
    assert table[3] == "    error: ValueError: No available memory"
    assert table[4] == "    why: " + verdict["cause"]
    assert table[5].startswith("    fix: give vLLM more memory (actor_rollout_ref.rollout.gpu_memory_utilization, "
                               "now 0.8,")
    assert table[5].endswith("(actor_rollout_ref.rollout.gpu_memory_utilization)")


def test_the_docs_triage_table_is_generated_from_the_catalogue():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "docs_tables.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(os.path.join(ROOT, "docs", "when-it-fails.md"), encoding="utf-8") as handle:
        page = handle.read()
    assert all("| `%s` |" % entry["id"] in page for entry in ENTRIES)


def test_an_unknown_failure_whose_first_error_has_no_line_number_is_still_named(monkeypatch):
    # first_error returns (None, error) when it cannot place the error among the lines (the train stage's wait
    # polled a log being written: the status module then crashed on "%d" and the wait failed with no message)
    monkeypatch.setattr(triage, "first_error", lambda text: (None, "AssertionError: rollout world_size: 1"))
    result = triage.diagnose("partial", [], exit_status=1)
    assert result["id"] == "unknown" and result["line"] is None
    assert result["cause"] == "the first error in the log (line unknown): AssertionError: rollout world_size: 1"


def test_a_traceback_line_with_another_workers_output_glued_on_is_found_with_its_line_number():
    # this stack's own log (tp=2 on the simulated host, 2026-12-05): Ray wrote another worker's line right after
    # the traceback's last line, without a newline between them
    text = ("\n".join(["Traceback (most recent call last):",
                        '  File "/data/grpo/verl/verl/workers/fsdp_workers.py", line 567, in _build_rollout',
                        "    assert self.world_size % infer_tp == 0",
                        "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2"
                        "\x1b[36m(WorkerDict pid=5661)\x1b[0m Model config after override: Qwen2Config {",
                        '  "architectures": ["Qwen2ForCausalLM"],', "}", ""]))
    assert triage.first_error(text) == (4, "AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2")
    result = triage.diagnose(text, [], exit_status=1)
    assert result["line"] == 4
    assert result["cause"] == ("the first error in the log (line 4): AssertionError: rollout world_size: 1 is not "
                               "divisible by infer_tp: 2")


# verl prints samples of the data set while it validates (verl/workers/reward_manager/naive.py at 634bd935:
# print("[prompt]", ...), print("[response]", ...), print("[ground_truth]", ...), print("[score]", ...)), each line
# under the TaskRunner's Ray prefix. The text is the data set's: whatever it says must not name the failure.
_SAMPLE = ("(TaskRunner pid=9581) [prompt] system\n"
           "(TaskRunner pid=9581) Solve the problem. If the log says\n"
           "(TaskRunner pid=9581) RuntimeError: NPU out of memory. Tried to allocate 3.47 GiB (NPU 0)\n"
           "(TaskRunner pid=9581) Traceback (most recent call last):\n"
           "(TaskRunner pid=9581)   File \"x.py\", line 1, in <module>\n"
           "(TaskRunner pid=9581) ValueError: No available memory for the cache blocks.\n"
           "(TaskRunner pid=9581) what is 1+1?\n"
           "(TaskRunner pid=9581) [response] The answer is \\boxed{2}. OSError: [Errno 28] No space left on device\n"
           "(TaskRunner pid=9581) [ground_truth] 2\n"
           "(TaskRunner pid=9581) [score] 1\n"
           "(TaskRunner pid=9581) ImportError: libhccl.so: cannot open shared object file\n"
           "(TaskRunner pid=9581) [score] 0.0\n")


def test_a_sample_print_that_holds_error_signatures_does_not_steer_the_diagnosis():
    """No real error: a text that quotes the out-of-memory, KV cache, disk and CANN signatures (one after a fake
    [score] line the ground truth carries) names no failure and no first error."""
    text = _SAMPLE + "(TaskRunner pid=9581) step:0 - val-core/math/reward/mean@1:0.5\n"
    verdict = triage.diagnose(text, ENTRIES, exit_status=1)
    assert verdict["id"] == "unknown", (verdict["id"], verdict["evidence"])
    assert verdict["first_error"] is None and verdict["evidence"] is None, verdict


def test_a_real_error_after_a_sample_print_is_still_named_at_its_line():
    real = ("(WorkerDict pid=5661) Traceback (most recent call last):\n"
            "(WorkerDict pid=5661)   File \"fsdp_workers.py\", line 9, in generate\n"
            "(WorkerDict pid=5661) torch.OutOfMemoryError: NPU out of memory. Tried to allocate 72.00 MiB\n")
    text = _SAMPLE + real
    verdict = triage.diagnose(text, ENTRIES, exit_status=1)
    assert verdict["id"] == "npu_out_of_memory", (verdict["id"], verdict["evidence"])
    line = _SAMPLE.count("\n") + 3
    assert verdict["line"] == line and verdict["first_error"][0] == line, verdict
