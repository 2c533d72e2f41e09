"""roles/assets/files/chat_template.jinja rendered by transformers itself, and the simulation assets of tests/sim_assets.py
(tiny Qwen2 model, MATH parquet files, fixture problems) it is tested with."""

import hashlib
import json
import os
from collections import Counter

import pyarrow.parquet as pq
import pytest
import torch
import yaml
from grpo_testkit import ROOT, need_sample_tarball
from transformers import AutoModelForCausalLM, AutoTokenizer

import sim_assets
from ascend_grpo.assets.math_data import INSTRUCTION, last_boxed


TEMPLATE_FILE = os.path.join(ROOT, "roles", "assets", "files", "chat_template.jinja")
DEFAULT_SYSTEM = (
    "You are a helpful assistant. Think through the problem step by step inside <think> </think> tags, then give "
    "the final answer inside <answer> </answer> tags as \\boxed{}. Use exactly this format:\n"
    "<think>\nStep 1: ...\nStep 2: ...\n</think>\n<answer>\n\\boxed{...}\n</answer>")
DEFAULT_SYSTEM_TURN = "<|im_start|>system\n" + DEFAULT_SYSTEM + "<|im_end|>\n"
with open(os.path.join(ROOT, "roles", "grpo_train", "files", "profiles", "cpu-overlay.yml"), encoding="utf-8") as _fh:
    MAX_PROMPT_LENGTH = yaml.safe_load(_fh)["overrides"]["data"]["max_prompt_length"]  # the simulated training's
TOOLS = [{"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]}}}]
TOOLS_SECTION = (
    "\n\n# Tools\n\nYou may call the functions below to help with the request. Their signatures, one JSON object per "
    "line, are inside <tools></tools> tags:\n<tools>\n"
    '{"type": "function", "function": {"name": "add", "description": "Add two integers.", "parameters": '
    '{"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}'
    "\n</tools>\n\nTo call a function, reply with a JSON object holding its name and arguments inside "
    "<tool_call></tool_call> tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <arguments-json-object>}\n</tool_call>')


@pytest.fixture(scope="session")
def assets(tmp_path_factory):
    """The tiny model and the parquet files, built once for the session."""
    out = tmp_path_factory.mktemp("sim_assets")
    return {"model": sim_assets.build_model(out), "math": sim_assets.build_math_parquet(out)}


@pytest.fixture(scope="session")
def tokenizer(assets):
    """The tiny model's tokenizer with this package's chat template in place of its own."""
    loaded = AutoTokenizer.from_pretrained(assets["model"])
    with open(TEMPLATE_FILE, encoding="utf-8") as handle:
        loaded.chat_template = handle.read()
    return loaded


def render(tokenizer, messages, add_generation_prompt=False, **kwargs):
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=add_generation_prompt,
                                         **kwargs)


# ------------------------------------------------------------------------------------------------ the chat template

def test_user_only_gets_the_default_system_prompt(tokenizer):
    messages = [{"role": "user", "content": "What is 2 + 3?"}]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        DEFAULT_SYSTEM_TURN + "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n")


def test_explicit_system_message_replaces_the_default(tokenizer):
    messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2 + 3?"}]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        "<|im_start|>system\nAnswer briefly.<|im_end|>\n"
        "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("add_generation_prompt, tail", [(True, "<|im_start|>assistant\n"), (False, "")])
def test_generation_prompt(tokenizer, add_generation_prompt, tail):
    messages = [{"role": "user", "content": "Compute $1 + 1$."}]
    assert render(tokenizer, messages, add_generation_prompt=add_generation_prompt) == (
        DEFAULT_SYSTEM_TURN + "<|im_start|>user\nCompute $1 + 1$.<|im_end|>\n" + tail)


def test_multi_turn(tokenizer):
    answer = "<think>\nStep 1: 2 + 3 = 5.\n</think>\n<answer>\n\\boxed{5}\n</answer>"
    messages = [{"role": "user", "content": "What is 2 + 3?"}, {"role": "assistant", "content": answer},
                {"role": "user", "content": "And 2 + 4?"}]
    assert render(tokenizer, messages, add_generation_prompt=True) == (
        DEFAULT_SYSTEM_TURN
        + "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"
        + "<|im_start|>assistant\n" + answer + "<|im_end|>\n"
        + "<|im_start|>user\nAnd 2 + 4?<|im_end|>\n"
        + "<|im_start|>assistant\n")


@pytest.mark.parametrize("arguments", [{"a": 2, "b": 3}, '{"a": 2, "b": 3}'], ids=["object", "json-string"])
def test_tool_call_and_tool_responses(tokenizer, arguments):
    messages = [
        {"role": "user", "content": "What is 2 + 3?"},
        {"role": "assistant", "content": "Let me add them.",
         "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": arguments}},
                        {"type": "function", "function": {"name": "add", "arguments": arguments}}]},
        {"role": "tool", "content": "5"},
        {"role": "tool", "content": "5"},
        {"role": "assistant", "content": "\\boxed{5}"},
    ]
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
    response = "<tool_response>\n5\n</tool_response>"
    assert render(tokenizer, messages, tools=TOOLS) == (
        "<|im_start|>system\n" + DEFAULT_SYSTEM + TOOLS_SECTION + "<|im_end|>\n"
        + "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n"
        + "<|im_start|>assistant\nLet me add them.\n" + call + "\n" + call + "<|im_end|>\n"
        + "<|im_start|>user\n" + response + "\n" + response + "<|im_end|>\n"
        + "<|im_start|>assistant\n\\boxed{5}<|im_end|>\n")


