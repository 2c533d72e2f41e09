"""The disk a run writes (issue 43: the flat 50 GiB did not follow the run), against figures from DOMAIN.md and the
model's published configuration."""

import pytest

from ascend_grpo.train import run_size

# Qwen/Qwen2.5-1.5B-Instruct's config.json (the Hugging Face hub), the sizes param_count reads
QWEN25_15B = {"model_type": "qwen2", "vocab_size": 151936, "hidden_size": 1536, "intermediate_size": 8960,
              "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
              "tie_word_embeddings": True, "torch_dtype": "bfloat16", "max_position_embeddings": 32768}


def test_the_guides_model_has_its_published_size():
    # the model card: "Number of Parameters: 1.54B"
    assert round(run_size.param_count(QWEN25_15B) / 1e9, 2) == 1.54


def test_a_checkpoint_of_the_guides_model_is_about_18_5_gb():
    # DOMAIN.md: "about 12 bytes per parameter (about 18.5 GB)"
    one = run_size.estimate(run_size.param_count(QWEN25_15B), 1, setup=False)["parts"][0][1]
    assert one == pytest.approx(18.5e9, rel=0.01)


def test_the_merged_model_and_the_weights_are_two_bytes_a_parameter():
    # docs/assets.md: the weights' download is 3.09 GB
    parts = {name: size for name, size, _how in run_size.estimate(run_size.param_count(QWEN25_15B), 2)["parts"]}
    assert parts["weights"] == pytest.approx(3.09e9, rel=0.01)
    assert parts["merged model"] == parts["weights"]


def test_an_untied_head_and_no_bias_count_too():
    untied = dict(QWEN25_15B, tie_word_embeddings=False)
    assert run_size.param_count(untied) - run_size.param_count(QWEN25_15B) == 151936 * 1536
    llama = dict(QWEN25_15B, model_type="llama")
    assert run_size.param_count(QWEN25_15B) - run_size.param_count(llama) == 28 * (1536 + 2 * 256)
    assert run_size.param_count({"hidden_size": 8}) is None


def test_the_reference_run_saves_three_times_and_verl_keeps_what_it_is_told():
    # DOMAIN.md: 29 steps an epoch, 5 epochs; saved every 70 steps and on the last step
    assert run_size.saves(29 * 5, 70) == 3
    assert run_size.saves(140, 70) == 2  # the last step is a multiple: saved once
    assert run_size.saves(145, -1) == 0
    assert run_size.kept(2, 3) == 2 and run_size.kept(None, 3) == 3 and run_size.kept(0, 3) == 3
    assert run_size.kept(5, 3) == 3 and run_size.kept(2, None) == 2 and run_size.kept(None, None) is None


def test_the_container_stages_default_is_the_estimate():
    # 2 x 18.5 + 3.1 merged + 8.5 + 2.2 venvs + 3.1 weights + 0.5 data = about 54.4 GB, 50.6 GiB
    assert run_size.workspace_gib(1.54, 2) == pytest.approx(54.4e9 / 2**30, abs=0.2)
    # keeping every save: the reference run's three
    assert run_size.workspace_gib(1.54, 0) == pytest.approx(run_size.workspace_gib(1.54, 3))
    words = run_size.describe(run_size.estimate(1_540_000_000, 2))
    assert words.startswith("checkpoints 2 x 18.5 GB") and words.endswith("= 54.3 GB")
