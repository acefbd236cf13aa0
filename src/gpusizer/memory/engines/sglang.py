"""SGLang as an engine: a token pool taken at start from a static share of the free memory.

SGLang (``python -m sglang.launch_server``) sizes its KV pool once, after loading the weights
(``ModelRunner.profile_max_num_token``, SGLang 0.4.x; ``mem_cache/memory_pool.py`` allocates
it)::

    free_at_start    = CUDA total − CUDA context − communicators  ("Load weight begin")
    rest             = free_after_load − free_at_start × (1 − mem_fraction_static)
                     = free_at_start × mem_fraction_static − weights
    cell             = Σ_layers K + V bytes per token
                       (MLA: (kv_lora_rank + qk_rope_head_dim) × dtype per layer)
    max_total_tokens = floor(rest / cell), rounded down to page_size

and logs ``KV Cache is allocated. #tokens: N, K size: X GB, V size: X GB`` (``GB`` = 2^30 B; K
and V each hold ``N + page_size`` slots per layer; MLA logs one ``KV size``). The remaining
``free_at_start × (1 − mem_fraction_static)`` holds what SGLang does not profile: the chunked
prefill's activations, CUDA graphs, the request-to-token table. SGLang shares vLLM's paged
layout rules (MLA latent, FlashAttention-style kernels, fused MoE, tensor parallelism), so this
engine derives from :class:`~gpusizer.memory.engines.vllm.VllmEngine` for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...sheet import ENGINE_SHEET_RULES
from ...units import MiB, fmt_bytes
from ..items import Item
from ..kv_cache import KvLayout
from ..nccl import within_node_link
from ..weights import DTYPE_BYTES
from ..working_memory import WORKING_SOURCE
from .base import PoolCondition, PoolSplit
from .versions import SGLANG_AUTO, sglang_defaults
from .vllm import VllmEngine, cuda_total
from .vllm_pool import custom_all_reduce_bytes, profile_activation_bytes, rotary_cache_bytes

if TYPE_CHECKING:
    from ...catalog.types import Card
    from ...model.facts import ModelFacts
    from ...sheet import Inference, Sheet, Stack
    from ..placement import Share

__all__ = ["SGLANG", "SglangEngine", "sglang_split", "sglang_max_running_requests",
           "request_rows"]

_GB = 2**30
"""SGLang's log unit: memory_pool.py prints ``bytes / GB`` with ``GB = 1024 ** 3``."""

_PAGE_SIZE = 1
"""SGLang's default ``--page-size`` (tokens per KV page)."""


def request_rows(max_total_tokens: int, context_len: int) -> int:
    """Rows of SGLang 0.4.x's request-to-token table (``ModelRunner.init_memory_pool``):
    ``min(max(int(max_total_tokens / context_len × 512), 2048), 4096) + 1``."""
    return min(max(int(max_total_tokens / context_len * 512), 2048), 4096) + 1