def test_default_prompt_has_the_reward_markers(tokenizer):
    rendered = render(tokenizer, [{"role": "user", "content": "Hi"}])
    for marker in ("<think>\n", "\n</think>\n", "\n<answer>\n", "\n</answer>"):
        assert marker in rendered
    assert "\\n" not in rendered  # real newlines, not escaped ones


def test_tokenized_prompt_decodes_back(tokenizer):
    messages = [{"role": "user", "content": sim_assets.load_problems()[0]["problem"] + " " + INSTRUCTION}]
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    assert ids.count(tokenizer.convert_tokens_to_ids("<|im_start|>")) == 3
    assert tokenizer.decode(ids) == render(tokenizer, messages, add_generation_prompt=True)


# ------------------------------------------------------------------------------------------------ the tiny model

def test_tiny_model_folder(assets):
    folder = assets["model"]
    files = sorted(path.name for path in folder.iterdir())
    assert files == ["config.json", "generation_config.json", "merges.txt", "model.safetensors",
                     "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "vocab.json"]
    assert sum(path.stat().st_size for path in folder.iterdir()) < 3 * 1024 * 1024
    assert "chat_template" in json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert {key: config[key] for key in ("model_type", "architectures", "hidden_size", "intermediate_size",
                                         "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                                         "max_position_embeddings", "tie_word_embeddings", "torch_dtype")} == {
        "model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 128, "intermediate_size": 256,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512,
        "tie_word_embeddings": True, "torch_dtype": "float32"}
    # vLLM's CPU attention accepts these head sizes only (DOMAIN.md, "The guide's own stack on CPU")
    assert config["hidden_size"] // config["num_attention_heads"] in (32, 64, 96, 128, 160, 192, 224, 256)


def test_tiny_model_loads_generates_and_round_trips(assets):
    tokenizer = AutoTokenizer.from_pretrained(assets["model"])
    model = AutoModelForCausalLM.from_pretrained(assets["model"])
    config = model.config
    assert config.vocab_size % 64 == 0 and len(tokenizer) <= config.vocab_size < len(tokenizer) + 64
    assert (config.bos_token_id, config.eos_token_id, config.pad_token_id) == (
        tokenizer.convert_tokens_to_ids("<|endoftext|>"), tokenizer.eos_token_id, tokenizer.pad_token_id)
    assert (tokenizer.eos_token, tokenizer.pad_token, tokenizer.bos_token) == ("<|im_end|>", "<|endoftext|>", None)

    text = "Compute $\\frac{1}{2^{3}}$ and café, then 12345."  # words and bytes the tokenizer never saw too
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids) == text

    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is 2 + 3?"}],
                                           add_generation_prompt=True, return_tensors="pt")
    with torch.no_grad():
        output = model.generate(prompt, max_new_tokens=8, min_new_tokens=8, do_sample=False)
    assert output.shape == (1, prompt.shape[1] + 8)


def test_build_is_deterministic(assets, tmp_path):
    def digests(folder):
        return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
                for path in sorted(folder.rglob("*")) if path.is_file()}

    assert digests(sim_assets.build_model(tmp_path)) == digests(assets["model"])
    assert digests(sim_assets.build_math_parquet(tmp_path)) == digests(assets["math"])


