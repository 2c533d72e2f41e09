"""Checks a verl GRPO configuration must pass before launch: what verl itself would trip over minutes or hours in.

:func:`check` takes verl's composed configuration (a plain nested dict, as ``OmegaConf.to_container(cfg,
resolve=True)`` gives it) and facts about the environment (:func:`facts` gathers them on the host) and returns
every problem as ``{"key": <the setting to change>, "message": <what is wrong and what to change>}``.

It runs in the training environment through Ansible's module machinery, next to verl (and so OmegaConf, which
reads the configuration's keys).
"""

import ast
import json
import os
import shutil

from ..common import rerun, workspace
from . import run_size

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def config(cfg):
    """The configuration as OmegaConf reads it (a plain dict is wrapped once; a DictConfig is used as it is)."""
    from omegaconf import OmegaConf

    return cfg if OmegaConf.is_config(cfg) else OmegaConf.create(cfg)


def _get(cfg, dotted, default=None):
    """The value at a dotted key of the configuration (OmegaConf.select), as plain Python; ``default`` when a part
    of the key is missing. Wrap a plain dict with :func:`config` first when asking it many keys."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        value = OmegaConf.select(config(cfg), dotted, default=default)
    except OmegaConfBaseException:
        return default
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def _files(value):
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def defines(text, name):
    """Whether Python source ``text`` defines ``name`` at module level (def, async def or assignment)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return True
    return False


def facts(cfg, cards):
    """What :func:`check` needs from the host, read from the paths ``cfg`` names."""
    cfg = config(cfg)
    model_dir = _get(cfg, "actor_rollout_ref.model.path") or ""
    out = {"cards": cards, "model_dir_exists": os.path.isfile(os.path.join(model_dir, "config.json")),
           "model_config": {}, "weights_bytes": 0, "missing_files": [], "reward_text": None, "free_bytes": None,
           "train_rows": train_rows(_files(_get(cfg, "data.train_files")))}
    if out["model_dir_exists"]:
        with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as handle:
            out["model_config"] = json.load(handle)
        out["weights_bytes"] = sum(os.path.getsize(os.path.join(model_dir, n)) for n in os.listdir(model_dir)
                                   if n.endswith(".safetensors"))
    for key in ("data.train_files", "data.val_files"):
        out["missing_files"] += [[key, f] for f in _files(_get(cfg, key)) if not os.path.isfile(f)]
    reward = _get(cfg, "custom_reward_function.path")
    if reward and os.path.isfile(reward):
        with open(reward, encoding="utf-8") as handle:
            out["reward_text"] = handle.read()
    ckpt = _get(cfg, "trainer.default_local_dir") or "."
    probe = workspace.nearest_existing(ckpt)  # where the checkpoints will be made
    out["free_bytes"] = shutil.disk_usage(probe if os.path.isdir(probe) else os.path.dirname(probe)).free
    return out


def train_rows(files):
    """Rows of the training parquet files (their footers, nothing else read), or None when one cannot be read."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    try:
        return sum(pq.ParquetFile(path).metadata.num_rows for path in files)
    except Exception:  # pylint: disable=broad-except  # a missing or broken file is another rule's problem
        return None


def model_params(model_config, weights_bytes):
    """The model's parameters: counted from its config.json, else from the weights on disk and their dtype."""
    counted = run_size.param_count(model_config)
    if counted:
        return counted
    dtype = str(model_config.get("torch_dtype") or model_config.get("dtype") or "bfloat16")
    return int(weights_bytes / DTYPE_BYTES.get(dtype, 2))


def checkpoints_on_disk(cfg, rows):
    """(how many actor checkpoints the run has on disk at once, how that was worked out)."""
    max_keep = _get(cfg, "trainer.max_actor_ckpt_to_keep")
    save_freq = _get(cfg, "trainer.save_freq") or 0
    steps = _get(cfg, "trainer.total_training_steps")
    batch, epochs = _get(cfg, "data.train_batch_size"), _get(cfg, "trainer.total_epochs") or 1
    if not steps and rows and isinstance(batch, int) and batch > 0:
        steps = rows // batch * epochs  # verl's loader drops the last partial batch
    saved = run_size.saves(steps, save_freq) if steps else None
    on_disk = run_size.kept(max_keep, saved)
    if on_disk is None:  # every save kept and the run's length unknown: the reference run's saves
        return run_size.REFERENCE_SAVES, "every save kept, the run's length unknown: the reference run's %d" % (
            run_size.REFERENCE_SAVES)
    if saved is None:
        return on_disk, "trainer.max_actor_ckpt_to_keep %s" % max_keep
    return on_disk, "%d of the run's %d saves (%d steps, save_freq %s), %s" % (
        on_disk, saved, steps, save_freq,
        "trainer.max_actor_ckpt_to_keep %s" % max_keep if max_keep else "every save kept")


