"""The three GPU rules: the kernel table, and each rule's effect on an 8B-shaped step."""

from __future__ import annotations

import pytest

from gpusizer.sheet import parse_sheet
from gpusizer.simulate.gpu_rules import choose_attention_kernel, optimizer_flags
from gpusizer.simulate.phases import RuleSwitches, run_phases

from .conftest import real_config


@pytest.mark.parametrize("dtype, head_dim, mask, cc, softcap, requested, kernel", [
    ("bf16", 128, False, (9, 0), False, "sdpa", "flash"),        # H100, Llama
    ("fp16", 256, False, (8, 0), False, "sdpa", "flash"),        # A100, Gemma head_dim 256
    ("bf16", 128, True, (9, 0), False, "sdpa", "efficient"),     # a mask refuses flash
    ("bf16", 288, False, (9, 0), False, "sdpa", "efficient"),    # head_dim > 256
    ("fp32", 128, False, (9, 0), False, "sdpa", "efficient"),    # flash is 16-bit only
    ("fp16", 128, False, (7, 5), False, "sdpa", "efficient"),    # T4: no flash below sm80
    ("bf16", 128, False, (7, 5), False, "sdpa", "math"),         # bf16 below sm80: neither
    ("fp16", 100, False, (8, 0), False, "sdpa", "math"),         # head_dim not a multiple of 8
    ("bf16", 128, False, (9, 0), True, "sdpa", "eager"),         # Gemma 2 soft-capping
    ("bf16", 128, False, (9, 0), True, "flash", "flash"),        # FA2 soft-caps
    ("bf16", 128, False, (7, 5), False, "flash", "math"),        # flash asked, card too old
    ("bf16", 128, False, (9, 0), False, "eager", "eager"),
])
def test_kernel_table(dtype, head_dim, mask, cc, softcap, requested, kernel):
    choice = choose_attention_kernel(dtype=dtype, head_dim=head_dim, has_mask=mask,
                                     compute_capability=cc, softcapping=softcap,
                                     requested=requested)
    assert choice.kernel == kernel, choice.reason


def test_flash_needs_equal_v_head_dim():
    # MLA (DeepSeek): q/k head 192, v head 128 → memory-efficient
    c = choose_attention_kernel(dtype="bf16", head_dim=192, has_mask=False,
                                compute_capability=(9, 0), value_head_dim=128)
    assert c.kernel == "efficient"


def test_optimizer_flags():
    assert optimizer_flags("foreach") == {"foreach": True}
    assert optimizer_flags("fused") == {"fused": True, "foreach": False}
    assert optimizer_flags("for-loop") == {"foreach": False}


def _eight_b_step(shared_dir, cc=(9, 0), **switches):
    """Llama-3.1-8B shapes (hidden 4096, 32 heads, 8 KV heads, vocab 128256), 2 layers, one full
    bf16 training step of 1 × 2048 tokens."""
    cfg = real_config(shared_dir, "meta-llama--Meta-Llama-3.1-8B")
    cfg["num_hidden_layers"] = 2
    sheet = parse_sheet({"model": {"path": "unused"}, "task": "full", "weights": "bf16",
                         "training": {"sequence_length": 2048, "microbatch": 1}})
    run = run_phases(sheet, cfg, dtype="bf16", compute_capability=cc,
                     rules=RuleSwitches(**switches))
    return {p.name: p.peak_bytes for p in run.phases}, run.attention


def test_rule_attention_math_kernel_keeps_scores(shared_dir):
    """bf16 on an sm75 card: SDPA has neither flash nor memory-efficient → math, which keeps the
    softmax probabilities for backward: at least layers × heads × S² × 2 B = 2 × 32 × 2048² × 2
    = 536 870 912 B more at the forward peak than the CPU kernel the rule replaces."""
    with_rule, att = _eight_b_step(shared_dir, cc=(7, 5))
    without, _ = _eight_b_step(shared_dir, cc=(7, 5), attention=False)
    assert [a["kernel"] for a in att] == ["math"]
    assert with_rule["forward"] - without["forward"] >= 2 * 32 * 2048 ** 2 * 2


def test_rule_packed_sequences_keeps_flash(shared_dir):
    """Without the rule the fake run sees a packed-sequence mask: a 4-D mask is built and SDPA
    leaves flash for the memory-efficient kernel; the forward peak grows."""
    with_rule, att = _eight_b_step(shared_dir)
    without, att_off = _eight_b_step(shared_dir, packed_sequences=False)
    assert [a["kernel"] for a in att] == ["flash"]
    assert [a["kernel"] for a in att_off] == ["efficient"]
    # the bool mask alone is 1 × 1 × 2048 × 2048 B = 4 MiB
    assert without["forward"] - with_rule["forward"] >= 2048 * 2048


def test_rule_optimizer_foreach_holds_whole_lists(shared_dir):
    """foreach AdamW makes whole-list temporaries (√v for every parameter at once); PyTorch's CPU
    default loops one tensor at a time. Pure bf16, the step peak with foreach holds weights,
    gradients, two states (4 × 2 973 802 496 B of parameters) and one more full list."""
    with_rule, _ = _eight_b_step(shared_dir)
    without, _ = _eight_b_step(shared_dir, optimizer=False)
    assert with_rule["optimizer_step"] > without["optimizer_step"]
    params = 2_973_802_496  # 2 layers: 1 486 901 248 parameters × 2 B (embed + lm_head + 2 layers)
    assert with_rule["optimizer_step"] >= 5 * params
    assert without["optimizer_step"] < 5 * params