def sglang_max_running_requests(max_total_tokens: int, context_len: int) -> int:
    """SGLang 0.4.x's default ``max_running_requests``: ``min(max_total_tokens // 2,`` the
    request table's rows ``)`` (``Scheduler.__init__``; :func:`request_rows`)."""
    return min(max_total_tokens // 2, request_rows(max_total_tokens, context_len))


def sglang_split(*, total_bytes: int, total_source: str, free_at_start_bytes: int,
                 mem_fraction_static: float, weights_bytes: int, activation_bytes: int,
                 non_torch_bytes: int, layout: KvLayout, tokens_per_sequence: int,
                 sequences: int, max_running_requests: int | None, mla: bool,
                 command: str = "") -> PoolSplit:
    """Split one GPU's SGLang memory (module docstring: the formula and its sources).

    Args:
        total_bytes: the device total CUDA reports.
        total_source: where ``total_bytes`` came from.
        free_at_start_bytes: free memory when loading begins (SGLang's ``total_gpu_memory``).
        mem_fraction_static: the resolved ``--mem-fraction-static``.
        weights_bytes: weights per GPU incl. the rotary cache (``mem usage`` at load).
        activation_bytes: the chunked prefill's activation peak (in the remainder, not
            subtracted: SGLang does not profile it).
        non_torch_bytes: non-PyTorch memory taken before loading (context, communicators).
        layout: KV bytes per token on this GPU (all layers; sliding layers sized as full).
        tokens_per_sequence: prompt + new tokens (SGLang's ``--context-length`` here).
        sequences: sequences this GPU must hold at once.
        max_running_requests: the ``--max-running-requests`` set, or None (SGLang's default).
        mla: the model caches an MLA latent (SGLang logs one ``KV size``).
        command: the ``launch_server`` command line.

    Returns:
        A :class:`~gpusizer.memory.engines.base.PoolSplit` of engine ``sglang``; its
        ``budget_bytes`` is ``free_at_start × mem_fraction_static`` (weights + KV pool).
    """
    cell = layout.full_bytes_per_token + layout.sliding_bytes_per_token
    budget = int(free_at_start_bytes * mem_fraction_static)
    rest = budget - weights_bytes
    tokens = max(0, rest // cell) // _PAGE_SIZE * _PAGE_SIZE if cell else 0
    running = (max_running_requests if max_running_requests is not None
               else sglang_max_running_requests(tokens, tokens_per_sequence))
    held = min(tokens // tokens_per_sequence, running) if tokens_per_sequence else None
    slots = (tokens + _PAGE_SIZE) * cell
    if mla:
        pool_line = (f"KV Cache is allocated. #tokens: {tokens}, KV size: {slots / _GB:.2f} GB")
    else:
        pool_line = (f"KV Cache is allocated. #tokens: {tokens}, K size: {slots / 2 / _GB:.2f} "
                     f"GB, V size: {slots / 2 / _GB:.2f} GB")
    lines = (f"Load weight begin. avail mem={free_at_start_bytes / _GB:.2f} GB",
             f"Load weight end. avail mem={(free_at_start_bytes - weights_bytes) / _GB:.2f} GB, "
             f"mem usage={weights_bytes / _GB:.2f} GB.",
             pool_line,
             f"max_total_num_tokens={tokens}, max_running_requests={running}, "
             f"context_len={tokens_per_sequence}")
    return PoolSplit(engine="sglang", total_bytes=total_bytes, total_source=total_source,
                     budget_bytes=budget, weights_bytes=weights_bytes,
                     activation_bytes=activation_bytes, non_torch_bytes=non_torch_bytes,
                     kv_cache_bytes=rest, block_bytes=_PAGE_SIZE * cell,
                     kv_blocks=tokens // _PAGE_SIZE, kv_tokens=tokens,
                     max_concurrency=(int(tokens / tokens_per_sequence * 100) / 100
                                      if tokens_per_sequence else None),
                     starts=tokens > 0, sequences_held=held,
                     tokens_per_sequence=tokens_per_sequence, required_sequences=sequences,
                     required_kv_bytes=sequences * tokens_per_sequence * cell,
                     command=command, log_lines=lines,
                     settings=(("mem_fraction_static", mem_fraction_static),
                               ("max_running_requests", running),
                               ("free_at_start_bytes", free_at_start_bytes)))


class SglangEngine(VllmEngine):
    """SGLang serving one model: a token pool sized from ``mem_fraction_static`` at start."""

    name = "sglang"
    label = "SGLang"
    KEYS = ENGINE_SHEET_RULES["sglang"].keys
    simulate_refusal: str | None = ("only engine transformers is simulated (SGLang's pool is "
                                    "sized by estimate)")
    measure_refusal: str | None = ("the harness runs transformers; measure SGLang from its own "
                                   "start-up log (gpusizer estimate --card gives its split)")
    budget_rule = "free memory at start × mem_fraction_static"
    pool_peak_note = ("SGLang: peak_bytes and device_peak_bytes are SGLang's static share (free "
                      "memory at start × mem_fraction_static: weights and the KV pool); "
                      "activations and CUDA graphs use the rest")
    pool_source = "ModelRunner.profile_max_num_token"

    def describe_cache(self, inference: dict[str, Any]) -> str:
        return "token pool (SGLang)"

    def describe_attention(self, attention: str, *, mla: bool = False) -> str:
        # SGLang picks its backend (server_args.py): FlashInfer by default on CUDA in 0.4.x,
        # FlashAttention 3 on Hopper in later releases; MLA models get an MLA backend
        if mla:
            return "SGLang's MLA backend (FlashInfer MLA, FlashMLA or Triton by card)"
        return "SGLang's attention backend (FlashInfer or FlashAttention 3)"

    def notes(self, inference: Inference) -> list[str]:
        return []

    def kv_block_tokens(self, inference: Inference) -> int:
        return _PAGE_SIZE

    def prefill_working(self, facts: ModelFacts, *, inference: Inference, share: Share,
                        dtype_bytes: int, kernel: str, weights_format: str,
                        stack: Stack | None = None) -> Item:
        """One chunked-prefill step of ``chunked_prefill_size`` tokens (SGLang's default for the
        card when auto: 8192 here, the card's own value in ``pool``), then sampling over the
        sequences (fp32 logits and probabilities: ``dtype + 4 + 4`` bytes per logit)."""
        chunk = self._chunk(inference, None)
        act, text = profile_activation_bytes(
            facts, max_num_batched_tokens=min(chunk, inference.prompt_tokens * share.sequences),
            max_num_seqs=share.sequences, dtype_bytes=dtype_bytes, tp=share.tp,
            weights_format=weights_format)
        return Item("prefill_working", act, "estimated", ("prefill",),
                    WORKING_SOURCE + "; SGLang chunked prefill (chunked_prefill_size tokens)",
                    "SGLang chunked prefill: " + text)

    @staticmethod
    def _chunk(inference: Inference, default: int | None) -> int:
        if inference.chunked_prefill_size != "auto":
            return int(inference.chunked_prefill_size)
        return default or 8192

    def command(self, sheet: Sheet, tp: int, *, mem_fraction_static: float | None = None
                ) -> str:
        """``python -m sglang.launch_server --model-path MODEL …`` with SGLang's own argument
        names (server_args.py); ``--context-length`` is prompt + new tokens."""
        inf = sheet.inference
        assert inf is not None   # a pool exists only for an inference block
        parts = ["python -m sglang.launch_server --model-path",
                 sheet.model.id or sheet.model.path or "MODEL"]
        if sheet.model.revision != "main":
            parts += ["--revision", sheet.model.revision]
        parts += ["--context-length", str(inf.tokens_per_sequence)]
        mfs = inf.mem_fraction_static if inf.mem_fraction_static != "auto" else \
            mem_fraction_static
        if mfs is not None:
            parts += ["--mem-fraction-static", f"{mfs:g}"]
        if inf.max_running_requests != "auto":
            parts += ["--max-running-requests", str(inf.max_running_requests)]
        if inf.chunked_prefill_size != "auto":
            parts += ["--chunked-prefill-size", str(inf.chunked_prefill_size)]
        parts += ["--tp-size", str(tp), "--kv-cache-dtype", inf.kv_cache_dtype]
        return " ".join(parts)

    def pool(self, *, inference: Inference, facts: ModelFacts, card: Card | None,
             compute_dtype: str, weights_bytes: int, items: list[Item], layout: KvLayout,
             sequences: int, sheet: Sheet, tp: int) -> tuple[PoolSplit | None, list[str]]:
        """SGLang's split on ``card`` (None without a card) and the notes on it."""
        if card is None:
            return None, ["engine sglang without a card: SGLang's pool (mem_fraction_static, "
                          "#tokens) needs --card"]
        version = sheet.stack.sglang
        total, src = cuda_total(card)
        gpu_mib = int(card.device_bytes.value) // MiB
        defaults = sglang_defaults(version, gpu_mib=gpu_mib, tp=tp)
        mfs = (float(inference.mem_fraction_static) if inference.mem_fraction_static != "auto"
               else defaults.mem_fraction_static)
        rope = rotary_cache_bytes(facts, DTYPE_BYTES[compute_dtype])
        link = within_node_link(None, card)
        ar = custom_all_reduce_bytes(tp, nvlink=link.link == "nvlink")
        before = [it for it in items if it.non_torch and it.phases
                  and it.name in ("cuda_context", "nccl_buffers")]
        nt = sum(it.bytes or 0 for it in before) + ar
        profile = next(it for it in items if it.name == "prefill_working")
        running = (None if inference.max_running_requests == "auto"
                   else int(inference.max_running_requests))
        split = sglang_split(
            total_bytes=total, total_source=src, free_at_start_bytes=total - nt,
            mem_fraction_static=mfs, weights_bytes=weights_bytes + rope,
            activation_bytes=profile.bytes or 0, non_torch_bytes=nt, layout=layout,
            tokens_per_sequence=inference.tokens_per_sequence, sequences=sequences,
            max_running_requests=running, mla=facts.architecture.mla is not None,
            command=self.command(sheet, tp, mem_fraction_static=mfs))
        notes = [f"SGLang {SGLANG_AUTO if version == 'auto' else version} "
                 f"(stack.sglang {version}): mem_fraction_static {mfs:g}"
                 + ("" if inference.mem_fraction_static != "auto" else
                    f" (its default: {defaults.rule})")
                 + f"; free memory at start = total {total} B − CUDA context, NCCL and custom "
                 f"all-reduce buffers {nt} B (declared); rotary cos/sin cache {rope} B"]
        remainder = split.total_bytes - nt - split.budget_bytes
        rows = request_rows(split.kv_tokens, inference.tokens_per_sequence)
        table = rows * (inference.tokens_per_sequence + 4) * 4
        notes.append(f"SGLang's remainder {fmt_bytes(remainder)} (free × (1 − "
                     f"mem_fraction_static)) holds what it does not profile: the chunked "
                     f"prefill's activations ≈ {fmt_bytes(split.activation_bytes)}, the "
                     f"request-to-token table {rows} × ({inference.tokens_per_sequence} + 4) × "
                     f"4 B = {fmt_bytes(table)}, and CUDA graphs (not sized: measure them, or "
                     "run with --disable-cuda-graph)")
        if split.activation_bytes + table > remainder:
            notes.append("SGLang: the chunked prefill's activations and the request table "
                         "exceed the remainder left by mem_fraction_static: SGLang may run out "
                         "of memory at the first long prefill (lower --mem-fraction-static or "
                         "--chunked-prefill-size)")
        if layout.sliding_window is not None:
            notes.append("SGLang: sliding-window layers are sized as full-attention layers (its "
                         "hybrid SWA pool and swa_full_tokens_ratio are not sized)")
        return split, notes

    def pool_condition(self, pool: PoolSplit) -> PoolCondition:
        """SGLang refuses to start when the weights leave no KV token in its static share
        ("Not enough memory. Please try to increase --mem-fraction-static"); it serves the
        workload without queueing when the pool and ``max_running_requests`` hold every
        required sequence at once."""
        if pool.starts is False:
            return PoolCondition(False, False, (
                f"SGLang: its static share {fmt_bytes(pool.budget_bytes)} (free memory × "
                f"mem_fraction_static) − weights {fmt_bytes(pool.weights_bytes)} leaves no KV "
                "token: SGLang refuses to start ('Not enough memory. Please try to increase "
                "--mem-fraction-static')"))
        need = pool.required_sequences
        holds = pool.sequences_held is not None and pool.sequences_held >= need
        return PoolCondition(True, holds, (
            f"SGLang pool of {pool.kv_tokens} tokens ({fmt_bytes(pool.kv_cache_bytes)}) per GPU "
            f"holds {pool.sequences_held} whole sequence(s) of {pool.tokens_per_sequence} "
            f"tokens at once {'>=' if holds else '<'} {need} required"
            + ("" if holds else " (the rest would queue)")))


SGLANG = SglangEngine()