def check(cfg, env, inventory=""):
    """Every problem with ``cfg`` given the host facts ``env`` (see :func:`facts`); ``inventory``: the -i words the
    command to run a stage carries (:mod:`rerun`)."""
    cfg = config(cfg)
    errors = []

    def fail(key, message):
        errors.append({"key": key, "message": message})

    estimator = _get(cfg, "algorithm.adv_estimator")
    n = _get(cfg, "actor_rollout_ref.rollout.n", 1) or 1
    if estimator == "grpo" and n <= 1:
        fail("actor_rollout_ref.rollout.n", "GRPO compares several responses to one prompt, n=%s gives it one: set "
             "actor_rollout_ref.rollout.n to 2 or more (the reference uses 8)" % n)

    batch = _get(cfg, "data.train_batch_size")
    mini = _get(cfg, "actor_rollout_ref.actor.ppo_mini_batch_size")
    if isinstance(batch, int) and isinstance(mini, int):
        if mini > batch:
            fail("actor_rollout_ref.actor.ppo_mini_batch_size", "%d is larger than data.train_batch_size (%d): set "
                 "it to %d or a divisor of it" % (mini, batch, batch))
        elif mini <= 0 or batch % mini:
            fail("actor_rollout_ref.actor.ppo_mini_batch_size", "%d does not divide data.train_batch_size (%d): "
                 "use a divisor of it" % (mini, batch))

    gpus = _get(cfg, "trainer.n_gpus_per_node")
    nodes = _get(cfg, "trainer.nnodes", 1) or 1
    cards = env.get("cards")
    if cards is not None and gpus != len(cards):
        fail("trainer.n_gpus_per_node", "is %s but this environment has %d visible card(s) (%s): set it to %d"
             % (gpus, len(cards), ", ".join(str(c) for c in cards) or "none", len(cards)))
    world = (gpus or 1) * nodes
    micro = _get(cfg, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu")
    sp = _get(cfg, "actor_rollout_ref.actor.ulysses_sequence_parallel_size", 1) or 1
    if isinstance(mini, int) and mini > 0 and world:
        shards = world // sp if world % sp == 0 else 0
        per_device = mini * n / shards if shards else 0
        if not shards or per_device != int(per_device) or per_device < 1:
            fail("actor_rollout_ref.actor.ppo_mini_batch_size", "%d prompts x rollout.n %d = %d responses do not "
                 "split evenly over %d device(s): make ppo_mini_batch_size x n a multiple of the device count"
                 % (mini, n, mini * n, world // sp or world))
        elif isinstance(micro, int) and (micro <= 0 or int(per_device) % micro):
            fail("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "%d does not divide the %d responses each "
                 "device gets per mini batch (ppo_mini_batch_size %d x n %d / %d devices): use a divisor of %d"
                 % (micro, int(per_device), mini, n, world // sp, int(per_device)))

    tp = _get(cfg, "actor_rollout_ref.rollout.tensor_model_parallel_size", 1) or 1
    if world % tp:
        fail("actor_rollout_ref.rollout.tensor_model_parallel_size", "%d does not divide the %d device(s): use 1 or "
             "a divisor of %d" % (tp, world, world))

    if not env.get("model_dir_exists"):
        fail("actor_rollout_ref.model.path", "%s holds no config.json: run the assets stage (%s) or set the model "
             "path" % (_get(cfg, "actor_rollout_ref.model.path"), rerun.command("assets", inventory)))
    else:
        limit = env["model_config"].get("max_position_embeddings")
        prompt, response = _get(cfg, "data.max_prompt_length", 0), _get(cfg, "data.max_response_length", 0)
        if isinstance(limit, int) and prompt + response > limit:
            fail("data.max_response_length", "max_prompt_length %d + max_response_length %d = %d exceeds the "
                 "model's max_position_embeddings (%d): shorten one of them" % (prompt, response,
                                                                              prompt + response, limit))
        params = model_params(env["model_config"], env.get("weights_bytes", 0))
        count, how = checkpoints_on_disk(cfg, env.get("train_rows"))
        need = run_size.estimate(params, count, setup=False)
        free = env.get("free_bytes")
        if free is not None and free < need["total"]:
            fail("trainer.max_actor_ckpt_to_keep", "the run's checkpoints (%s) and its merged model need about %.1f "
                 "GiB (%s), %s has %.1f GiB free: keep fewer checkpoints ({max_actor_ckpt_to_keep}), free space, "
                 "or point {checkpoint_dir} at a larger disk" % (
                     how, need["total"] / 2**30, run_size.describe(need), _get(cfg, "trainer.default_local_dir"),
                     free / 2**30))

    for key, path in env.get("missing_files", []):
        fail(key, "%s does not exist: run the assets stage (%s) or fix the path" % (path, rerun.command("assets",
                                                                                                 inventory)))

    reward_path = _get(cfg, "custom_reward_function.path")
    reward_name = _get(cfg, "custom_reward_function.name") or "compute_score"
    if reward_path:
        if env.get("reward_text") is None:
            fail("custom_reward_function.path", "%s does not exist: run the assets stage or fix the path"
                 % reward_path)
        elif not defines(env["reward_text"], reward_name):
            fail("custom_reward_function.name", "%s defines no %s at module level (or does not parse): fix the "
                 "file or custom_reward_function.name" % (reward_path, reward_name))
    return errors
