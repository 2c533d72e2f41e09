# Written for this package (not copied from flash-attn or transformers).
"""Padding helpers verl imports on NPU from ``transformers.integrations.npu_flash_attention``, which dropped them
in transformers 4.55.1. The patch stage points verl's five imports here.

They match how verl calls them:
- ``x_rmpad, indices, *_ = unpad_input(x, attention_mask)``: the tokens where the mask is set, their flat
  indices, then cu_seqlens (int32, starting at 0) and the longest sequence in the batch;
- ``pad_input(hidden_states=..., indices=..., batch=..., seqlen=...)``: the inverse, zeros where the mask was not;
- ``index_first_axis(x, indices)``: rows of x at indices;
- ``rearrange(x, pattern)``: einops' rearrange.
"""

import torch
import torch.nn.functional as F
from einops import rearrange

__all__ = ["index_first_axis", "pad_input", "rearrange", "unpad_input"]


def index_first_axis(tensor, indices):
    """Rows of ``tensor`` (first axis) at ``indices``."""
    return tensor.index_select(0, indices)


def unpad_input(hidden_states, attention_mask):
    """(batch, seqlen, ...) and a (batch, seqlen) mask -> (tokens, ...), indices, cu_seqlens, max_seqlen."""
    seqlens = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(attention_mask.flatten(), as_tuple=False).flatten()
    max_seqlen = int(seqlens.max().item()) if seqlens.numel() else 0
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    return index_first_axis(flat, indices), indices, cu_seqlens, max_seqlen


def pad_input(hidden_states, indices, batch, seqlen):
    """(tokens, ...) back to (batch, seqlen, ...), zeros where there was padding."""
    out = torch.zeros(batch * seqlen, *hidden_states.shape[1:], dtype=hidden_states.dtype,
                      device=hidden_states.device)
    out[indices] = hidden_states
    return out.view(batch, seqlen, *hidden_states.shape[1:])
