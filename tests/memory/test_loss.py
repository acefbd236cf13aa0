"""Chunked and fused cross-entropy (memory/training/loss.py) against hand arithmetic and the
stacks' own worked figures.

Model: Meta-Llama-3.1-8B from the bundled registry — h = 4096, 32 layers, V = 128256.
"""

from __future__ import annotations

from gpusizer.memory.activations import logits_bytes
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.training.loss import (LOSS_RULES, liger_chunk_tokens, loss_memory,
                                           loss_rule, unsloth_chunks, validation_loss)

from .conftest import facts_of, sheet

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
H, V = 4096, 128256


def _loss(loss, framework="auto", batch=2, seq=4096, c=2, head=0):
    return loss_memory(loss, framework, facts_of(LLAMA), batch=batch, seq=seq, c=c,
                       head_gradient_bytes=head)


def test_liger_chunk_rule_reproduces_its_own_comment():
    # liger_kernel/ops/fused_linear_cross_entropy.py: "BT = 4096*4, V = 32000, H = 4096 ==>
    # inc_factor = 8, chunk_size = 2048"
    assert liger_chunk_tokens(4096 * 4, 32000, 4096) == 2048
    # Llama 3.1: inc_factor = ceil(128256 / 4096) = 32; 8192 / 32 = 256 (a power of 2)
    assert liger_chunk_tokens(8192, V, H) == 256
    # 5000 / 32 = 156.25 → 157 → next power of 2: 256
    assert liger_chunk_tokens(5000, V, H) == 256


def test_unsloth_chunks_from_the_4_gib_target():
    # exact = 4·T·V / 4 GiB; T = 78475 (Unsloth README's 24 GB row): 4·78475·128256 / 2^30
    # = 37.49 GiB of fp32 logits / 4 = 9.37 → rounded up to a multiple of 4: 12
    assert unsloth_chunks(78475, V) == 12
    # 8192 tokens: 4·8192·128256 / 2^30 = 3.91 GiB ≤ 4 GiB → one chunk
    assert unsloth_chunks(8192, V) == 1


def test_standard_is_transformers_loss_unchanged():
    got = _loss("standard")
    fwd, bwd, _ = logits_bytes(facts_of(LLAMA), tokens=8192, c=2)
    assert (got.forward_bytes, got.backward_bytes) == (fwd, bwd)
    assert fwd == 8192 * V * (2 + 4 + 4) and bwd == 12 * 8192 * V
    assert got.logits_materialized


def test_torchtune_chunks_keep_every_log_softmax_and_upcast_one_chunk():
    got = _loss("chunked")
    assert got.rule == LOSS_RULES[("chunked", "auto")]
    chunk = 8192 // 8                                   # num_output_chunks = 8
    assert got.forward_bytes == 4 * 8192 * V + (2 + 4) * chunk * V
    assert got.backward_bytes == 4 * 8192 * V + 8 * chunk * V
    # versus the standard loss: 10·T·V → 4.75·T·V in the forward
    assert got.forward_bytes < _loss("standard").forward_bytes / 2


def test_litgpt_keeps_its_logits_list_without_upcast():
    got = _loss("chunked", "litgpt")
    assert got.forward_bytes == 2 * 2 * 8192 * V
    assert got.backward_bytes == 2 * 2 * 8192 * V + 2 * 2 * (2 * 128) * V   # B = 2 rows × 128


def test_trl_chunked_nll_holds_a_chunk_and_the_fp32_weight_copy():
    got = _loss("chunked", "trl-sft")
    k, copy = 256, 4 * V * H                            # _CHUNKED_LM_HEAD_CHUNK_SIZE; w.float()
    assert got.forward_bytes == 2 * 8192 * H + max(copy + 4 * k * (H + V), 16 * k * V)
    assert got.backward_bytes == 3 * 2 * 8192 * H + copy + 12 * k * V
    # an fp32 lm_head (c = 4) is not copied
    assert _loss("chunked", "trl-sft", c=4).backward_bytes == 3 * 4 * 8192 * H + 12 * k * V


def test_liger_never_makes_the_logits():
    got = _loss("fused-linear", head=V * H * 2)
    chunk = 256
    held = 2 * 8192 * H + 4 * 8192 + V * H * 2          # grad_input, loss_1d, lm_head gradient
    assert got.forward_bytes == held + 2 * chunk * (V + H)
    assert got.backward_bytes == held
    assert not got.logits_materialized


def test_unsloth_one_chunk_under_the_target():
    got = _loss("fused-linear", "unsloth")
    assert got.forward_bytes == 2 * 8192 * H + (2 + 8) * 8192 * V


def test_a_framework_without_its_own_rule_uses_the_loss_default():
    assert loss_rule("chunked", "axolotl") == LOSS_RULES[("chunked", "auto")]
    assert loss_rule("fused-linear", "trl-sft") == LOSS_RULES[("fused-linear", "auto")]


def test_validation_replaces_the_logits_only_where_the_stack_does():
    facts = facts_of(LLAMA)
    assert validation_loss("standard", "auto", facts, batch=2, seq=4096, c=2) is None
    assert validation_loss("fused-linear", "auto", facts, batch=2, seq=4096, c=2) is None
    assert validation_loss("chunked", "auto", facts, batch=2, seq=4096, c=2)[0] == \
        (2 + 4 + 4) * 1024 * V
    assert validation_loss("chunked", "litgpt", facts, batch=2, seq=4096, c=2)[0] == \
        2 * 2 * 8192 * V


def test_the_estimate_follows_the_loss_and_names_it():
    def est(**training):
        tr = {"sequence_length": 4096, "microbatch": 2, "gradient_checkpointing": True,
              **training}
        return estimate_memory(sheet(task="lora", training=tr), facts_of(LLAMA))
    standard, fused = est(), est(loss="fused-linear")
    logits = {e: next(i for i in e.items if i.name == "logits") for e in (standard, fused)}
    assert logits[standard].bytes == 12 * 8192 * V
    assert logits[fused].bytes == 2 * 8192 * H + 4 * 8192 + 2 * 256 * (V + H)
    assert fused.peak_bytes < standard.peak_bytes
    assert fused.training.loss == LOSS_RULES[("fused-linear", "auto")]
    assert any(n.startswith("loss fused-linear: sized as Liger") for n in fused.note_texts)
