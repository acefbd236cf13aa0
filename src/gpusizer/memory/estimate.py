"""Assemble the memory estimate of one sheet: items, phases, peaks, envelopes — per GPU.

Arithmetic only (provenance ``estimated`` or ``declared``); no torch import. With a card, the
card's rules decide what really runs (kernels, dtypes) and, for ``engine: vllm``, how vLLM splits
its pool. Without an ``inference`` block only "weights only" and the indicative envelope are
computed (the seed's calculator, R5/R7).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..catalog.types import Card
from ..errors import ModelError, SheetError
from ..formats import FORMATS, QuantParams, compute_dtype, quant_params, weight_format
from ..model.facts import QUANTIZABLE_ROLES, ModelFacts
from ..sheet import Sheet
from .card_rules import NO_CARD, CardRules, card_rules
from .items import INFERENCE_PHASES, TRAINING_PHASES, Item, MemoryEstimate, phase_peaks
from .kv_cache import kv_bytes, kv_layout, prefill_kv_bytes
from .non_torch import (allocator_slack_item, cublas_workspace_item, cuda_context_item,
                        nccl_item)
from .placement import Share, inference_share
from .training import training_items
from .vllm import profile_activation_bytes, rotary_cache_bytes, vllm_split
from .working_memory import forward_working_bytes
from .weights import DTYPE_BYTES, dense_bytes, resident_matrices, weight_breakdown

__all__ = ["WeightPlan", "plan_weights", "estimate_memory", "sheet_quant_params"]

_WEIGHTS_SOURCE = ("R5 dense volume = parameters × bits / 8; per-format layout in "
                   "gpusizer/formats (bitsandbytes, GPTQ, AWQ, OCP MX, fp8 block scales, NVFP4)")


def _names(flag: str) -> str:
    return ", ".join(n for n, r in FORMATS.items() if getattr(r, flag))


@dataclass(frozen=True)
class WeightPlan:
    """Which weight format runs and whether it is produced at load.

    Attributes:
        stored: the checkpoint's stored format (None for a bare parameter count).
        runs: the format the weights have on the GPU after load.
        compute_dtype: activations / KV dtype.
        converted: True when the load converts ``stored`` → ``runs`` (a transient item).
        rules: the card rules applied.
    """

    stored: str | None
    runs: str
    compute_dtype: str
    converted: bool
    rules: CardRules


def plan_weights(sheet: Sheet, facts: ModelFacts | None, card: Card | None) -> WeightPlan:
    """Decide the stored and running weight formats.

    Raises:
        ModelError: ``weights: auto`` with a checkpoint whose stored format is unknown.
        SheetError: a format that cannot be produced at load (GPTQ, AWQ) from a plain checkpoint.
    """
    q = sheet.quantization
    stored = facts.stored_format if facts else None
    if facts is not None and q.prequantized is True and sheet.weights != "auto":
        stored = sheet.weights  # the user says the checkpoint already stores `weights`
    wanted = sheet.weights if sheet.weights != "auto" else stored
    if wanted is None:
        qc = facts.quantization_config if facts else None
        if qc:
            shown = {k: qc[k] for k in ("quant_method", "bits", "load_in_4bit", "load_in_8bit",
                                        "fmt", "quant_algo") if k in qc}
            raise ModelError(f"config.json's quantization_config {shown} is not a format "
                             f"gpusizer sizes ({_names('packed_at_rest')}): give `weights` and "
                             "quantization.prequantized: true if one of them describes it",
                             field="weights", value="auto")
        raise ModelError("the checkpoint's stored format is unknown (config.json has no "
                         "torch_dtype/dtype nor quantization_config): give `weights` explicitly",
                         field="weights", value="auto")
    runs_wanted = weight_format(wanted)
    converted = facts is not None and stored is not None and wanted != stored
    if converted and FORMATS[stored].packed_at_rest and not (
            FORMATS[stored].dequantizable and runs_wanted.dense):
        raise SheetError(f"the checkpoint already stores {stored}: it cannot be converted to "
                         f"{wanted} while loading (transformers dequantizes only "
                         f"{_names('dequantizable').replace(', ', ' and ')} checkpoints at load); "
                         f"use weights: auto or a {wanted} checkpoint",
                         field="weights", value=wanted)
    if converted and not runs_wanted.produced_at_load:
        raise SheetError(f"{wanted} needs an offline calibration pass and cannot be produced while "
                         f"loading a {stored} checkpoint: point model at a pre-quantized {wanted} "
                         "checkpoint (or set quantization.prequantized: true if it is one)",
                         field="weights", value=wanted)
    if facts is not None and stored is None and not runs_wanted.produced_at_load \
            and q.prequantized is not True:
        raise SheetError(f"{wanted} cannot be produced at load; set quantization.prequantized: "
                         "true if the checkpoint already stores it", field="weights", value=wanted)
    engine = sheet.inference.engine if sheet.inference else "transformers"
    refused = runs_wanted.engine_refusal(engine)
    if refused and (sheet.inference is not None or sheet.task != "inference"):
        raise SheetError(f"{wanted} with engine {engine}: {refused}", field="weights",
                         value=wanted)
    compute = compute_dtype(wanted, q.compute_dtype)
    cc = None
    if card is not None:
        cc = card.compute_capability.value
        cc = tuple(cc) if cc is not None else None
    rules = card_rules(card=card.name if card else None, compute_capability=cc, weights=wanted,
                       compute_dtype=compute, attention=sheet.attention, engine=engine)
    if rules.refusal is not None:
        raise SheetError(f"{wanted} on the {card.name}: {rules.refusal}", field="weights",
                         value=wanted)
    runs = rules.weights
    converted = facts is not None and stored is not None and runs != stored
    return WeightPlan(stored, runs, rules.compute_dtype, converted, rules)


def sheet_quant_params(sheet: Sheet, facts: ModelFacts | None, runs: str) -> QuantParams:
    """Group size (GPTQ/AWQ), double quantization (bitsandbytes) and fp8 block of the running
    format: the pre-quantized checkpoint's own ``quantization_config`` wins over the sheet's
    values, which win over ``gpusizer.formats``' defaults.

    Raises:
        SheetError: the sheet sets a value the checkpoint contradicts.
    """
    return quant_params(sheet.quantization, facts.quant if facts is not None else None, runs,
                        stored_format=facts.stored_format if facts is not None else None)


def _weights_items(sheet: Sheet, facts: ModelFacts | None, plan: WeightPlan, share: Share,
                   phases: tuple[str, ...]) -> tuple[list[Item], int, list[str]]:
    notes: list[str] = []
    rec = weight_format(plan.runs)
    if facts is None:
        params = sheet.model.parameters
        assert params is not None
        b = dense_bytes(params, plan.runs)
        per_gpu = int(Fraction(b) * share.weight_fraction)
        item = Item("weights", per_gpu, "estimated", phases, _WEIGHTS_SOURCE,
                    f"{params} parameters × {rec.bits} bit / 8 = {b} B"
                    + (f" × {share.weight_fraction} per GPU" if share.weight_fraction != 1 else ""))
        notes.append("bare parameter count: quantization metadata (scales, zero points, absmax), "
                     "modules kept in another format (embeddings, lm_head, norms), working memory, "
                     "temporary load buffers and memory outside the process are not counted (R5)")
        if rec.bits == 4:
            notes.append("4-bit row is theoretical: real 4-bit formats carry metadata and keep some "
                         "layers in other formats, so it is not a guaranteed peak (R7)")
        return [item], per_gpu, notes
    engine = sheet.inference.engine if sheet.inference else "transformers"
    bd = weight_breakdown(facts, plan.runs, compute_dtype=plan.compute_dtype,
                          quant=sheet_quant_params(sheet, facts, plan.runs), engine=engine)
    notes += bd.notes
    stored_roles = rec.packs(None, facts.quant) or ()
    if rec.unpacked_experts_note and "expert_linear" in stored_roles \
            and "expert_linear" not in (rec.packs(engine, facts.quant) or ()) \
            and facts.parameters_by_role("expert_linear"):
        notes.append(rec.unpacked_experts_note.format(dtype=plan.compute_dtype))
    frac = share.weight_fraction
    split = "" if frac == 1 else f" × {frac} on this GPU ({share.note})"
    weights = int(Fraction(bd.packed_bytes + bd.kept_bytes) * frac)
    items = [Item("weights", weights, "estimated", phases, _WEIGHTS_SOURCE,
                  f"{plan.runs}: {bd.formula}{split}")]
    meta = int(Fraction(bd.metadata_bytes) * frac)
    if bd.metadata_bytes:
        items.append(Item("quantization_metadata", meta, "estimated", phases, _WEIGHTS_SOURCE,
                          bd.metadata_formula + split))
    if plan.converted:
        largest = max((g.largest_matrix for g in facts.params if g.role in QUANTIZABLE_ROLES),
                      default=0)
        src_fmt = plan.stored or "stored"
        src_bytes = DTYPE_BYTES.get(src_fmt, 2)
        source = ("transformers loads each tensor in its stored dtype onto the GPU, then converts "
                  "it (HfQuantizer.create_quantized_param / param_needs_quantization)")
        if largest:
            items.append(Item("load_conversion_transient", largest * src_bytes, "estimated",
                              ("load",), source,
                              f"largest converted tensor {largest} values × {src_bytes} B "
                              f"({src_fmt})"))
        else:
            items.append(Item("load_conversion_transient", None, "estimated", ("load",), source,
                              unknown_reason="the size of the largest converted tensor is not "
                              "known for this model"))
        notes.append(f"weights converted at load: {src_fmt} → {plan.runs}")
    if rec.estimate_note:
        notes.append(rec.estimate_note)
    return items, weights + (meta if bd.metadata_bytes else 0), notes


def _kv_dtype_bytes(sheet: Sheet, plan: WeightPlan) -> tuple[int, str]:
    assert sheet.inference is not None
    kv = sheet.inference.kv_cache_dtype
    dtype = plan.compute_dtype if kv == "auto" else kv
    if dtype == "fp8":
        return 1, "fp8"
    return DTYPE_BYTES[dtype], dtype


def _inference_items(sheet: Sheet, facts: ModelFacts, plan: WeightPlan, share: Share,
                     card: Card | None) -> tuple[list[Item], int, object]:
    inf = sheet.inference
    assert inf is not None
    b = DTYPE_BYTES[plan.compute_dtype]
    kvb, kv_dtype = _kv_dtype_bytes(sheet, plan)
    engine = inf.engine
    layout = kv_layout(facts, dtype_bytes=kvb, engine=engine, tp=share.tp)
    seqs = share.sequences
    tokens = inf.tokens_per_sequence
    round_to = inf.block_size if engine == "vllm" else 1
    lf = share.layer_fraction
    kv_full = int(Fraction(kv_bytes(layout, tokens=tokens, sequences=seqs, round_to=round_to)) * lf)
    if engine == "transformers":
        prompt_kv = prefill_kv_bytes(layout, tokens=inf.prompt_tokens, sequences=seqs)
    else:
        prompt_kv = kv_bytes(layout, tokens=inf.prompt_tokens, sequences=seqs, round_to=round_to)
    kv_prompt = int(Fraction(prompt_kv) * lf)
    static = engine == "transformers" and inf.cache == "static"
    kv_src = ("KV cache = layers × 2 × kv_heads × head_dim × tokens × sequences × bytes "
              "(gpusizer/memory/kv_cache.py: transformers cache_utils, vLLM paged blocks, "
              "DeepSeek-V2 §2.1.2 for MLA)")
    kv_text = (f"{layout.description}; {seqs} sequence(s) × {tokens} tokens (prompt "
               f"{inf.prompt_tokens} + new {inf.new_tokens}) × {kvb} B ({kv_dtype})"
               + (f", blocks of {round_to} tokens" if round_to > 1 else "")
               + (f" × {lf} of the layers on this GPU" if lf != 1 else ""))
    phase_bytes = {} if static else {"prefill": kv_prompt}
    if not static and kv_prompt > kv_full:
        # sliding layers hold the whole prompt at the end of prefill (a view of it), more than
        # the window they keep while decoding: the item's size is its largest
        kv_full_item = kv_prompt
        phase_bytes = {"decode": kv_full}
    else:
        kv_full_item = kv_full
    items = [Item("kv_cache", kv_full_item, "estimated", ("prefill", "decode"), kv_src,
                  kv_text + (" (static cache: allocated whole before prefill)" if static else ""),
                  phase_bytes=phase_bytes)]
    kernel = plan.rules.attention
    if engine == "vllm":
        kernel = "flash"
    wm_src = ("largest live set in one decoder layer, or final hidden + logits "
              "(gpusizer/memory/working_memory.py: transformers LlamaDecoderLayer order; "
              "Dao et al. 2022 for no S×S matrix with flash/memory-efficient kernels)")
    if engine == "vllm":
        # vLLM schedules at most max_num_batched_tokens per step (chunked prefill), so the prefill
        # working set is the profile run's (vLLM sizes its pool on exactly that run).
        act, act_text = profile_activation_bytes(
            facts, max_num_batched_tokens=inf.max_num_batched_tokens,
            max_num_seqs=inf.max_num_seqs, dtype_bytes=b, tp=share.tp, weights_format=plan.runs)
        items.append(Item("prefill_working", act, "estimated", ("prefill",),
                          wm_src + "; vLLM profile run (Worker.determine_available_memory)",
                          "vLLM profile run: " + act_text))
    else:
        prefill = forward_working_bytes(facts, batch=seqs, q_tokens=inf.prompt_tokens,
                                        kv_tokens=inf.prompt_tokens, dtype_bytes=b, kernel=kernel,
                                        logits_positions=(inf.prompt_tokens if inf.logits == "all"
                                                          else 1), tp=share.tp,
                                        weights_format=plan.runs)
        items.append(Item("prefill_working", prefill.total_bytes, "estimated", ("prefill",),
                          wm_src, f"kernel {kernel}; " + prefill.formula))
    decode = forward_working_bytes(facts, batch=seqs, q_tokens=1, kv_tokens=tokens, dtype_bytes=b,
                                   kernel=kernel, logits_positions=1, tp=share.tp, engine=engine,
                                   weights_format=plan.runs)
    items.append(Item("decode_working", decode.total_bytes, "estimated", ("decode",), wm_src,
                      f"kernel {kernel}; " + decode.formula))
    if engine == "transformers" and not static:
        layers_here = max(1, -(-facts.num_layers * lf.numerator // lf.denominator))
        per_layer = kv_full // layers_here
        items.append(Item("kv_cache_growth_transient", per_layer // 2, "estimated", ("decode",),
                          "transformers DynamicLayer.update grows K and V with torch.cat: the old "
                          "and the new tensor of one layer coexist briefly",
                          f"one layer's K (or V) at full length: {kv_full} / {layers_here} "
                          "layers on this GPU / 2"))
    return items, kv_full, layout


def _weight_tensor_sizes(facts: ModelFacts | None, plan: WeightPlan, share: Share,
                         engine: str) -> list[tuple[int, int]]:
    """``(count, bytes)`` of the resident weight tensors on this GPU: one per matrix, routed
    experts stacked per layer; tensor parallelism divides each tensor."""
    if facts is None:
        return []
    out = []
    for role, n, r, c, per_elem in resident_matrices(facts, plan.runs, engine=engine,
                                                     compute_dtype=plan.compute_dtype):
        # Routed experts are stored as one stacked tensor per layer and projection (transformers
        # v5 grouped experts, vLLM FusedMoE w13/w2), not one tensor per expert.
        stack = facts.moe.num_experts if (role == "expert_linear" and facts.moe) else 1
        size = int(stack * r * c * per_elem / share.tp)
        count = int(-(-Fraction(max(1, n // stack)) * share.layer_fraction // 1))
        out.append((count, size))
    return out


def estimate_memory(sheet: Sheet, facts: ModelFacts | None, *, card: Card | None = None) -> MemoryEstimate:
    """Size the sheet's memory per GPU, item by item and phase by phase.

    Args:
        sheet: the validated workload sheet.
        facts: the model's facts, or None for a bare ``model.parameters`` count.
        card: a card whose GPU rules apply (kernels, dtypes; vLLM's pool), or None.

    Returns:
        A :class:`~gpusizer.memory.items.MemoryEstimate` (all bytes per GPU, integers).

    Raises:
        SheetError: inconsistent sheet (length beyond the context window, strategy for the task).
        ModelError: a fact the sizing needs is unknown.
    """
    inf = sheet.inference
    if facts is not None and facts.context_window_tokens is not None:
        need = inf.tokens_per_sequence if inf else (sheet.training.sequence_length
                                                    if sheet.training else 0)
        if need > facts.context_window_tokens:
            what = (f"prompt_tokens + new_tokens = {inf.prompt_tokens} + {inf.new_tokens} = {need}"
                    if inf else f"{need}")
            raise SheetError(f"{what} tokens exceeds the model's context window "
                             f"max_position_embeddings = {facts.context_window_tokens} tokens",
                             field="inference" if inf else "training.sequence_length", value=need)
    plan = plan_weights(sheet, facts, card)
    notes = list(plan.rules.changes)
    if card is None:
        notes.append(NO_CARD)
    concurrency = inf.concurrency if inf else 1
    if sheet.task == "inference":
        share = inference_share(facts, strategy=sheet.placement.strategy,
                                gpus=sheet.placement.gpus, concurrency=concurrency,
                                engine=inf.engine if inf else "transformers")
    else:
        share = inference_share(facts, strategy="single", gpus=1, concurrency=1)
    phase_names = INFERENCE_PHASES if sheet.task == "inference" else TRAINING_PHASES
    if inf is None and sheet.task == "inference":
        w_items, weights_bytes, wnotes = _weights_items(sheet, facts, plan, share, ("load",))
        notes += wnotes
        notes.append("no inference block: only 'weights only' and the indicative envelope are "
                     "computed (no KV cache, no phase past load)")
        return MemoryEstimate(weights_bytes, sheet.reserve, weights_bytes + sheet.reserve,
                              None, None, None, weights_bytes, tuple(w_items), (), None,
                              tuple(notes), card.name if card else None, sheet.placement.gpus,
                              plan.runs, plan.stored)
    w_items, weights_bytes, wnotes = _weights_items(sheet, facts, plan, share, phase_names)
    notes += wnotes
    if inf is not None and inf.engine == "transformers" and inf.kv_cache_dtype == "fp8":
        notes.append("kv_cache_dtype fp8 with transformers: sized at 1 byte per value as asked, but "
                     "transformers ships no fp8 KV cache (its quantized caches are quanto/HQQ "
                     "int2/int4): confirm the cache implementation (compatibility)")
    items = list(w_items)
    cc = tuple(card.compute_capability.value) if card and card.compute_capability.value else None
    all_phases = phase_names
    lower = weights_bytes
    vsplit = None
    summary = None
    if sheet.task != "inference":
        if facts is None:
            raise SheetError("training memory needs the architecture (layers, hidden size, "
                             "vocabulary): give model.id or model.path, not a bare parameter "
                             "count", field="model.parameters", value=sheet.model.parameters)
        t_items, t_notes, summary = training_items(
            sheet, facts, runs=plan.runs, compute_dtype=plan.compute_dtype,
            kernel=plan.rules.attention, weight_items=items, phases=phase_names)
        items = t_items
        notes += t_notes
        weights_bytes = sum(it.bytes or 0 for it in items
                            if it.name in ("weights", "quantization_metadata"))
        # certain from the first update on: parameters, their gradients and optimizer states
        lower = sum(it.bytes or 0 for it in items if not it.non_torch and it.name in (
            "weights", "quantization_metadata", "lora_adapters", "gradients", "optimizer_states"))
        items.append(cublas_workspace_item(cc, ("forward", "backward", "validation")))
    elif facts is None:
        reason = ("a bare parameter count has no architecture (layers, KV heads, head_dim): give "
                  "model.id or model.path to size it")
        items.append(Item("kv_cache", None, "estimated", ("prefill", "decode"), "R8",
                          unknown_reason=reason))
        items.append(Item("prefill_working", None, "estimated", ("prefill",), "R8",
                          unknown_reason=reason))
    else:
        inf_items, kv_full, layout = _inference_items(sheet, facts, plan, share, card)
        items += inf_items
        lower = weights_bytes + kv_full
        items.append(cublas_workspace_item(cc, ("prefill", "decode")))
    items.append(cuda_context_item(all_phases))
    if sheet.task == "inference":
        items.append(nccl_item(share.gpus, all_phases, share.strategy))
    else:
        items.append(nccl_item(sheet.placement.gpus, all_phases, sheet.placement.strategy,
                               training=True))
    engine = inf.engine if inf else "transformers"
    items.append(allocator_slack_item(_weight_tensor_sizes(facts, plan, share, engine),
                                      all_phases))
    if inf is not None and inf.engine == "vllm" and facts is not None:
        vsplit, vnotes = _vllm_block(sheet, facts, plan, share, card, weights_bytes, items,
                                     layout)
        notes += vnotes
        if vsplit is not None:
            items = _vllm_pool_items(items, vsplit, facts, plan, lower - weights_bytes)
    item_tuple = tuple(items)
    phases = phase_peaks(item_tuple, all_phases)
    peak = None if any(p.peak_bytes is None for p in phases) else max(p.peak_bytes for p in phases)
    device_peak = (None if any(p.device_peak_bytes is None for p in phases)
                   else max(p.device_peak_bytes for p in phases))
    live = [it for it in item_tuple if it.phases]
    envelope = None if any(it.bytes is None for it in live) else sum(it.bytes for it in live)
    if vsplit is not None:
        # CONTRACT.md: vLLM takes its whole pool at start; peak_bytes is the budget.
        peak = device_peak = vsplit.budget_bytes
        notes.append("vLLM: peak_bytes and device_peak_bytes are vLLM's budget (total × "
                     "gpu_memory_utilization), which holds weights, the KV pool, the activation "
                     "peak and non-PyTorch memory; the phase rows show the allocated parts")
    return MemoryEstimate(weights_bytes, sheet.reserve, weights_bytes + sheet.reserve, peak,
                          device_peak, envelope, lower, item_tuple, phases, vsplit, tuple(notes),
                          card.name if card else None,
                          share.gpus if sheet.task == "inference" else sheet.placement.gpus,
                          plan.runs, plan.stored, summary)


def _vllm_pool_items(items: list[Item], v, facts: ModelFacts, plan: WeightPlan,
                     kv_needed: int) -> list[Item]:
    """With a card, vLLM preallocates its whole KV pool at start: the ``kv_cache`` item becomes
    the pool (live from load), and the rotary cos/sin cache is an item of its own."""
    out = []
    for it in items:
        if it.name == "kv_cache":
            pool = max(0, v.kv_blocks * v.block_bytes)
            out.append(Item("kv_cache", pool, "estimated", ("load", "prefill", "decode"),
                            it.source + "; vLLM preallocates the whole pool at start "
                            "(Worker.determine_available_memory)",
                            f"pool {v.kv_blocks} blocks × {v.block_bytes} B = {v.kv_tokens} "
                            f"tokens (max concurrency {v.max_concurrency}); the workload needs "
                            f"{kv_needed} B: {it.formula}"))
        else:
            out.append(it)
    rope = v.weights_bytes - sum(i.bytes for i in items
                                 if i.name in ("weights", "quantization_metadata"))
    if rope:
        out.insert(1, Item("rotary_cache", rope, "estimated", ("load", "prefill", "decode"),
                           "vLLM RotaryEmbedding._compute_cos_sin_cache: max_position_embeddings "
                           "× rotary_dim values in the model dtype",
                           f"{facts.context_window_tokens} positions × rotary dim × "
                           f"{DTYPE_BYTES[plan.compute_dtype]} B = {rope} B"))
    return out


def _vllm_block(sheet, facts, plan, share, card, weights_bytes, items, layout):
    inf = sheet.inference
    notes = []
    if card is None:
        notes.append("engine vllm without a card: vLLM's pool split (budget, KV blocks, maximum "
                     "concurrency) needs --card")
        return None, notes
    rope = rotary_cache_bytes(facts, DTYPE_BYTES[plan.compute_dtype])
    # the prefill item of a vLLM sheet is the profile run's activation peak (_inference_items)
    profile = next(it for it in items if it.name == "prefill_working")
    non_torch = [it for it in items if it.non_torch and it.phases and it.name != "allocator_slack"]
    unknown = [it.name for it in non_torch if it.bytes is None]
    nt = sum(it.bytes for it in non_torch if it.bytes is not None)
    cuda_total = card.cuda_total_bytes.value
    if cuda_total:
        total, src = int(cuda_total), f"CUDA-visible total from the card table ({card.cuda_total_bytes.source})"
    else:
        total = int(card.device_bytes.value)
        src = ("nvidia-smi total from the card table (the CUDA-visible total, which vLLM uses, is "
               "not known for this card and is usually a few hundred MiB lower)")
    split = vllm_split(total_bytes=total, total_source=src, utilization=inf.gpu_memory_utilization,
                       weights_bytes=weights_bytes + rope, activation_bytes=profile.bytes,
                       non_torch_bytes=nt, layout=layout, block_size=inf.block_size,
                       tokens_per_sequence=inf.tokens_per_sequence)
    notes.append(f"{profile.formula}; rotary cos/sin cache {rope} B")
    if unknown:
        notes.append("vLLM KV figures are upper bounds: non-PyTorch items of unknown size ("
                     + ", ".join(unknown) + ") are not subtracted")
    notes.append("CUDA graph capture memory is not in this split (recent vLLM versions subtract an "
                 "estimate of it from the KV pool, older ones allocate it after): measure it, or "
                 "run with enforce_eager")
    notes.append("vLLM takes its memory baseline after creating the CUDA context, so only the "
                 "non-PyTorch memory that appears later (logged 0.25-0.35 GiB on RTX 3090/4090) "
                 "is inside its budget; gpusizer subtracts its whole declared CUDA context there, "
                 "which understates the KV pool by up to a few hundred MiB")
    context = sum(it.bytes or 0 for it in non_torch if it.name == "cuda_context")
    requested = split.budget_bytes
    if requested > total - context:
        notes.append(f"gpu_memory_utilization {inf.gpu_memory_utilization} requests {requested} B "
                     f"but only about {total - context} B are free after the CUDA context: vLLM V1 "
                     "refuses to start when free memory at start-up is below the request "
                     "(lower gpu_memory_utilization)")
    return split, notes
