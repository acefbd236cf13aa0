"""Throughput and duration bounds of one offer (CONTRACT.md ``offers[].throughput``; issue 17
point 2). SPEC R3: prices say nothing about speed, so each figure here is a labelled *bound* from
the card's datasheet figures, shown as a column and never used to order offers.

- Decode: one step reads every active weight once and the KV cache of every sequence, so
  ``tokens/s ≤ concurrency × bandwidth ÷ bytes read per step`` per GPU of the placement (every
  GPU steps at once; tensor parallel splits both reads). Active weights: for MoE, the shared part
  and the ``num_experts_per_tok`` routed experts of one token (the fewest bytes a step can read,
  so the bound stays an upper bound); the embedding table is not read (its rows only), unless
  it is tied to the output head. KV: the required length (prompt + new tokens), the last step's.
- Prefill: ``seconds ≥ FLOPs ÷ (peak × GPUs)``, FLOPs per sequence = 2 × N × P (Kaplan et al.
  2020, "Scaling Laws for Neural Language Models", Table 1: forward 2N per token) plus the causal
  attention's n_layer × P² × d_attn (Table 1's 2·n_layer·n_ctx·d_attn per token, halved because
  a token attends to the positions before it), N the active matmul parameters, P the prompt.
  The peak is the largest the card gives for the dtypes the format may run in (a lower bound).
- USD per million generated tokens ≥ total USD ÷ (decode bound × the rental's seconds) × 10**6.
- Training with ``training.dataset_tokens``: ``days = 6 × N × tokens × epochs ÷ (mfu × peak ×
  GPUs) ÷ 86 400`` (Kaplan et al. 2020 §2.1, C ≈ 6N per token; Hoffmann et al. 2022,
  "Chinchilla", §3), at the user's ``training.mfu``, or at the peak (a lower bound) without one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog.types import Card
from ..memory.items import MemoryEstimate
from ..model.facts import ModelFacts
from ..sheet import Sheet

__all__ = ["Throughput", "offer_throughput", "measured_decode_tokens_per_s", "active_parameters", "decode_tokens_per_s_bound",
           "prefill_seconds_bound", "training_days_bound", "SECONDS_PER_DAY"]

SECONDS_PER_DAY = 86_400
_FORMAT_DTYPE = {"fp8": "fp8", "int8": "int8", "nvfp4": "fp4", "mxfp4": "fp4"}
"""Weight formats whose matmuls may run in their own tensor-core dtype on a card that has it."""


@dataclass(frozen=True)
class Throughput:
    """One offer's bounds (per lot, at the sheet's concurrency); None where a figure it needs
    (the card's bandwidth or peak, the estimate, the price) is unknown.

    Attributes:
        decode_tokens_per_s_bound: generated tokens per second, at most (inference).
        usd_per_million_tokens_bound: USD per million generated tokens, at least.
        prefill_seconds_bound: seconds to prefill the concurrency's prompts, at least.
        training_days_bound: days for dataset_tokens × epochs at the stated mfu (training).
        source: the formulas and the card facts used, in one line.
        measured_decode_tokens_per_s: a measured figure from evidence, shown beside the bound.
    """

    decode_tokens_per_s_bound: float | None
    usd_per_million_tokens_bound: float | None
    prefill_seconds_bound: float | None
    training_days_bound: float | None
    source: str
    measured_decode_tokens_per_s: float | None = None


def active_parameters(facts: ModelFacts | None, sheet: Sheet) -> tuple[int, int]:
    """``(matmul parameters a token uses, parameters trained on per token)``: for MoE, the
    routed experts counted at ``experts_per_token / num_experts``; the first leaves out an
    untied embedding (a lookup, not a matmul). A bare ``model.parameters`` count is dense."""
    if facts is None:
        n = sheet.model.parameters or 0
        return n, n
    arch = facts.architecture
    total = expert = embedding = 0
    for g in arch.params:
        total += g.count
        expert += g.count if g.role == "expert_linear" else 0
        embedding += g.count if g.role == "embedding" else 0
    moe = arch.moe
    if moe is not None and moe.num_experts:
        total -= expert - expert * moe.experts_per_token // moe.num_experts
    return (total - (0 if arch.tie_word_embeddings else embedding)), total


def decode_tokens_per_s_bound(*, bytes_per_step: int, bandwidth_gb_s: float,
                              sequences: int) -> float:
    """``sequences × bandwidth ÷ bytes read per step``: bytes per GPU per step (B), bandwidth in
    GB/s (10**9 B/s), sequences decoded per step → tokens/s, at most."""
    return sequences * bandwidth_gb_s * 1e9 / bytes_per_step


def prefill_seconds_bound(*, matmul_parameters: int, prompt_tokens: int, sequences: int,
                          layers: int, attention_width: int, peak_tflops: float,
                          gpus: int) -> float:
    """``sequences × (2 N P + n_layer P² d_attn) ÷ (peak × 10**12 × GPUs)``: N parameters, P
    tokens, d_attn = heads × head_dim (elements), peak in TFLOPS → seconds, at least."""
    flops = sequences * (2 * matmul_parameters * prompt_tokens
                         + layers * prompt_tokens ** 2 * attention_width)
    return flops / (peak_tflops * 1e12 * gpus)


def training_days_bound(*, parameters: int, tokens: float, peak_tflops: float, gpus: int,
                        mfu: float) -> float:
    """``6 N T ÷ (mfu × peak × 10**12 × GPUs) ÷ 86 400``: N parameters, T tokens (dataset ×
    epochs), peak in TFLOPS, mfu a fraction (1 without one: a lower bound) → days."""
    return 6 * parameters * tokens / (mfu * peak_tflops * 1e12 * gpus) / SECONDS_PER_DAY


def _peak(card: Card, weights_format: str) -> tuple[float, str] | None:
    """The largest peak the card gives for a 16-bit matmul or the format's own dtype, and the
    dtype it is for; None when the card table gives none."""
    dtypes = ["bf16", "fp16"] + ([_FORMAT_DTYPE[weights_format]]
                                  if weights_format in _FORMAT_DTYPE else [])
    known = [(card.peak_tflops(d).value, d) for d in dtypes if card.peak_tflops(d) is not None]
    return max(known, key=lambda k: k[0]) if known else None  # a tie keeps bf16


def _kv_bytes(est: MemoryEstimate) -> int | None:
    """The workload's own KV cache per GPU (the required tokens; not a serving pool)."""
    for items in (est.lower_bound_items, est.items):
        for it in items:
            if it.name == "kv_cache":
                return it.bytes
    return 0


def measured_decode_tokens_per_s(docs, card: Card | None) -> tuple[float, str] | None:
    """A measured decode tokens/s (the evidence key ``decode_tokens_per_s``) of a measurement
    taken on ``card`` (same canonical card and device bytes), and its document; the highest
    when several; None when none carries one."""
    from ..catalog.cards import lookup_card
    if card is None:
        return None
    found = []
    for doc in docs:
        value = doc.extra("decode_tokens_per_s")
        if doc.kind != "measurement" or not isinstance(value, (int, float)) or value <= 0 \
                or doc.scope.card is None:
            continue
        c = lookup_card(doc.scope.card, memory_bytes=doc.scope.device_bytes)
        if c is not None and c.name == card.name \
                and doc.scope.device_bytes == card.device_bytes.value:
            found.append((float(value), doc.document))
    return max(found) if found else None


def offer_throughput(sheet: Sheet, facts: ModelFacts | None, card: Card | None,
                     est: MemoryEstimate | None, *, total_usd: float | None,
                     days: float | None, measured: float | None = None) -> Throughput | None:
    """The bounds of one offer whose lot runs the sheet's placement (None without a card or an
    estimate: nothing to bound with).

    Args:
        sheet: the workload (its concurrency, lengths, placement, training keys).
        facts: the model's facts (None for a bare parameter count).
        card: the offer's card (its bandwidth and peak dense throughput).
        est: the offer's per-card estimate (per GPU).
        total_usd, days: the lot's price and rental days (USD per token needs both).
        measured: a measured decode tokens/s from evidence, shown beside the bound.
    """
    if card is None or est is None:
        return None
    gpus = sheet.placement.gpus
    matmul, trained = active_parameters(facts, sheet)
    total_params = sum(g.count for g in facts.architecture.params) if facts else matmul
    peak = _peak(card, est.weights_format)
    bw = card.bandwidth_gb_s.value
    decode = usd = prefill = train = None
    parts = []
    inf, tr = sheet.inference, sheet.training
    if inf is not None:
        kv = _kv_bytes(est)
        weights = est.weights_bytes * matmul // max(total_params, 1)  # active share, per GPU
        if kv is not None and bw:
            sequences = inf.concurrency  # every GPU steps at once: each reads its share
            step = weights + kv
            decode = decode_tokens_per_s_bound(bytes_per_step=step, bandwidth_gb_s=bw,
                                               sequences=sequences)
            parts.append(f"decode ≤ {sequences} seq × {bw:g} GB/s ÷ {step} B per GPU step "
                         f"(active weights {weights} B + KV {kv} B; {card.bandwidth_gb_s.source})")
            if total_usd is not None and days:
                usd = total_usd / (decode * days * SECONDS_PER_DAY) * 1e6
        if peak is not None and facts is not None:
            arch = facts.architecture
            prefill = prefill_seconds_bound(
                matmul_parameters=matmul, prompt_tokens=inf.prompt_tokens,
                sequences=inf.concurrency, layers=arch.num_layers,
                attention_width=arch.num_attention_heads * arch.head_dim,
                peak_tflops=peak[0], gpus=gpus)
            parts.append(f"prefill ≥ (2 N P + n_layer P² d_attn) ÷ {peak[0]:g} TFLOPS {peak[1]} "
                         f"× {gpus} GPU (Kaplan et al. 2020 Table 1)")
    if tr is not None and tr.dataset_tokens and peak is not None:
        sixteen = max((card.peak_tflops(d).value for d in ("bf16", "fp16")
                       if card.peak_tflops(d) is not None), default=None)
        if sixteen is not None:
            train = training_days_bound(parameters=trained,
                                        tokens=tr.dataset_tokens * tr.epochs,
                                        peak_tflops=sixteen, gpus=gpus, mfu=tr.mfu or 1.0)
            at = f"mfu {tr.mfu:g}" if tr.mfu else "peak (no mfu stated: a lower bound)"
            parts.append(f"training days = 6 × {trained} × {tr.dataset_tokens} × {tr.epochs:g} "
                         f"÷ ({at} × {sixteen:g} TFLOPS × {gpus}) (Kaplan et al. 2020 §2.1)")
    if peak is not None:
        src = card.peak_tflops(peak[1]).source
        parts.append(f"peak: {src}")
    return Throughput(decode, usd, prefill, train, "; ".join(parts) or "no card figure",
                      measured)
