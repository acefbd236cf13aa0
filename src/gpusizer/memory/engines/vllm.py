"""vLLM (V1) as an engine: paged KV blocks, a profile run, and the pool it takes at start.

The formulas of the split (budget, profile-run activations, rotary cache, KV blocks) are in
``vllm_pool.py``; this module holds the rules the memory stage asks an engine for
(``base.Engine``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...sheet import ENGINE_SHEET_RULES
from ...model.facts import ModelFacts
from ...units import fmt_bytes, fmt_gib
from ..items import Item
from ..kv_cache import KvLayout, kv_bytes, kv_layout
from ..placement import PlacementRule
from ..weights import DTYPE_BYTES
from ..working_memory import WORKING_SOURCE
from .base import EngineBase, PoolCondition, PoolSplit
from ..nccl import within_node_link
from .versions import (VLLM_AUTO, VLLM_KV_CACHE_DTYPES, batched_tokens, version_tuple,
                       vllm_rules)
from .vllm_pool import (CUSTOM_ALL_REDUCE_SOURCE, custom_all_reduce_bytes, kv_cache_groups,
                        profile_activation_bytes, rotary_cache_bytes, vllm_split)

if TYPE_CHECKING:
    from ...catalog.types import Card
    from ...sheet import Inference, Sheet, Stack
    from ..placement import Share

__all__ = ["VLLM", "VllmEngine", "cuda_total"]


def cuda_total(card: Card) -> tuple[int, str]:
    """The device total a serving engine sizes from (``torch.cuda.mem_get_info()[1]``), bytes,
    with its source: the card table's CUDA-visible total, else nvidia-smi's."""
    cuda = card.cuda_total_bytes.value
    if cuda:
        return int(cuda), f"CUDA-visible total from the card table ({card.cuda_total_bytes.source})"
    return int(card.device_bytes.value), (
        "nvidia-smi total from the card table (the CUDA-visible total, which the engines use, "
        "is not known for this card and is usually a few hundred MiB lower)")


class VllmEngine(EngineBase):
    """vLLM (V1) serving one model: paged KV blocks, a profile run, a pool taken at start."""

    name = "vllm"
    label = "vLLM"
    KEYS = ENGINE_SHEET_RULES["vllm"].keys
    simulate_refusal: str | None = ("only engine transformers is simulated (vLLM's pool is "
                                    "sized by estimate)")
    measure_refusal: str | None = ("the harness runs transformers; measure vLLM from its own "
                                   "start-up log (gpusizer estimate --card gives its split)")
    placement = PlacementRule(tp_replicated_embedding=False)
    fused_moe = True
    keeps_inputs_embeds = False
    paged_mamba_state = True
    budget_rule = "total × gpu_memory_utilization"
    """How the budget is derived, in the report's words."""
    pool_peak_note = ("vLLM: peak_bytes and device_peak_bytes are vLLM's budget (total × "
                      "gpu_memory_utilization), which holds weights, the KV pool, the activation "
                      "peak and non-PyTorch memory; the phase rows show the allocated parts")
    """CONTRACT.md: vLLM takes its whole pool at start, so peak_bytes is the budget."""
    pool_source = "Worker.determine_available_memory"
    """Where the engine allocates its pool (for the ``kv_cache`` item's source)."""

    def describe_cache(self, inference: dict[str, Any]) -> str:
        return "paged (vLLM)"

    def describe_attention(self, attention: str, *, mla: bool = False) -> str:
        # vLLM chooses its backend itself (vllm/platforms/cuda.py get_attn_backend_cls): an MLA
        # model gets an MLA backend (CUTLASS MLA on Blackwell, FlashMLA on Hopper, Triton MLA
        # otherwise), other models FlashAttention
        if mla:
            return "vLLM's MLA backend (CUTLASS MLA, FlashMLA or Triton MLA by card)"
        return "vLLM's FlashAttention backend"

    def notes(self, inference: Inference) -> list[str]:
        if inference.kv_cache_dtype in ("fp16", "bf16"):
            return [f"kv_cache_dtype {inference.kv_cache_dtype}: vLLM's --kv-cache-dtype takes "
                    "auto, fp8, fp8_e4m3 or fp8_e5m2 (a 16-bit cache is 'auto' with --dtype "
                    f"{inference.kv_cache_dtype}); the command line says auto"]
        return []

    def kv_layout(self, facts: ModelFacts, *, dtype_bytes: int, tp: int) -> KvLayout:
        """MLA caches only the latent (``MLAAttention``); otherwise K and V per KV head."""
        return kv_layout(facts, dtype_bytes=dtype_bytes, mla_latent=True, tp=tp)

    def kv_block_tokens(self, inference: Inference) -> int:
        return inference.block_size

    def prompt_kv_bytes(self, layout: KvLayout, *, tokens: int, sequences: int,
                        block_tokens: int) -> int:
        return kv_bytes(layout, tokens=tokens, sequences=sequences, round_to=block_tokens)

    def kv_static(self, inference: Inference) -> bool:
        return False

    def attention_kernel(self, card_kernel: str) -> str:
        return "flash"

    def prefill_working(self, facts: ModelFacts, *, inference: Inference, share: Share,
                        dtype_bytes: int, kernel: str, weights_format: str,
                        stack: Stack | None = None) -> Item:
        """vLLM schedules at most max_num_batched_tokens per step (chunked prefill), so the
        prefill working set is the profile run's (vLLM sizes its pool on exactly that run);
        its sampler's peak follows ``stack.vllm`` (``versions.VLLM_RULES``)."""
        version = stack.vllm if stack is not None else "auto"
        rules = vllm_rules(version)
        batched, why = batched_tokens(inference, version)
        act, act_text = profile_activation_bytes(
            facts, max_num_batched_tokens=batched,
            max_num_seqs=inference.max_num_seqs, dtype_bytes=dtype_bytes, tp=share.tp,
            weights_format=weights_format,
            sampler_bytes_per_logit=rules.sampler_bytes_per_logit)
        return Item("prefill_working", act, "estimated", ("prefill",),
                    WORKING_SOURCE + "; vLLM profile run (Worker.determine_available_memory)",
                    f"vLLM profile run of {batched} tokens ({why}): " + act_text)

    def decode_transients(self, facts: ModelFacts, *, inference: Inference, kv_bytes: int,
                          layer_fraction: Any) -> list[Item]:
        return []

    def pool(self, *, inference: Inference, facts: ModelFacts, card: Card | None,
             compute_dtype: str, weights_bytes: int, items: list[Item], layout: KvLayout,
             sequences: int, sheet: Sheet, tp: int) -> tuple[PoolSplit | None, list[str]]:
        """vLLM's pool split on ``card`` (None without a card) and the notes on it.

        Non-PyTorch memory inside the budget follows ``stack.vllm`` (``versions.VllmRules``):
        V0 subtracts the declared CUDA context and NCCL buffers; V1 takes its baseline after the
        CUDA context, so only what appears later (declared from logs), NCCL's buffers and vLLM's
        custom all-reduce buffers (``vllm_pool.custom_all_reduce_bytes``) count.
        """
        notes = []
        version = sheet.stack.vllm
        rules = vllm_rules(version)
        first = VLLM_KV_CACHE_DTYPES.get(inference.kv_cache_dtype)
        if first and version_tuple(VLLM_AUTO if version == "auto" else version) \
                < version_tuple(first):
            notes.append(f"kv_cache_dtype {inference.kv_cache_dtype}: vLLM's engine arguments "
                         f"list it from {first} on, not in {version} (compatibility)")
        if card is None:
            notes.append("engine vllm without a card: vLLM's pool split (budget, KV blocks, "
                         "maximum concurrency) needs --card")
            return None, notes
        rope = rotary_cache_bytes(facts, DTYPE_BYTES[compute_dtype])
        # the prefill item of a vLLM sheet is the profile run's activation peak (prefill_working)
        profile = next(it for it in items if it.name == "prefill_working")
        non_torch = [it for it in items
                     if it.non_torch and it.phases and it.name != "allocator_slack"]
        unknown = [it.name for it in non_torch if it.bytes is None]
        nt = sum(it.bytes for it in non_torch if it.bytes is not None)
        if rules.non_torch_after_baseline_bytes is not None:
            link = within_node_link(None, card)
            ar = custom_all_reduce_bytes(tp, nvlink=link.link == "nvlink")
            nt = (rules.non_torch_after_baseline_bytes + ar
                  + sum(it.bytes or 0 for it in non_torch if it.name != "cuda_context"))
            notes.append(
                f"vLLM {rules.engine_core} (stack.vllm {version}"
                + (f" = {VLLM_AUTO}" if version == "auto" else "") + "): non-PyTorch memory "
                f"inside the budget {nt} B = after-baseline {rules.non_torch_after_baseline_bytes}"
                f" B (declared from vLLM 0.11.0 logs: 0.13 GiB on one H100) + NCCL buffers + "
                f"custom all-reduce {ar} B ({CUSTOM_ALL_REDUCE_SOURCE}); the CUDA context is "
                "created before vLLM's baseline and lies outside the budget")
        total, src = cuda_total(card)
        split = vllm_split(total_bytes=total, total_source=src,
                           utilization=inference.gpu_memory_utilization,
                           weights_bytes=weights_bytes + rope, activation_bytes=profile.bytes,
                           non_torch_bytes=nt, layout=layout, block_size=inference.block_size,
                           tokens_per_sequence=inference.tokens_per_sequence,
                           sequences=sequences,
                           groups=kv_cache_groups(facts) if rules.hybrid_groups else 1,
                           command=self.command(sheet, tp),
                           sliding_schedule_tokens=(inference.max_num_batched_tokens
                                                    if rules.engine_core == "V1" else None))
        split = replace(split, log_lines=_log_lines(split, rules.engine_core),
                        settings=(("stack.vllm", version if version != "auto" else VLLM_AUTO),
                                  ("engine_core", rules.engine_core)))
        notes.append(f"{profile.formula}; rotary cos/sin cache {rope} B")
        if sequences > inference.max_num_seqs:
            notes.append(f"vLLM schedules at most max_num_seqs {inference.max_num_seqs} "
                         f"sequences at once; the {sequences} required on this GPU would queue "
                         "(raise --max-num-seqs)")
        if unknown:
            notes.append("vLLM KV figures are upper bounds: non-PyTorch items of unknown size ("
                         + ", ".join(unknown) + ") are not subtracted")
        notes.append("CUDA graph capture memory is not in this split (recent vLLM versions "
                     "subtract an estimate of it from the KV pool, older ones allocate it after): "
                     "measure it, or run with enforce_eager")
        if rules.non_torch_after_baseline_bytes is None:
            notes.append("vLLM takes its memory baseline after creating the CUDA context, so "
                         "only the non-PyTorch memory that appears later (logged 0.25-0.35 GiB "
                         "on RTX 3090/4090) is inside its budget; for V0 gpusizer subtracts its "
                         "whole declared CUDA context there, which can understate the KV pool "
                         "by up to a few hundred MiB")
        context = sum(it.bytes or 0 for it in non_torch if it.name == "cuda_context")
        requested = split.budget_bytes
        if requested > total - context:
            notes.append(f"gpu_memory_utilization {inference.gpu_memory_utilization} requests "
                         f"{requested} B but only about {total - context} B are free after the "
                         "CUDA context: vLLM V1 refuses to start when free memory at start-up is "
                         "below the request (lower gpu_memory_utilization)")
        return split, notes

    def command(self, sheet: Sheet, tp: int) -> str:
        """``vllm serve MODEL …``: the arguments this sizing assumed (vLLM's ``EngineArgs``
        names; ``--max-model-len`` is prompt + new tokens, CONTRACT.md)."""
        inf = sheet.inference
        assert inf is not None   # a pool exists only for an inference block
        model = sheet.model.id or sheet.model.path or "MODEL"
        kv = inf.kv_cache_dtype if inf.kv_cache_dtype.startswith("fp8") else "auto"
        parts = ["vllm serve", model]
        if sheet.model.revision != "main":
            parts += ["--revision", sheet.model.revision]
        parts += ["--max-model-len", str(inf.tokens_per_sequence),
                  "--max-num-seqs", str(inf.max_num_seqs),
                  "--max-num-batched-tokens", str(batched_tokens(inf, sheet.stack.vllm)[0]),
                  "--gpu-memory-utilization", f"{inf.gpu_memory_utilization:g}",
                  "--tensor-parallel-size", str(tp),
                  "--block-size", str(inf.block_size),
                  "--kv-cache-dtype", kv]
        return " ".join(parts)

    def pool_items(self, items: list[Item], pool: PoolSplit, *, facts: ModelFacts,
                   compute_dtype: str, kv_needed: int) -> list[Item]:
        """With a card, vLLM preallocates its whole KV pool at start: the ``kv_cache`` item
        becomes the pool (live from load), and the rotary cos/sin cache is an item of its own."""
        out = []
        for it in items:
            if it.name == "kv_cache":
                size = max(0, pool.kv_blocks * pool.block_bytes)
                out.append(Item("kv_cache", size, "estimated", ("load", "prefill", "decode"),
                                it.source + f"; {self.label} preallocates the whole pool at "
                                f"start ({self.pool_source})",
                                f"pool {pool.kv_blocks} blocks × {pool.block_bytes} B = "
                                f"{pool.kv_tokens} tokens (max concurrency "
                                f"{pool.max_concurrency}); the workload needs {kv_needed} B: "
                                f"{it.formula}"))
            else:
                out.append(it)
        rope = pool.weights_bytes - sum(i.bytes for i in items
                                        if i.name in ("weights", "quantization_metadata"))
        if rope:
            out.insert(1, Item("rotary_cache", rope, "estimated", ("load", "prefill", "decode"),
                               "vLLM RotaryEmbedding._compute_cos_sin_cache: "
                               "max_position_embeddings × rotary_dim values in the model dtype",
                               f"{facts.architecture.context_window_tokens} positions × rotary dim × "
                               f"{DTYPE_BYTES[compute_dtype]} B = {rope} B"))
        return out

    def pool_condition(self, pool: PoolSplit) -> PoolCondition:
        """vLLM refuses to start when the weights exceed its budget or the pool holds less than
        one sequence of ``max_model_len`` tokens; it serves the workload without queueing when
        the pool holds every required sequence at once."""
        budget = _budget_words(pool)
        if pool.weights_bytes > pool.budget_bytes:
            return PoolCondition(False, False, f"vLLM: weights {fmt_bytes(pool.weights_bytes)} "
                                 f"exceed its pool budget {budget}: vLLM refuses to start")
        if pool.starts is False:
            used = [("weights", pool.weights_bytes), ("activation", pool.activation_bytes),
                    ("non-torch", pool.non_torch_bytes)]
            return PoolCondition(False, False, f"vLLM: the pool budget {budget} − " + " − ".join(
                f"{n} {fmt_gib(b)} GiB" for n, b in used if b is not None)
                + f" leaves {pool.kv_tokens} KV tokens < one sequence of "
                f"{pool.tokens_per_sequence} tokens: vLLM refuses to start ("
                + _refusal_words(pool) + ")")
        need = pool.required_sequences
        holds = pool.sequences_held is not None and pool.sequences_held >= need
        return PoolCondition(True, holds, (
            f"vLLM pool {fmt_bytes(pool.budget_bytes)} per GPU leaves a KV cache of "
            f"{fmt_bytes(pool.kv_cache_bytes)} = {pool.kv_tokens} tokens: it holds "
            f"{pool.sequences_held} whole sequence(s) of {pool.tokens_per_sequence} tokens (max "
            f"concurrency {pool.max_concurrency}) {'>=' if holds else '<'} {need} required"
            + ("" if holds else " (the rest would queue)")))


