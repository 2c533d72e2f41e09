"""The grpo_checkpoint module through Ansible, with a stand-in for verl's merger (the real one runs in molecule):
merge once, skip when current, keep a folder in the way, leave the target alone when the merger fails; and
grpo_checkpoint_info, which picks the step and says whether its merge is current without changing anything."""

import json
import os

import pytest

from grpo_testkit import run_module
from grpo_testkit.setting_names import role_setting_names

# Behaves like `python -m verl.model_merger merge --backend fsdp --local_dir A --target_dir T`: writes what the
# real merger writes (weights, config, the tokenizer files training saved), or fails when told to.
FAKE_PYTHON = r'''#!/usr/bin/env python3
import os, shutil, sys
args = sys.argv[1:]
assert args[:4] == ["-m", "verl.model_merger", "merge", "--backend"], args
local, target = args[args.index("--local_dir") + 1], args[args.index("--target_dir") + 1]
if os.environ.get("FAKE_MERGER_FAIL"):
    print("RuntimeError: the shards do not fit", file=sys.stderr)
    sys.exit(3)
os.makedirs(target)
with open(os.path.join(target, "model.safetensors"), "w") as fh:
    fh.write(open(os.path.join(local, "model_world_size_1_rank_0.pt")).read())
for name in os.listdir(os.path.join(local, "huggingface")):
    shutil.copy(os.path.join(local, "huggingface", name), target)
if os.environ.get("FAKE_MERGER_TEMPLATE"):
    with open(os.path.join(target, "chat_template.jinja"), "w") as fh:
        fh.write(os.environ["FAKE_MERGER_TEMPLATE"])
'''


@pytest.fixture()
def run(tmp_path):
    python = tmp_path / "fake-python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    ck = tmp_path / "ck"
    for step in (1, 2):
        actor = ck / ("global_step_%d" % step) / "actor"
        (actor / "huggingface").mkdir(parents=True)
        (actor / "model_world_size_1_rank_0.pt").write_text("weights %d" % step)
        (actor.parent / "data.pt").write_text("dataloader %d" % step)  # verl saves it after the shards
        (actor / "huggingface" / "config.json").write_text("{}")
        (actor / "huggingface" / "chat_template.jinja").write_text("{{ trained template }}")
    (ck / "latest_checkpointed_iteration.txt").write_text("2")

    # as the eval stage runs them: their messages name its settings
    def call(env=None, check=False, **args):
        params = dict(checkpoint_dir=str(ck), target_root=str(tmp_path / "merged"), python=str(python),
                      setting_names=role_setting_names("grpo_eval", "grpo_checkpoint"), **args)
        return run_module("grpo_checkpoint", params, check=check, env=env)

    def info(**args):
        return run_module("grpo_checkpoint_info", dict(checkpoint_dir=str(ck), target_root=str(tmp_path / "merged"),
                                                       setting_names=role_setting_names("grpo_eval",
                                                                                        "grpo_checkpoint_info"),
                                                       **args))

    call.tmp = tmp_path
    call.info = info
    return call


def test_merge_once_then_skip(run):
    first = run()
    assert first["changed"] and first["step"] == 2 and first["merge"] == "merge", first
    target = run.tmp / "merged" / "global_step_2"
    assert (target / "model.safetensors").read_text() == "weights 2"
    assert json.loads((target / ".grpo-merge.json").read_text())["step"] == 2
    assert not (run.tmp / "merged" / "global_step_2.partial").exists()
    again = run()
    assert not again["changed"] and again["merge"] == "none" and again["reason"] == "it matches step 2's checkpoint"


def test_check_mode_changes_nothing(run):
    result = run(check=True)
    assert result["changed"] and result["merge"] == "merge"
    assert not (run.tmp / "merged").exists()


def test_a_folder_in_the_way_is_kept_aside(run):
    target = run.tmp / "merged" / "global_step_1"
    target.mkdir(parents=True)
    (target / "notes.txt").write_text("mine")
    result = run(step=1)
    assert result["changed"] and result["backup"].startswith(str(target) + ".bak-")
    assert open(os.path.join(result["backup"], "notes.txt")).read() == "mine"
    assert (target / "model.safetensors").read_text() == "weights 1" and not (target / "notes.txt").exists()


def test_a_failing_merger_leaves_the_target_as_it_was(run):
    run()
    target = run.tmp / "merged" / "global_step_2"
    (target / "config.json").write_text('{"edited": 1}')
    result = run(env={"FAKE_MERGER_FAIL": "1"})
    assert result.get("failed") and "verl's model merger failed on step 2 (rc 3)" in result["msg"]
    assert "RuntimeError: the shards do not fit" in result["msg"]
    assert (target / "config.json").read_text() == '{"edited": 1}'
    assert not (run.tmp / "merged" / "global_step_2.partial").exists()


def test_a_merge_with_another_chat_template_is_refused(run):
    result = run(env={"FAKE_MERGER_TEMPLATE": "{{ another }}"})
    assert result.get("failed") and "chat template differs" in result["msg"]
    assert not (run.tmp / "merged" / "global_step_2").exists()


def test_an_unsaved_step_is_refused(run):
    result = run(step=5)
    assert result.get("failed") and "grpo_eval_step: step 5 was not saved" in result["msg"]
    assert "saved steps: 1, 2" in result["msg"]


def test_info_picks_the_newest_step_and_says_a_merge_is_needed_without_making_one(run):
    found = run.info()
    assert found["changed"] is False and not found.get("failed"), found
    assert found["step"] == 2 and found["saved"] == [1, 2] and found["latest"] == 2
    assert found["merge"] == "merge" and found["reason"] == "no merged folder yet"
    assert found["target"] == str(run.tmp / "merged" / "global_step_2")
    assert not (run.tmp / "merged").exists()


def test_info_after_a_merge_says_it_is_current(run):
    run()
    found = run.info()
    assert found["merge"] == "none" and found["reason"] == "it matches step 2's checkpoint", found
    assert "backup" not in found and "source_fingerprint" not in found


def test_info_refuses_an_unsaved_step_naming_the_saved_ones(run):
    found = run.info(step=5)
    assert found.get("failed") and "grpo_eval_step: step 5 was not saved" in found["msg"], found
    assert "saved steps: 1, 2" in found["msg"]
