"""Inference working memory: the activations live at once inside one decoder layer, and the logits.

Forward without gradients frees each layer's activations before the next layer runs, so the
prefill working set is the largest set of tensors live at once in one layer, or the final hidden
states plus the logits, whichever is larger. Tensor order follows transformers'
``LlamaDecoderLayer`` / ``LlamaMLP`` / ``LlamaAttention`` (and vLLM's fused ``MergedColumnParallel``
gate_up + ``SiluAndMul``, which keep the same live set):

- attention step: residual ``h`` + normed input ``h`` + q, k, v, their RoPE copies (q, k) and the
  attention output (q): ``T × (2h + 3·q + 3·kv)`` values, T = tokens in the forward;
- eager attention adds the score matrix in the compute dtype, its fp32 softmax and the cast back:
  ``batch × heads × S × S × (b + 4 + b)`` bytes (transformers ``eager_attention_forward``);
  SDPA's flash / memory-efficient kernels and FlashAttention-2 keep no S × S matrix
  (Dao et al. 2022, §3.1) — only a ``batch × heads × S`` fp32 log-sum-exp;
- gated MLP step (SwiGLU/GeGLU): residual + input ``2h`` + act(gate), up and their product
  ``3·I``; two-matrix MLP: ``2h + 2·I``; a fused gate_up output (GLM-4 ``Glm4MLP``: one 2·I
  tensor chunked into gate and up) lives until the product: ``4·I``; a parallel block (Cohere 2
  ``Cohere2DecoderLayer``: ``residual + attention + mlp``) holds the attention output ``h``
  through the MLP step;
- MoE step with uniform top-k routing: residual + input + accumulator ``3h``, fp32 router logits
  ``E`` per token, the tokens of one expert (T·k/E) through its MLP, and shared experts;
- RMSNorm step: the residual, an fp32 copy, its fp32 normalized value and the output;
- transformers keeps the embedding output referenced (``inputs_embeds``) for the whole forward;
- quantized matmuls add their own transients (the format's ``matmul_transient``: bitsandbytes
  dequantizes or quantizes whole tensors; fused kernels add none);
- simplifications, not counted: ``repeat_kv`` copies of K/V when SDPA gets an explicit padding
  mask (GQA then materializes K/V at all query heads), and the boolean mask itself;
- logits: ``logits: last`` keeps one position per sequence, cast to fp32 by ``generate`` and
  processed once (``batch × V × (b + 4 + 4)``); ``all`` keeps ``batch × S × V`` in the compute
  dtype (plain forward).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..formats import Matrices, weight_format
from ..formats.int4_kernels import int4_kernel
from ..model.facts import ModelFacts
from .items import Item
from .recurrent_state import mixer_working_bytes

__all__ = ["WorkingMemory", "forward_working_bytes", "attention_scores_bytes", "WORKING_SOURCE",
           "int4_kernel_items"]

WORKING_SOURCE = ("largest live set in one decoder layer, or final hidden + logits "
                  "(gpusizer/memory/working_memory.py: transformers LlamaDecoderLayer order; "
                  "Dao et al. 2022 for no S×S matrix with flash/memory-efficient kernels)")
"""The source of the prefill and decode working-memory items."""


@dataclass(frozen=True)
class WorkingMemory:
    """Working memory of one forward, bytes on one GPU.

    Attributes:
        layer_bytes: largest per-layer live set (without the S×S term).
        scores_bytes: eager attention score matrices (0 for SDPA/flash kernels).
        logits_bytes: logits and their fp32 copies.
        total_bytes: max(layer + scores, final hidden + logits).
        formula: the terms with this sheet's numbers.
    """

    layer_bytes: int
    scores_bytes: int
    logits_bytes: int
    total_bytes: int
    formula: str


def attention_scores_bytes(*, batch: int, heads: int, q_tokens: int, kv_tokens: int,
                           dtype_bytes: int, kernel: str) -> int:
    """S × S attention matrices kept by eager attention: ``batch × heads × q × kv × (b + 4 + b)``
    bytes (scores, fp32 softmax, cast back); 0 for flash / memory-efficient kernels."""
    if kernel != "eager":
        return 0
    return batch * heads * q_tokens * kv_tokens * (dtype_bytes + 4 + dtype_bytes)


def forward_working_bytes(facts: ModelFacts, *, batch: int, q_tokens: int, kv_tokens: int,
                          dtype_bytes: int, kernel: str, logits_positions: int,
                          logits_fp32_copies: int = 2, tp: int = 1, fused_moe: bool = False,
                          keeps_inputs_embeds: bool = True, weights_format: str = "bf16"
                          ) -> WorkingMemory:
    """Working memory of one forward of ``batch`` sequences of ``q_tokens`` new tokens attending
    to ``kv_tokens`` cached tokens, on one GPU.

    Args:
        facts: the model.
        batch: sequences in the forward.
        q_tokens: new tokens per sequence (prompt at prefill, 1 at decode).
        kv_tokens: tokens attended to (for the eager S × S term).
        dtype_bytes: compute dtype bytes.
        kernel: ``eager`` | ``sdpa`` | ``flash`` (the kernel that really runs on the card).
        logits_positions: positions whose logits are materialized per sequence.
        logits_fp32_copies: fp32 copies of the kept logits (generate: cast + processed scores).
        tp: tensor-parallel ranks (heads and intermediate widths are split; h is not).
        fused_moe: routed experts run through fused kernels with scratch buffers (vLLM
            ``fused_moe``) instead of one expert after the other (transformers).
        keeps_inputs_embeds: the embedding output stays referenced for the whole forward
            (transformers ``inputs_embeds``). Both are the engine's (``engines.Engine``).
        weights_format: the running weight format (its matmul transient).

    Returns:
        A :class:`WorkingMemory`; all sizes in bytes.
    """
    arch = facts.architecture
    b = dtype_bytes
    t = batch * q_tokens
    h = arch.hidden_size
    heads = max(1, arch.num_attention_heads // tp)
    if arch.mla is not None:
        # MLA (transformers DeepseekV3Attention): q and its RoPE copy, latent c_KV, up-projected
        # per-head K (and its RoPE part) and V, and the output (heads × v_head_dim).
        m = arch.mla
        qk = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        v = heads * m.v_head_dim
        per_token = 2 * h + 2 * qk + (m.kv_lora_rank + m.qk_rope_head_dim) + 2 * qk + 2 * v
        attn_text = (f"attention (MLA) T={t} × (2h + 4·heads·qk + latent + 2·heads·v) = "
                     f"{t} × {per_token} × {b} B")
    else:
        q = heads * arch.head_dim
        kv = max(1, arch.num_key_value_heads // tp) * arch.head_dim
        per_token = 2 * h + 3 * q + 3 * kv
        attn_text = f"attention T={t} × (2h + 3q + 3kv) = {t} × (2·{h} + 3·{q} + 3·{kv}) × {b} B"
    attn = t * per_token * b
    parts = [attn_text]
    mlp = 0
    if arch.intermediate_size:
        width = arch.intermediate_size // tp
        mult = (3 + arch.fused_gate_up_output) if arch.gated_mlp else 2
        held = 3 if arch.parallel_block else 2   # + the attention output of a parallel block
        mlp = t * (held * h + mult * width) * b
        parts.append(f"MLP {t} × ({held}·{h} + {mult}·{width}) × {b} B")
    moe = 0
    if arch.moe is not None:
        e = arch.moe
        width = e.expert_intermediate_size // tp
        mult = 3 if arch.gated_mlp else 2
        shared = t * mult * width * e.num_shared_experts
        k = e.experts_per_token
        if fused_moe:
            # vLLM fused_moe: intermediate_cache13 of T·k·max(2N, K) values and
            # intermediate_cache2 of T·k·N (vllm/model_executor/layers/fused_moe/fused_moe.py)
            moe = (t * 3 * h * b + t * e.num_experts * 4
                   + t * k * (max(2 * width, h) + width) * b + shared * b)
            parts.append(f"fused MoE {t} × 3·{h} × {b} B + router {t}×{e.num_experts}×4 B + "
                         f"scratch {t}×{k}×(max(2·{width}, {h}) + {width}) × {b} B")
        else:
            per_expert_tokens = -(-t * k // e.num_experts)
            moe = (t * 3 * h * b + t * e.num_experts * 4
                   + per_expert_tokens * (h + mult * width) * b + shared * b)
            parts.append(f"MoE {t} × 3·{h} × {b} B + router {t}×{e.num_experts}×4 B + one "
                         f"expert's {per_expert_tokens} tokens (uniform top-{k} routing) × "
                         f"({h} + {mult}·{width}) × {b} B")
        if shared:
            parts.append(f"shared experts {t}×{mult}·{width}×{e.num_shared_experts}×{b} B")
    # RMSNorm upcasts to fp32: residual, the fp32 copy, its normalized fp32 value, the output
    norm = t * h * (2 * b + 8)
    parts.append(f"RMSNorm {t} × {h} × (2·{b} + 8) B")
    quant = _linear_transient(facts, weights_format, t=t, b=b, tp=tp)
    if quant:
        parts.append(f"{weights_format} matmul transient {quant} B")
    embeds = t * h * b if keeps_inputs_embeds else 0
    if embeds:
        parts.append(f"inputs_embeds kept for the whole forward {t} × {h} × {b} B")
    # Mamba / linear-attention layers (none in attention-only models: 0)
    mixer, mixer_text = mixer_working_bytes(facts, batch=batch, q_tokens=q_tokens,
                                            dtype_bytes=b, tp=tp)
    if mixer:
        parts.append(mixer_text)
    layer = max(attn + quant, mlp + quant, moe + quant, norm, mixer + quant) + embeds
    scores = attention_scores_bytes(batch=batch, heads=heads, q_tokens=q_tokens,
                                    kv_tokens=kv_tokens, dtype_bytes=b, kernel=kernel)
    if scores:
        parts.append(f"eager scores {batch}×{heads}×{q_tokens}×{kv_tokens}×({b}+4+{b}) B")
    vocab = arch.vocab_size
    logits = batch * logits_positions * vocab * b + batch * vocab * 4 * logits_fp32_copies
    parts.append(f"logits {batch}×{logits_positions}×{vocab}×{b} B + {logits_fp32_copies} fp32 "
                 f"copies {batch}×{vocab}×4 B")
    tail = t * 2 * h * b + embeds + logits
    total = max(layer + scores, tail)
    return WorkingMemory(layer, scores, logits, total,
                         "max(layer, final hidden + logits): " + "; ".join(parts))


def _linear_transient(facts: ModelFacts, fmt: str, *, t: int, b: int, tp: int) -> int:
    """Extra memory while one quantized linear runs on ``t`` tokens, bytes: the format's
    ``matmul_transient`` over the decoder's dense linears (``gpusizer.formats``: bitsandbytes
    ``MatMul4Bit`` dequantizes the largest matrix, ``MatMul8bitLt`` quantizes the input and
    dequantizes the output; fused kernels dequantize tile by tile, 0)."""
    transient = weight_format(fmt).matmul_transient
    if transient is None:
        return 0
    linears = [g for g in facts.architecture.params if g.role == "linear"]
    shapes = tuple(s for g in linears for s in g.shapes)
    m = Matrices(shapes, sum(g.count for g in linears),
                 largest=max((g.largest_matrix for g in linears), default=0),
                 hidden=facts.architecture.hidden_size)
    return transient(m, t, b, tp)


def int4_kernel_items(facts: ModelFacts, fmt: str, engine: str,
                      compute_capability: tuple[int, int] | None, share, *,
                      prompt_tokens: int) -> list[Item]:
    """The items of the GPTQ / AWQ kernel path the engine runs on the card
    (``formats.int4_kernels.int4_kernel``): a persistent scratch (exllama) live from the end of
    load, and the dequantized weight of the largest linear while it runs (AWQ GEMM at large
    inputs, vLLM's GPTQ exllama kernel), live in prefill (``share.sequences × prompt_tokens``
    tokens) and in decode when the path dequantizes at ``share.sequences`` tokens too. The
    transient is added to the phase's other items: a conservative envelope (it lives while one
    linear runs, beside that layer's activations). None for other formats, engines, or without
    a card (the path depends on the card)."""
    quant = getattr(facts, "quant", None)
    kernel = int4_kernel(fmt, engine, compute_capability,
                         version=getattr(quant, "kernel", None),
                         act_order=bool(getattr(quant, "act_order", False)))
    if kernel is None:
        return []
    linears = [g for g in facts.architecture.params if g.role == "linear"]
    m = Matrices.of(linears, facts.architecture.hidden_size)
    tp = share.tp
    items = []
    scratch = kernel.scratch(m, tp)
    if scratch:
        items.append(Item("int4_kernel_scratch", scratch, "estimated", ("load", "prefill",
                                                                         "decode"),
                          kernel.source, f"{kernel.name} ({kernel.why}): persistent scratch of "
                          f"the largest linear on this GPU, {scratch} B"))
    prefill = kernel.transient(m, share.sequences * prompt_tokens, tp)
    decode = kernel.transient(m, share.sequences, tp)
    if prefill or decode:
        phases = tuple(p for p, b in (("prefill", prefill), ("decode", decode)) if b)
        items.append(Item("int4_dequant_transient", max(prefill, decode), "estimated", phases,
                          kernel.source, f"{kernel.name} ({kernel.why}): the largest linear "
                          "dequantized to fp16 while it runs (added to the phase: a "
                          "conservative envelope)"))
    return items