def _refusal_words(pool: PoolSplit) -> str:
    """vLLM's own words when one sequence of ``max_model_len`` does not fit its KV pool, with
    this split's figures: V1 ``v1/core/kv_cache_utils.py`` check_enough_kv_cache_memory, V0
    ``worker/worker.py`` raise_if_cache_size_invalid."""
    if dict(pool.settings).get("engine_core") == "V0":
        return (f"\"The model's max seq len ({pool.tokens_per_sequence}) is larger than the "
                f"maximum number of tokens that can be stored in KV cache ({pool.kv_tokens}). "
                "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                "initializing the engine.\"")
    if pool.required_kv_bytes:
        need = pool.required_kv_bytes / max(1, pool.required_sequences) / 2**30
    else:   # one sequence in whole blocks of this pool
        block_tokens = (pool.kv_tokens or 0) // max(1, pool.kv_blocks or 0) or 1
        need = -(-pool.tokens_per_sequence // block_tokens) * pool.block_bytes / 2**30
    avail = max(0, pool.kv_cache_bytes or 0) / 2**30
    return (f"\"To serve at least one request with the models's max seq len "
            f"({pool.tokens_per_sequence}), ({need:.2f} GiB KV cache is needed, which is larger "
            f"than the available KV cache memory ({avail:.2f} GiB). Based on the available "
            f"memory, the estimated maximum model length is {pool.kv_tokens}. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
            "engine.\"")


def _log_lines(split: PoolSplit, engine_core: str) -> tuple[str, ...]:
    """The lines vLLM prints for ``split`` (V1: ``gpu_worker.py`` "Available KV cache memory",
    ``kv_cache_utils._report_kv_cache_config``; V0: ``executor_base`` "# GPU blocks"), GiB as
    vLLM prints them (2^30 B, two decimals)."""
    lines = [f"Model loading took {split.weights_bytes / 2**30:.4f} GiB"]
    if engine_core == "V1":
        lines += [f"Available KV cache memory: {(split.kv_cache_bytes or 0) / 2**30:.2f} GiB",
                  f"GPU KV cache size: {split.kv_tokens:,} tokens"]
    else:
        lines.append(f"# GPU blocks: {split.kv_blocks}")
    lines.append(f"Maximum concurrency for {split.tokens_per_sequence:,} tokens per request: "
                 f"{split.max_concurrency:.2f}x")
    return tuple(lines)


def _budget_words(pool: PoolSplit) -> str:
    """``13.27 GiB (14 253 922 713 B) (0.90 × total 14.75 GiB)``: the pool budget vLLM takes
    (vllm_pool), in GiB with its exact bytes."""
    util = pool.budget_bytes / pool.total_bytes if pool.total_bytes else 0.0
    return (f"{fmt_bytes(pool.budget_bytes)} ({util:.2f} × total "
            f"{fmt_gib(pool.total_bytes)} GiB)")


VLLM = VllmEngine()
