"""Deterministic stand-ins for the real assets, for tests and the simulated training on CPU.

Builds, from nothing but this repository, with fixed seeds (same bytes on every run with the same library versions):

- ``DIR/tiny-qwen2/``: a randomly initialised Qwen2ForCausalLM (hidden size 128 in 4 heads of 32, the smallest head
  vLLM's CPU attention accepts; 2 layers, under 3 MB) with a
  byte-level BPE tokenizer trained here on the fixture problems and a little text written for it; Qwen's special
  tokens and a ChatML chat template stored in ``tokenizer_config.json``, as Qwen2.5 folders have it;
- ``DIR/math/data/{train,test}-00000-of-00001.parquet``: the problems of ``tests/fixtures/math/problems.yml`` with the
  string columns of the MATH-lighteval data set (problem, level, type, solution), in file order.

Usage: ``python tests/sim_assets.py --out DIR [--model-only | --data-only]``. Each build replaces its own folder
(``DIR/tiny-qwen2`` or ``DIR/math``) and leaves the rest of DIR alone.
"""

import argparse
import json
import math
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch
import yaml
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM, Qwen2TokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python_plugins" / "module_utils"))
from ascend_grpo.assets.math_data import INSTRUCTION  # noqa: E402  pylint: disable=wrong-import-position

PROBLEMS_FILE = Path(__file__).resolve().parent / "fixtures" / "math" / "problems.yml"
MATH_COLUMNS = ("problem", "level", "type", "solution")
SPLITS = ("train", "test")
MODEL_DIR = "tiny-qwen2"
# Changes when the built assets change shape (v2: head size 32, which vLLM's CPU attention needs), so folders built
# by an older version are built again.
BUILD_STAMP = ".sim-assets-v2"
DATA_DIR = "math"

SEED = 1234
# Upper bound for BPE training, special tokens included. The corpus runs out of pairs to merge first (at about 1100
# tokens: every word of it is then one token); the model's embedding rounds the size up to a multiple of 64.
VOCAB_SIZE = 2048
ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"

# Pre-tokenization: an optional space or backslash with a run of letters (" word", "\frac"), an optional space with
# one digit (numbers never merge, as in Qwen), an optional space with a run of other symbols, then whitespace runs.
SPLIT_PATTERN = r"'(?:s|t|re|ve|m|ll|d)| ?\\?\p{L}+| ?\p{N}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"

# The tiny model's own chat template: ChatML with Qwen2.5's default system message. (The package deploys its own,
# roles/assets/files/chat_template.jinja, over it.)
CHAT_TEMPLATE = r"""{%- if not messages or messages[0].role != 'system' %}
{{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- endif %}"""

# General text for the tokenizer's corpus, written for it: the words of prompts, answers and chat turns.
GENERIC_TEXT = """\
You are a helpful assistant. The user asks a question and the assistant answers it:
user
What is 2 + 3?
assistant
The sum is 5, so the answer is \\boxed{5}.
Think through the problem step by step, then give the final answer.
<think>
Step 1: Read the problem and write down what is given.
Step 2: Choose a method, carry it out and check the result.
</think>
<answer>
\\boxed{42}
</answer>
The answer is an integer, a fraction, a radical or an interval. Simplify it before you write it down.
Let x be a real number. If the equation holds for every value of x, then both sides are the same polynomial.
The sum of the first n positive integers is n(n + 1)/2, and the sum of their squares is n(n + 1)(2n + 1)/6.
A prime number has exactly two positive divisors. Every integer greater than 1 is a product of primes.
The probability of an event is the number of favourable outcomes divided by the number of all outcomes.
The area of a circle with radius r is $\\pi r^2$ and its circumference is $2\\pi r$.
In a right triangle, the square of the hypotenuse equals the sum of the squares of the other two sides.
We compute $\\frac{a}{b} + \\frac{c}{d} = \\frac{ad + bc}{bd}$ and $\\sqrt{ab} = \\sqrt{a}\\sqrt{b}$ for $a, b \\ge 0$.
The function $f(x) = \\sin x$ has period $2\\pi$, and $\\sin^2 x + \\cos^2 x = 1$ for all $x$.
Therefore the final answer is the value we found in the last step. Thank you for the question.
"""


