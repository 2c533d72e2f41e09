"""Filters: the disk a run writes, estimated from the model's size (the plain-Python engine ascend_grpo.run_size),
for the container stage's check before anything changes."""

from ascend_grpo import run_size


def run_disk_gib(params_b, max_to_keep):
    """``{{ npu_container_model_params_b | run_disk_gib(grpo_max_actor_ckpt_to_keep) }}``: GiB the run writes in
    the workspace (checkpoints kept, the merged model, the venvs, the weights, the data)."""
    return run_size.workspace_gib(params_b, int(max_to_keep))


def run_disk_why(params_b, max_to_keep):
    """The same estimate, part by part, in words (for the message when there is too little room)."""
    checkpoints = int(max_to_keep) if int(max_to_keep) > 0 else run_size.REFERENCE_SAVES
    return "by default the run's estimate for a model of %s B parameters with %s: %s" % (
        params_b, "grpo_max_actor_ckpt_to_keep %d" % int(max_to_keep) if int(max_to_keep) > 0
        else "every save kept (grpo_max_actor_ckpt_to_keep 0; the reference run's %d)" % checkpoints,
        run_size.describe(run_size.estimate(int(float(params_b) * 1e9), checkpoints)))


class FilterModule:
    def filters(self):
        return {"run_disk_gib": run_disk_gib, "run_disk_why": run_disk_why}
