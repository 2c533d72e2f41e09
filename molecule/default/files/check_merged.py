"""Load the merged model with transformers and compare it with the FSDP checkpoint it came from and the base model.

Usage: check_merged.py <merged> <actor checkpoint dir> <base model>. Prints one JSON object."""

import glob
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

merged_dir, actor_dir, base_dir = sys.argv[1:4]
# as saved: verl's merger writes bfloat16, so the checkpoint's float32 tensors are compared after the same cast
merged = AutoModelForCausalLM.from_pretrained(merged_dir, dtype="auto")
base = AutoModelForCausalLM.from_pretrained(base_dir, dtype="auto")
shard = glob.glob(actor_dir + "/model_world_size_1_rank_0.pt")[0]
saved = torch.load(shard, map_location="cpu", weights_only=False)
saved = {k: v.to_local() if hasattr(v, "to_local") else v for k, v in saved.items()}
merged_sd = merged.state_dict()
base_sd = base.state_dict()
same_as_checkpoint = all(torch.equal(merged_sd[k], saved[k].to(merged_sd[k].dtype)) for k in saved)
differs_from_base = [k for k in base_sd if not torch.equal(base_sd[k].to(merged_sd[k].dtype), merged_sd[k])]
messages = [{"role": "user", "content": "What is $1+1$?"}]
tok_merged = AutoTokenizer.from_pretrained(merged_dir)
tok_base = AutoTokenizer.from_pretrained(base_dir)
prompt = tok_merged.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
ids = tok_merged(prompt, return_tensors="pt")
out = merged.generate(**ids, max_new_tokens=4, do_sample=False)
print(json.dumps({
    "class": type(merged).__name__,
    "dtype": str(merged.dtype),
    "parameters": sum(p.numel() for p in merged.parameters()),
    "base_parameters": sum(p.numel() for p in base.parameters()),
    "checkpoint_tensors": len(saved),
    "same_as_checkpoint": same_as_checkpoint,
    "tensors_differing_from_base": len(differs_from_base),
    "same_chat_prompt_as_base": prompt == tok_base.apply_chat_template(messages, tokenize=False,
                                                                        add_generation_prompt=True),
    "prompt_has_think_instruction": "<think>" in prompt,
    "generated_tokens": int(out.shape[1] - ids["input_ids"].shape[1]),
}))