def load_problems() -> list[dict]:
    """The fixture problems, in file order: dicts with problem, level, type, solution and split."""
    with open(PROBLEMS_FILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def _corpus() -> list[str]:
    """The tokenizer's training texts: GENERIC_TEXT, the chat template, the problems as prompted, their solutions."""
    texts = [GENERIC_TEXT, CHAT_TEMPLATE]
    for item in load_problems():
        texts += [item["problem"] + " " + INSTRUCTION, item["solution"], item["level"], item["type"]]
    return texts


def train_tokenizer() -> Qwen2TokenizerFast:
    """A byte-level BPE tokenizer trained on _corpus(), with Qwen's special tokens (ids 0-2) and CHAT_TEMPLATE."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=[ENDOFTEXT, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_corpus(), trainer=trainer)
    return Qwen2TokenizerFast(tokenizer_object=tokenizer, unk_token=None, bos_token=None, eos_token=IM_END,
                              pad_token=ENDOFTEXT, chat_template=CHAT_TEMPLATE, model_max_length=512,
                              clean_up_tokenization_spaces=False)


def build_model(out_dir) -> Path:
    """Write DIR/tiny-qwen2 (config, generation config, weights, tokenizer) and return its path."""
    folder = _fresh_dir(Path(out_dir) / MODEL_DIR)
    tokenizer = train_tokenizer()
    endoftext, im_end = tokenizer.convert_tokens_to_ids([ENDOFTEXT, IM_END])
    # Token ids as in Qwen2.5-Instruct: bos is <|endoftext|> (the tokenizer adds none), a turn ends with <|im_end|>.
    config = Qwen2Config(
        vocab_size=64 * math.ceil(len(tokenizer) / 64), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512, tie_word_embeddings=True,
        dtype="float32", rope_theta=10000.0, rms_norm_eps=1e-6, use_sliding_window=False,
        bos_token_id=endoftext, eos_token_id=im_end, pad_token_id=endoftext)
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(bos_token_id=endoftext, eos_token_id=[im_end, endoftext],
                                               pad_token_id=endoftext)
    model.save_pretrained(folder, safe_serialization=True)
    (folder / "model.safetensors").chmod(0o644)  # written 0600; readable like the other files, by any container user
    # transformers 4.57 writes the dtype as "dtype"; Qwen2.5 folders and older readers know it as "torch_dtype",
    # which 4.57 reads as well.
    config_file = folder / "config.json"
    written = json.loads(config_file.read_text(encoding="utf-8"))
    written["torch_dtype"] = written.pop("dtype")
    config_file.write_text(json.dumps(written, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    # The chat template goes into tokenizer_config.json, not into a separate chat_template.jinja.
    tokenizer.save_pretrained(folder, save_jinja_files=False)
    return folder


def build_math_parquet(out_dir) -> Path:
    """Write DIR/math/data/{train,test}-00000-of-00001.parquet and return DIR/math."""
    folder = _fresh_dir(Path(out_dir) / DATA_DIR)
    (folder / "data").mkdir()
    problems = load_problems()
    for split in SPLITS:
        rows = [item for item in problems if item["split"] == split]
        table = pa.table({column: pa.array([item[column] for item in rows], type=pa.string())
                          for column in MATH_COLUMNS})
        pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet")
    return folder


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--out", required=True, type=Path, help="folder to write tiny-qwen2/ and math/ into")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--model-only", action="store_true", help="build only the model folder")
    only.add_argument("--data-only", action="store_true", help="build only the parquet files")
    args = parser.parse_args(argv)
    if not args.data_only:
        print(build_model(args.out))
    if not args.model_only:
        print(build_math_parquet(args.out))
    if not (args.model_only or args.data_only):
        # what a caller's `creates:` looks for: both built by this version of the builder
        (args.out / BUILD_STAMP).write_text("model and data built\n", encoding="utf-8")


if __name__ == "__main__":
    main()
