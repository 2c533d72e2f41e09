"""The NPU padding helpers the patch stage installs into verl, against real torch on CPU."""

import importlib.util
import os

import torch
from grpo_testkit import ROOT


def helpers():
    spec = importlib.util.spec_from_file_location("npu_padding_utils",
                                                  os.path.join(ROOT, "roles", "verl_compat_patch", "files", "npu_padding_utils.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_round_trip_cu_seqlens_and_max_length():
    h = helpers()
    torch.manual_seed(0)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 0, 0]])  # left and right padding
    x = torch.randn(3, 5, 4)
    flat, indices, cu_seqlens, max_seqlen = h.unpad_input(x, mask)
    assert flat.shape == (10, 4)
    assert indices.tolist() == [0, 1, 2, 5, 6, 7, 8, 9, 11, 12]
    assert cu_seqlens.dtype == torch.int32 and cu_seqlens.tolist() == [0, 3, 8, 10]
    assert max_seqlen == 5
    back = h.pad_input(hidden_states=flat, indices=indices, batch=3, seqlen=5)
    assert torch.equal(back, x * mask.unsqueeze(-1))


def test_verl_call_shapes():
    """As dp_actor calls them: ids unsqueezed to (b, s, 1), unpacked with *_, positions via rearrange."""
    h = helpers()
    input_ids = torch.tensor([[5, 6, 0], [7, 8, 9]])
    mask = (input_ids != 0).long()
    ids_rmpad, indices, *_ = h.unpad_input(input_ids.unsqueeze(-1), mask)
    assert h.rearrange(ids_rmpad, "c b -> b c").tolist() == [[5, 6, 7, 8, 9]]
    positions = torch.arange(3).expand(2, 3)
    pos_rmpad = h.rearrange(h.index_first_axis(h.rearrange(positions.unsqueeze(-1), "b s ... -> (b s) ..."),
                                               indices), "b ... -> ... b")
    assert pos_rmpad.tolist() == [[0, 1, 0, 1, 2]]
    logits = torch.arange(5.0).unsqueeze(-1)
    assert h.pad_input(hidden_states=logits, indices=indices, batch=2, seqlen=3).squeeze(-1).tolist() == [
        [0.0, 1.0, 0.0], [2.0, 3.0, 4.0]]
