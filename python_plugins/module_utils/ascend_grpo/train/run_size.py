"""How much disk a GRPO run of the guide writes, from the model's size: the estimate the container stage checks
before anything changes, and the train stage again before launch with the run's own configuration.

The parts (each figure's source beside it):

- an actor checkpoint: about 12 bytes a parameter (FSDP's fp32 weights and Adam's two fp32 moments), about 18.5 GB
  for Qwen2.5-1.5B; verl at 634bd935 keeps every save unless ``trainer.max_actor_ckpt_to_keep`` is set;
- the merged model (verl's model merger writes a Hugging Face folder in bf16): 2 bytes a parameter;
- the weights the assets stage downloads (bf16 safetensors): 2 bytes a parameter;
- the Python stack's venv in the workspace, and OpenCompass's own venv;
- the data (MATH's parquet files, a few MB) and the logs.

Plain Python (no Ansible import).
"""

GB = 10 ** 9
GIB = 2 ** 30

CHECKPOINT_BYTES_PER_PARAM = 12
MERGED_BYTES_PER_PARAM = 2
WEIGHTS_BYTES_PER_PARAM = 2
# the guide's stack (verl@634bd935, vLLM 0.13.0) installed: 8.5 GB (DOMAIN.md, measured with its CPU counterparts)
STACK_VENV_BYTES = int(8.5 * GB)
# OpenCompass 0.5.2's own venv: 2.2 GB measured on the simulated host (docs/simulated-host.md)
EVAL_VENV_BYTES = int(2.2 * GB)
# MATH's train and test parquet files are a few MB; the run's logs and TensorBoard events a few hundred MB at most
DATA_BYTES = int(0.5 * GB)
# Qwen2.5-1.5B-Instruct, the guide's model (1.54 B parameters, its config.json counted by param_count)
DEFAULT_MODEL_PARAMS = 1_543_714_304
# what "keep every save" comes to in the reference run: 7,500 problems / 256 a batch = 29 steps an epoch, 5 epochs =
# 145 steps, saved every 70 and at the end: steps 70, 140 and 145
REFERENCE_SAVES = 3


def param_count(config):
    """Parameters of a decoder-only transformer from its Hugging Face ``config.json`` (a dict): embeddings, per
    layer the attention (q, k, v with their biases as Qwen2 has them, o) and the gated MLP (gate, up, down) and two
    norms, the final norm, and the output head unless tied to the embeddings. None when a size is missing."""
    try:
        vocab, hidden = int(config["vocab_size"]), int(config["hidden_size"])
        inter, layers = int(config["intermediate_size"]), int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kv_heads = int(config.get("num_key_value_heads") or heads)
    except (KeyError, TypeError, ValueError):
        return None
    head_dim = int(config.get("head_dim") or hidden // heads)
    qkv_bias = bool(config.get("attention_bias", config.get("model_type") in ("qwen2", "qwen2_moe")))
    q = hidden * heads * head_dim + (heads * head_dim if qkv_bias else 0)
    kv = 2 * (hidden * kv_heads * head_dim + (kv_heads * head_dim if qkv_bias else 0))
    o = heads * head_dim * hidden
    mlp = 3 * hidden * inter
    per_layer = q + kv + o + mlp + 2 * hidden
    head = 0 if config.get("tie_word_embeddings", False) else vocab * hidden
    return vocab * hidden + layers * per_layer + hidden + head


def saves(total_steps, save_freq):
    """How many checkpoints a run of ``total_steps`` saves: every ``save_freq``-th step and the last one (verl's
    ray_trainer: ``is_last_step or global_steps % save_freq == 0``); none when save_freq is 0 or less."""
    if not save_freq or save_freq <= 0 or not total_steps or total_steps <= 0:
        return 0
    return total_steps // save_freq + (1 if total_steps % save_freq else 0)


def kept(max_to_keep, saved):
    """Checkpoints on disk at once: verl removes the oldest before it writes a new one beyond ``max_to_keep``
    (fsdp_checkpoint_manager.save_checkpoint); unset or 0, every save stays."""
    if max_to_keep and max_to_keep > 0:
        return min(max_to_keep, saved) if saved is not None else max_to_keep
    return saved


def estimate(params, checkpoints, setup=True):
    """The bytes the run writes, part by part: ``{"parts": [[name, bytes, how], ...], "total": bytes}``.
    ``checkpoints``: how many actor checkpoints are on disk at once; ``setup``: also the venvs, weights and data (the
    container stage's view, before any of them exists; the train stage, at launch, has them already)."""
    each = params * CHECKPOINT_BYTES_PER_PARAM
    parts = [["checkpoints", checkpoints * each, "%d x %.1f GB (%.2f B parameters x 12 bytes: fp32 weights and "
              "Adam's two moments)" % (checkpoints, each / GB, params / 1e9)],
             ["merged model", params * MERGED_BYTES_PER_PARAM, "%.1f GB (x 2 bytes, bf16)"
              % (params * MERGED_BYTES_PER_PARAM / GB)]]
    if setup:
        parts += [["venvs", STACK_VENV_BYTES + EVAL_VENV_BYTES, "%.1f GB (the stack %.1f, OpenCompass %.1f)" % (
                      (STACK_VENV_BYTES + EVAL_VENV_BYTES) / GB, STACK_VENV_BYTES / GB, EVAL_VENV_BYTES / GB)],
                  ["weights", params * WEIGHTS_BYTES_PER_PARAM, "%.1f GB (x 2 bytes, bf16)"
                   % (params * WEIGHTS_BYTES_PER_PARAM / GB)],
                  ["data and logs", DATA_BYTES, "%.1f GB" % (DATA_BYTES / GB)]]
    return {"parts": parts, "total": sum(part[1] for part in parts)}


def describe(found):
    """``checkpoints 2 x 18.5 GB (...) + merged model 3.1 GB (...) + ... = 54.3 GB``."""
    return "%s = %.1f GB" % (" + ".join("%s %s" % (name, how) for name, _bytes, how in found["parts"]),
                             found["total"] / GB)


def workspace_gib(params_b, max_to_keep):
    """The container stage's estimate in GiB (npu_container_min_free_gib's default): ``params_b`` billions of
    parameters, ``max_to_keep`` checkpoints (0: every save, as many as the reference run makes)."""
    checkpoints = max_to_keep if max_to_keep and max_to_keep > 0 else REFERENCE_SAVES
    return round(estimate(int(float(params_b) * 1e9), checkpoints)["total"] / GIB, 1)
