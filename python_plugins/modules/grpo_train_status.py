#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module: what a verl training run is doing, from its job state, its log and its checkpoints."""

DOCUMENTATION = r"""
---
module: grpo_train_status
short_description: Report a training run's state, step, ETA, latest metrics and checkpoints
description:
  - Reads the run's detached job (running, finished, failed, stopped), its logs (every launch's
    C(run_dir/logs/grpo-*.log), oldest first, so a resumed run's history keeps the steps before the resume; the state
    is the current log's, C(logs/latest.log)) and the checkpoint folder, and returns one summary; a failed run's
    reason is the exception at the end of its traceback.
  - The summary has the latest validation score and the best one (with their steps), where the latest step's time
    went (generation, log-prob, reference, update, reward, validation, checkpoint, other), the actor's MFU and the
    device's peak memory, as verl logs them.
  - With C(wait), blocks up to that many seconds while the run is going and has logged no new step, so an C(until)
    loop shows progress once per step. With C(plot), writes a PNG of score, response length, KL loss, the
    validation score and the step-time split against step (needs matplotlib in the environment). With
    C(compare_root), also reads every run under it and returns them side by side. Changes nothing else.
options:
  run_dir:
    description: The run folder (holds C(logs/) and C(launches.jsonl)).
    type: path
    required: true
  state_dir:
    description: Where jobs keep their state (the workspace's C(.grpo/jobs)).
    type: path
    required: true
  checkpoint_dir:
    description: The run's checkpoint folder (C(trainer.default_local_dir)).
    type: path
    required: true
  job:
    description: The job's name.
    type: str
    default: train
  wait:
    description: Seconds to wait for a new step while the run is going.
    type: float
    default: 0
  plot:
    description: Write a PNG of the metrics to this path.
    type: path
  triage:
    description:
      - The catalogue of known failures (the train role's C(files/triage.yml)), to say why a failed run ended and
        what to change. Empty, only the exception is reported.
    type: list
    elements: dict
    default: []
  records_dir:
    description:
      - The workspace's state folder (C(<workspace>/.grpo)), where the train stage's check wrote the run's spec
        (C(run-spec.json)); a triage fix names the run's values (its C(now 0.8)) from it.
      - Empty, or no spec there (a run launched by an older version), the fix says the values are not known and
        names the command that writes the spec.
    type: path
    default: ""
  inventory:
    description:
      - The C(-i) words of the inventory the user ran with (roles/grpo_common's C(grpo_common_inventory_args)), which
        the commands in a fix carry (C(ansible-playbook site.yml -i ... --tags doctor)). Empty, a placeholder.
    type: str
    default: ""
  tensorboard_dir:
    description: The run's TensorBoard folder (C(TENSORBOARD_DIR)); its event files are counted.
    type: path
  spec:
    description:
      - Also return the run's spec (C(spec)) from C(records_dir), as the train stage's check wrote it; C({}) with the
        reason in C(spec_problem) when there is none or it describes another run than C(run_dir). One call for the
        eval stage, which reports what the run behind its checkpoint is.
    type: bool
    default: false
  compare_root:
    description:
      - The workspace's runs folder (C(runs/<project>/<experiment>)); every run under it that has a log is read and
        returned in C(compare), with a table in C(compare_table).
    type: path
  max_actor_ckpt_to_keep:
    description:
      - Not read. Named in the C(error) of a run that filled its disk (keep fewer checkpoints), as the setting
        C(setting_names) maps it to (the one that sets verl's C(trainer.max_actor_ckpt_to_keep)).
    type: raw
extends_documentation_fragment:
  - grpo_setting_names
author:
  - GRPO on Ascend maintainers
"""

EXAMPLES = r"""
- name: Look at the run
  grpo_train_status:
    run_dir: /data/grpo/runs/verl_grpo_example_math/qwen2_5_1_5b_math_single
    state_dir: /data/grpo/.grpo/jobs
    checkpoint_dir: /data/grpo/checkpoints/verl_grpo_example_math/qwen2_5_1_5b_math_single
  register: run
"""

