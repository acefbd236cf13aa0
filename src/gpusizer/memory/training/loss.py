"""The training loss: what the cross-entropy keeps, chunk by chunk, for each stack's kernel.

``training.loss`` names the kind; the stack (``stack.framework``) picks the chunk rule, each
re-derived from that stack's code (T = microbatch × sequence tokens, V = vocabulary, h = hidden
size, c = bytes of the lm_head output):

- ``standard`` — transformers ``ForCausalLMLoss``: the whole c·T·V logits, an fp32 copy and the
  fp32 ``log_softmax`` autograd keeps (``memory/activations.py``, :func:`logits_bytes`).
- ``chunked``, torchtune (the default rule) — ``torchtune/modules/loss/cross_entropy_loss.py``
  ``LinearCrossEntropyLoss`` (and the deprecated ``ce_chunked_output_loss.py``
  ``CEWithChunkedOutputLoss``), ``num_output_chunks=8`` (pytorch/torchtune bd2a0fc, 2026-04):
  ``tensor_split`` into 8 token chunks, each ``cross_entropy(logits.float())``; run eagerly,
  autograd keeps every chunk's fp32 ``log_softmax`` (4·T·V in all) while one chunk's c- and
  fp32 logits (c + 4)·⌈T/8⌉·V are live; backward holds the kept 4·T·V plus one chunk's
  incoming and produced fp32 gradients 8·⌈T/8⌉·V.
- ``chunked``, TRL (``stack.framework: trl-sft``; SFTConfig's default ``loss_type`` since
  TRL 1.7.0) — ``trl/trainer/sft_trainer.py`` ``_chunked_cross_entropy_loss`` (huggingface/trl
  f2cd577, 2026-07): the hidden states reordered valid-first (a c·T·h copy, kept as the
  checkpoints' input), then chunks of 256 tokens, each ``_chunk`` under
  ``torch.utils.checkpoint``: ``h.float() @ w.float().t()`` (an fp32 copy of the lm_head
  weight, 4·V·h, unless it is fp32 already), ``log_softmax``, and the entropy metric
  ``-(log_p.exp() * log_p)``: forward holds max(4·V·h + 4·256·(h + V), 16·256·V); backward
  recomputes a chunk with its saved fp32 weight copy and ``log_p`` beside the two fp32
  gradients (4·V·h + 12·256·V: the entropy goes out with the model output, dropped before
  ``backward``, so its branch keeps nothing), plus the reordered hidden's gradient, one
  full-size slice gradient beside the accumulated one (2·c·T·h).
- ``chunked``, LitGPT — ``litgpt/model.py`` ``GPT.forward(lm_head_chunk_size=128)`` and
  ``litgpt/utils.py`` ``chunked_cross_entropy`` (Lightning-AI/litgpt 2685705, 2026-06): the
  lm_head runs per 128 positions and ``cross_entropy`` takes the chunks as they are (no fp32
  upcast); ``litgpt/finetune/lora.py`` keeps the ``logits`` list through ``backward``: c·T·V
  logits + c·T·V kept ``log_softmax``; backward adds one chunk's two gradients 2·c·B·128·V.
- ``fused-linear``, Liger Kernel (the default rule) — ``src/liger_kernel/ops/
  fused_linear_cross_entropy.py`` ``fused_linear_cross_entropy_forward`` (linkedin/Liger-Kernel
  ead96b6, 2026-08): chunk = next_power_of_2(⌈T / ⌈V/h⌉⌉) tokens; per chunk the c logits (the
  kernel writes their gradient in place) and ``grad_logits_chunk @ weight`` (c·chunk·h); the
  forward allocates ``grad_input`` (c·T·h), ``loss_1d`` (4·T) and, when the lm_head trains, its
  gradient; backward only scales those (``fused_linear_cross_entropy_backward``).
- ``fused-linear``, Unsloth — ``unsloth_zoo/fused_losses/cross_entropy_loss.py``
  ``UnslothFusedLoss`` (unslothai/unsloth-zoo ce232d6, 2026-08): n_chunks = the fp32 logits
  4·T·V over ``target_gb``, rounded up to a multiple of 4 (1 when it fits one), ``target_gb`` =
  min(½ × free VRAM, 4 GiB) at run time; sized at the 4 GiB cap (free VRAM ≥ 8 GiB; less free
  memory makes more, smaller chunks); per chunk ``torch.func.grad_and_value`` of the loss
  holds the c logits, their fp32 copy and fp32 gradient, (c + 8)·chunk·V (eager; compiled, it
  may fuse); ``grad_inputs`` (c·T·h) and the lm_head gradient as in Liger.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...model.facts import ModelFacts
from ..activations import logits_bytes

__all__ = ["LossMemory", "loss_memory", "loss_rule", "validation_loss", "LOSS_RULES",
           "liger_chunk_tokens", "unsloth_chunks"]

TORCHTUNE_CHUNKS = 8
"""torchtune ``LinearCrossEntropyLoss(num_output_chunks=8)`` / ``CEWithChunkedOutputLoss``."""
TRL_CHUNK_TOKENS = 256
"""trl/trainer/sft_trainer.py ``_CHUNKED_LM_HEAD_CHUNK_SIZE = 256``."""
LITGPT_CHUNK_POSITIONS = 128
"""litgpt/finetune/*.py ``model(input_ids, lm_head_chunk_size=128)``."""
UNSLOTH_TARGET_BYTES = 4 * 2**30
"""unsloth_zoo ``_get_chunk_multiplier``: ``target_gb = min(free_gb * 0.5, 4.0)`` GiB."""

LOSS_RULES: dict[tuple[str, str], str] = {
    ("standard", "auto"): "transformers ForCausalLMLoss",
    ("chunked", "auto"): "torchtune LinearCrossEntropyLoss (8 chunks)",
    ("chunked", "trl-sft"): "TRL chunked_nll (256-token checkpointed chunks)",
    ("chunked", "litgpt"): "LitGPT chunked_cross_entropy (128-position lm_head chunks)",
    ("fused-linear", "auto"): "Liger Kernel LigerFusedLinearCrossEntropy",
    ("fused-linear", "unsloth"): "Unsloth UnslothFusedLoss (unsloth_zoo)",
}
"""(training.loss, stack.framework) → the kernel sized; a framework not listed uses the
``auto`` rule of its loss (:func:`loss_rule`)."""


@dataclass(frozen=True)
class LossMemory:
    """What the loss holds in one training step (bytes, per GPU).

    Attributes:
        forward_bytes: at the loss's forward peak (beyond the decoder's saved activations).
        backward_bytes: at the start of backward (the logits gradient being made).
        rule: the kernel sized (a :data:`LOSS_RULES` value).
        formula: the terms with this sheet's numbers.
        source: the code the terms come from.
        logits_materialized: the full T × V logits exist at once (standard; LitGPT's list).
    """

    forward_bytes: int
    backward_bytes: int
    rule: str
    formula: str
    source: str
    logits_materialized: bool


def loss_rule(loss: str, framework: str) -> str:
    """The :data:`LOSS_RULES` entry for ``training.loss`` under ``stack.framework``."""
    return LOSS_RULES.get((loss, framework)) or LOSS_RULES[(loss, "auto")]


def liger_chunk_tokens(tokens: int, vocab: int, hidden: int) -> int:
    """Liger's chunk: ``next_power_of_2(cdiv(BT, cdiv(V, H)))`` tokens (fused_linear_cross_entropy
    .py); e.g. BT = 16384, V = 32000, H = 4096 → inc_factor 8, chunk 2048 (its own comment)."""
    inc_factor = -(-vocab // hidden)
    return 1 << max(0, math.ceil(math.log2(-(-tokens // inc_factor))))


def unsloth_chunks(tokens: int, vocab: int, target_bytes: int = UNSLOTH_TARGET_BYTES) -> int:
    """Unsloth's ``get_chunk_size``: exact = 4·T·V / target; 1 when exact ≤ 1, else exact rounded
    up to a multiple of 4."""
    exact = 4 * tokens * vocab / target_bytes
    if exact <= 1.0 + 1e-9:
        return 1
    return math.ceil(exact / 4 - 1e-9) * 4


def loss_memory(loss: str, framework: str, facts: ModelFacts, *, batch: int, seq: int, c: int,
                head_gradient_bytes: int) -> LossMemory:
    """The loss's bytes for ``batch`` sequences of ``seq`` tokens (module docstring: each rule).

    Args:
        loss: ``training.loss``.
        framework: ``stack.framework`` (picks the chunk rule, :data:`LOSS_RULES`).
        c: bytes per value of the lm_head output (4 when an fp32 lm_head runs without autocast).
        head_gradient_bytes: the lm_head weight gradient a fused kernel makes in the forward
            (0 when the lm_head is frozen); the other rules make it in backward.

    Raises:
        KeyError: a ``loss`` value the sheet does not define.
    """
    arch = facts.architecture
    t, v, h = batch * seq, arch.vocab_size, arch.hidden_size
    rule = loss_rule(loss, framework)
    if loss == "standard":
        fwd, bwd, text = logits_bytes(facts, tokens=t, c=c)
        return LossMemory(fwd, bwd, rule, text, "transformers ForCausalLMLoss (fp32 upcast, "
                          "cross_entropy = log_softmax + nll_loss)", True)
    copy = 4 if c < 4 else 0
    if rule.startswith("torchtune"):
        chunk = -(-t // TORCHTUNE_CHUNKS)
        fwd = 4 * t * v + (c + copy) * chunk * v
        bwd = 4 * t * v + 8 * chunk * v
        return LossMemory(fwd, bwd, rule, f"{TORCHTUNE_CHUNKS} chunks of {chunk} tokens: kept "
                          f"fp32 log_softmax 4×{t}×{v} B + one chunk's logits ({c} + {copy})×"
                          f"{chunk}×{v} B; backward start 4×{t}×{v} + 8×{chunk}×{v} B",
                          "torchtune/modules/loss/cross_entropy_loss.py LinearCrossEntropyLoss "
                          "(num_output_chunks=8), run eagerly", False)
    if rule.startswith("TRL"):
        k = min(t, TRL_CHUNK_TOKENS)
        weight_copy = 4 * v * h if c < 4 else 0
        hidden = c * t * h
        fwd = hidden + max(weight_copy + 4 * k * (h + v), 16 * k * v)
        bwd = 3 * hidden + weight_copy + 12 * k * v
        return LossMemory(fwd, bwd, rule, f"reordered hidden {c}×{t}×{h} B; chunk of {k} tokens:"
                          f" fp32 lm_head copy {weight_copy} B + max(4×{k}×({h} + {v}), "
                          f"16×{k}×{v}) B; backward start 3×{c}×{t}×{h} + {weight_copy} + "
                          f"12×{k}×{v} B", "trl/trainer/sft_trainer.py "
                          "_chunked_cross_entropy_loss (loss_type chunked_nll)", False)
    if rule.startswith("LitGPT"):
        chunk = batch * min(seq, LITGPT_CHUNK_POSITIONS)
        fwd = 2 * c * t * v
        bwd = 2 * c * t * v + 2 * c * chunk * v
        return LossMemory(fwd, bwd, rule, f"logits list {c}×{t}×{v} B + kept log_softmax "
                          f"{c}×{t}×{v} B (no fp32 upcast); backward start + one chunk's two "
                          f"gradients 2×{c}×{chunk}×{v} B",
                          "litgpt/model.py lm_head_chunk_size=128, litgpt/utils.py "
                          "chunked_cross_entropy, litgpt/finetune/lora.py fit()", True)
    if rule.startswith("Liger"):
        chunk = min(t, liger_chunk_tokens(t, v, h))
        held = c * t * h + 4 * t + head_gradient_bytes
        fwd = held + c * chunk * (v + h)
        return LossMemory(fwd, held, rule, f"chunk of {chunk} tokens (next_power_of_2(⌈{t} / "
                          f"⌈{v}/{h}⌉⌉)): logits {c}×{chunk}×{v} B + grad_input chunk "
                          f"{c}×{chunk}×{h} B; grad_input {c}×{t}×{h} B + loss_1d 4×{t} B"
                          + (f" + lm_head gradient {head_gradient_bytes} B"
                             if head_gradient_bytes else ""),
                          "liger_kernel/ops/fused_linear_cross_entropy.py "
                          "fused_linear_cross_entropy_forward", False)
    chunks = unsloth_chunks(t, v)
    chunk = -(-t // chunks)
    held = c * t * h + head_gradient_bytes
    fwd = held + (c + 8) * chunk * v
    return LossMemory(fwd, held, rule, f"{chunks} chunk(s) of {chunk} tokens (4×{t}×{v} B over "
                      f"the 4 GiB target, rounded up to a multiple of 4): ({c} + 8)×{chunk}×{v} B;"
                      f" grad_inputs {c}×{t}×{h} B"
                      + (f" + lm_head gradient {head_gradient_bytes} B"
                         if head_gradient_bytes else ""),
                      "unsloth_zoo/fused_losses/cross_entropy_loss.py UnslothFusedLoss, "
                      "get_chunk_size (target_gb at its 4 GiB cap)", False)


def validation_loss(loss: str, framework: str, facts: ModelFacts, *, batch: int, seq: int,
                    c: int) -> tuple[int, str] | None:
    """The loss's bytes in a validation forward (no gradients), ``(bytes, formula)``, for the
    rules other than transformers' own; None where that one runs (standard; Liger's patched
    forward skips the logits only when ``self.training``, liger_kernel/transformers/model/
    llama.py) — the caller then sizes the standard loss. The bytes replace the forward's
    logits and the loss.

    LitGPT: ``validate()`` runs ``model(input_ids)`` and ``chunked_cross_entropy(chunk_size=0)``,
    whole logits and their ``log_softmax`` in the compute dtype, 2·c·T·V;
    torchtune: one chunk's c logits, fp32 copy and ``log_softmax`` (c + 4 + 4)·⌈T/8⌉·V; TRL: the
    reordered hidden c·T·h and one chunk's forward, max(4·V·h + 4·256·(h + V), 16·256·V);
    Unsloth: its fused loss runs whenever labels are given (unsloth/models/llama.py
    ``if not RETURN_LOGITS and labels is not None``) and makes its gradients in the forward
    even without grad mode: the training forward's figure without an lm_head gradient.
    """
    rule = loss_rule(loss, framework)
    t, v, h = batch * seq, facts.architecture.vocab_size, facts.architecture.hidden_size
    copy = 4 if c < 4 else 0
    if rule.startswith("LitGPT"):
        return 2 * c * t * v, f"logits {c}×{t}×{v} B + log_softmax {c}×{t}×{v} B (no upcast)"
    if rule.startswith("torchtune"):
        chunk = -(-t // TORCHTUNE_CHUNKS)
        return ((c + copy + 4) * chunk * v,
                f"one chunk of {chunk} tokens: ({c} + {copy} + 4)×{chunk}×{v} B")
    if rule.startswith("TRL"):
        k = min(t, TRL_CHUNK_TOKENS)
        weight_copy = 4 * v * h if c < 4 else 0
        return (c * t * h + max(weight_copy + 4 * k * (h + v), 16 * k * v),
                f"reordered hidden {c}×{t}×{h} B + one chunk of {k} tokens")
    if rule.startswith("Unsloth"):
        fused = loss_memory(loss, framework, facts, batch=batch, seq=seq, c=c,
                            head_gradient_bytes=0)
        return fused.forward_bytes, fused.formula
    return None