# ------------------------------------------------------------------------------------------------ the MATH data

def test_parquet_files(assets):
    problems = sim_assets.load_problems()
    for split, rows in (("train", 24), ("test", 8)):
        table = pq.read_table(assets["math"] / "data" / f"{split}-00000-of-00001.parquet")
        assert table.schema.names == ["problem", "level", "type", "solution"]
        assert all(str(field.type) == "string" for field in table.schema)
        assert table.num_rows == rows
        assert table.to_pylist() == [{key: item[key] for key in table.schema.names}
                                     for item in problems if item["split"] == split]


def test_problems_cover_levels_types_and_answer_forms():
    problems = sim_assets.load_problems()
    assert all(set(item) == {"problem", "level", "type", "solution", "split"} for item in problems)
    assert Counter(item["split"] for item in problems) == {"train": 24, "test": 8}
    assert {item["level"] for item in problems} == {f"Level {n}" for n in range(1, 6)}
    types = {"Algebra", "Counting & Probability", "Geometry", "Intermediate Algebra", "Number Theory",
             "Prealgebra", "Precalculus"}
    assert {item["type"] for item in problems} == types
    assert len({item["type"] for item in problems if item["split"] == "test"}) >= 4
    answers = {last_boxed(item["solution"]) for item in problems}
    assert {"22", "-1", "\\frac{3}{8}", "\\dfrac{\\sqrt{3}}{2}", "2\\sqrt{5}", "\\frac{\\pi}{3}", "(2, -1)", "(1, 4)",
            "\\frac{1}{2^{3}}"} <= answers
    assert sum(item["solution"].count("\\boxed{") > 1 for item in problems) >= 2


@pytest.mark.parametrize("item", sim_assets.load_problems(), ids=lambda item: item["problem"][:40])
def test_last_boxed_answer_is_well_formed(item):
    answer = last_boxed(item["solution"])
    assert answer, "no \\boxed{} with balanced braces"
    assert item["solution"].rstrip(".$ ").endswith("\\boxed{" + answer + "}")  # the answer ends the solution


def _lengths(tokenizer):
    conversations = [[{"role": "user", "content": item["problem"] + " " + INSTRUCTION}]
                     for item in sim_assets.load_problems()]
    return [len(tokenizer.apply_chat_template(messages, add_generation_prompt=True)) for messages in conversations]


def test_prompts_fit_the_simulated_max_prompt_length(tokenizer, sample_tokenizer):
    """With this package's chat template and with the guide's sample's (the assets stage's default), as the
    simulated training renders MATH prompts: none is dropped as overlong (data.filter_overlong_prompts)."""
    assert max(_lengths(tokenizer)) <= MAX_PROMPT_LENGTH
    assert max(_lengths(sample_tokenizer)) <= MAX_PROMPT_LENGTH


# ------------------------------------------------------------------------------- the guide's sample's chat template

@pytest.fixture(scope="session")
def sample_tokenizer(assets):
    """The tiny model's tokenizer with the sample's chat template, as the assets stage installs it by default: read
    from the sample's tarball, proven by the role's pinned sha256."""
    from ascend_grpo.assets import template_install

    with open(os.path.join(ROOT, "roles", "assets", "defaults", "main.yml"), encoding="utf-8") as handle:
        pinned = yaml.safe_load(handle)["assets_chat_template_sample_sha256"]
    loaded = AutoTokenizer.from_pretrained(assets["model"])
    loaded.chat_template = template_install.read_sample(need_sample_tarball(), pinned)["template"]
    return loaded


def test_the_samples_template_asks_for_the_layout_the_reward_scores(sample_tokenizer):
    """Rendered by transformers: the sample's default system prompt (DOMAIN.md, "The guide's chat template"), the
    user's turn, and the assistant's turn opened."""
    prompt = render(sample_tokenizer, [{"role": "user", "content": "What is 2 + 3?"}], add_generation_prompt=True)
    system, rest = prompt.split("<|im_end|>\n", 1)
    assert system.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                             "assistant.")
    for marker in ("<think>", "</think>", "<answer>", "</answer>", "\\boxed{"):
        assert marker in system, marker
    assert rest == "<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n"
    # a system message of the caller's replaces the default, as in Qwen2.5's own template
    own = render(sample_tokenizer, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "1+1?"}])
    assert own == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n1+1?<|im_end|>\n"