RETURN = r"""
spec:
  description: With C(spec), the run's spec (the merged overrides, the argv, the composed summary), or C({}).
  returned: when spec is true
  type: dict
spec_problem:
  description: With C(spec), why there is none (missing, an older version's, another run's), with the command that
    writes it.
  returned: when spec is true and there is none
  type: str
state:
  description: absent (never launched), running, finished, failed or stopped.
  returned: always
  type: str
step:
  description: The last logged training step (null before the first).
  returned: always
  type: int
total_steps:
  description: The run's total training steps, as verl logged them.
  returned: always
  type: int
steps_logged:
  description: Training steps logged by this run's log (0 until the first).
  returned: always
  type: int
summary:
  description: >-
    Progress, ETA and the latest metrics under short names; C(epoch) is the epoch the latest step is in, counted
    from 1 as C(trainer.total_epochs) counts them (from the loader's size verl logs; its C(training/epoch) metric
    counts from 0 and restarts on a resume), beside C(total_epochs).
  returned: always
  type: dict
auto_resume:
  description: >-
    The train stage's resume hook (grpo_train_resume_after_restart): C(armed) (a restart of the container relaunches
    this launch by itself), C(resumed) (the hook's record when it relaunched the current launch after the container
    restarted: C(at), C(from_step), C(from_pidns), C(why), C(unguarded); else null) and C(line), what the status
    view prints.
  returned: always
  type: dict
checkpoints:
  description: >-
    Saved steps (saved: folders whose save finished, every rank's actor shards and data.pt, not beyond verl's
    record; as the eval stage counts them), incomplete (folders a cut save left, or one being saved now: neither
    resumed from nor merged) and latest (the step verl's record names).
  returned: always
  type: dict
error:
  description: For a failed run, the exception that ended it (a fix in it names settings through C(setting_names)).
  returned: when failed
  type: str
progress:
  description: One line for people ("step 3/29 ..."; before the first step, whether it validates before training).
  returned: always
  type: str
validating:
  description:
    - Whether the running run is in a validation now (it began generating a validation batch and logged neither
      its metrics nor a step since); before the first step, the validation before training.
  returned: always
  type: bool
running:
  description: Whether the run's process (or anything in its process group) runs.
  returned: always
  type: bool
pid:
  description: The run's process id (the job's wrapper); null when never launched.
  returned: always
  type: int
log:
  description: The run's log (C(run_dir/logs/latest.log), else the job's own log).
  returned: always
  type: str
triage:
  description: >-
    For a failed run with a catalogue: the known failure it matches (C(id), C(cause), C(fix) with the run's values,
    C(setting) to change, C(upstream) threads, C(evidence), the log C(line)), or C(id) unknown with the log's first
    error line; C(first_error) is [line number, line].
  returned: when failed and a catalogue was given
  type: dict
  sample: {id: kv_cache_too_small, setting: actor_rollout_ref.rollout.gpu_memory_utilization, line: 812}
traceback_tail:
  description: For a failed run, the last lines of the traceback (or of the log).
  returned: when failed
  type: list
  elements: str
last_launch:
  description: The run folder's record of the last launch (C(.launch.json)), empty when it was never launched.
  returned: always
  type: dict
  sample: {script_sha1: 3f2a..., pid: 4242, started_at: "2026-12-03T10:00:00+0000", profile: npu-single, cards: "0"}
lease:
  description: >-
    The instance's lease the last launch recorded (grpo_train_lease_end): its end (epoch seconds), the seconds left
    (negative once it passed), whether the ETA plus a save fits (null while the ETA is unknown), the steps verl
    saved at because the lease was ending (its "Force saving checkpoint" line), and the line the status shows.
    Null without a lease.
  returned: always
  type: dict
  sample: {end: 1896253200, left_s: 5400, fits: true, saves: [], setting: 8h,
           line: "ends 2030-02-02 01:00:00 UTC (...), 1:30:00 left; the run's ETA 0:40:00 fits"}
launch_overrides:
  description: >-
    The override words of the last launch, from the run folder's history (C(launches.jsonl), its last line), as
    verl was launched with them (for people); null when it has none.
  returned: always
  type: list
  elements: str
launch_override_map:
  description: >-
    The merged overrides of the last launch as data (C({dotted key: value}), the record's C(override_map)), from
    which the train stage works out whether the run's total changed (C(ascend_grpo.train.run_plan)); null when the
    history has none, or its last launch was recorded with the words only (the total then counts as unknown).
  returned: always
  type: dict
  sample: {trainer.total_training_steps: 2, data.train_batch_size: 4, +ray_kwargs.ray_init.num_gpus: 1}
last_log:
  description: >-
    What the current log (the last launch's) says of the run's length: C(total_steps) ("Total training steps"),
    C(batches_per_epoch) ("Size of train dataloader"), C(total_epochs); each null until verl printed it.
  returned: always
  type: dict
  sample: {total_steps: 2, batches_per_epoch: 6, total_epochs: 1}
plot:
  description: The PNG written (with the C(plot) option and at least one logged step).
  returned: when a plot was written
  type: str
history:
  description: >-
    The run over all its launches: C(segments) (logs read), C(steps) (step numbers of the one timeline the run
    followed), C(validations) ([step, score] of C(summary.val_metric)).
  returned: always
  type: dict
  sample: {segments: 2, steps: [1, 2, 3, 4], validations: [[0, 0.125], [2, 0.25], [4, 0.375]]}
tensorboard:
  description: With C(tensorboard_dir), the folder and how many event files it holds.
  returned: when tensorboard_dir was given
  type: dict
  sample: {dir: /data/grpo/tensorboard/p/e, event_files: 2}
compare:
  description: >-
    With C(compare_root), one row per run: C(project), C(experiment), C(run_dir), C(state) (this run's from its job;
    another run's from its log: finished, failed, or unfinished), C(step), C(total_steps), C(val_metric),
    C(val_score)/C(val_step), C(best_val_score)/C(best_val_step), C(score_mean), C(mean_step_time_s), C(segments).
  returned: when compare_root was given
  type: list
  elements: dict
compare_table:
  description: The runs side by side, the best validation score first.
  returned: when compare_root was given
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible.module_utils.ascend_grpo.common import errors
from ansible.module_utils.ascend_grpo.train import run_status


def main():
    module = AnsibleModule(
        argument_spec=dict(run_dir=dict(type="path", required=True), state_dir=dict(type="path", required=True),
                           checkpoint_dir=dict(type="path", required=True), job=dict(type="str", default="train"),
                           wait=dict(type="float", default=0), plot=dict(type="path"),
                           triage=dict(type="list", elements="dict", default=[]),
                           records_dir=dict(type="path", default=""),
                           inventory=dict(type="str", default=""),
                           tensorboard_dir=dict(type="path"), compare_root=dict(type="path"),
                           spec=dict(type="bool", default=False),
                           max_actor_ckpt_to_keep=dict(type="raw"), setting_names=dict(type="dict", default={})),
        supports_check_mode=True,
    )
    result = run_status.watch(module.params, check_mode=module.check_mode)
    if result.get("error"):  # why a run ended names the calling role's setting for its fix
        result["error"] = errors.module_text(module, result["error"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
