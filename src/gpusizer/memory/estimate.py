"""Assemble the memory estimate of one sheet: items, phases, peaks, envelopes — per GPU.

Arithmetic only (provenance ``estimated`` or ``declared``); no torch import. With a card, the
card's rules decide what really runs (kernels, dtypes) and, for a serving engine, how it splits
the pool it takes at start (``engines``). Without an ``inference`` block only "weights only" and
the indicative envelope are computed (the seed's calculator, R5/R7).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..catalog.types import Card
from ..errors import ModelError, SheetError
from ..formats import (FORMATS, Matrices, QuantParams, compute_dtype, quant_params,
                       weight_format)
from ..model.config_only import ConfigOnlyFacts
from ..model.facts import QUANTIZABLE_ROLES, ModelFacts
from ..sheet import Sheet
from .card_rules import NO_CARD, CardRules, card_rules, describe_card_rules
from .engines import TRAINING_ENGINE, Engine, engine_of
from .items import ITEM_KINDS, INFERENCE_PHASES, TRAINING_PHASES, Item, MemoryEstimate, Note
from .kv_cache import kv_bytes
from .non_torch import cublas_workspace_item, cuda_context_item, nccl_item
from .placement import Share, inference_share
from .recurrent_state import recurrent_state_bytes, vllm_recurrent_state_bytes
from .reserved import allocator_slack_item, kv_growth_fragmentation_item
from .vision import image_tokens_per_request
from .training import TrainingSummary, training_items
from .training.bare_count import bare_count_training_items
from .training.deepspeed_reference import deepspeed_reference
from .training.host_ram import host_ram
from .working_memory import WORKING_SOURCE, forward_working_bytes, int4_kernel_items
from .training.trainable import trainable
from ..stack import TRANSFORMERS_STACKED_IN_V4, rule_row
from .weights import DTYPE_BYTES, dense_bytes, resident_matrices, weight_breakdown

__all__ = ["WeightPlan", "plan_weights", "estimate_memory", "sheet_quant_params",
           "check_context_window", "non_torch_items"]

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


def plan_weights(sheet: Sheet, facts: ModelFacts | ConfigOnlyFacts | None,
                 card: Card | None) -> WeightPlan:
    """Decide the stored and running weight formats (``facts`` may be a model no family counts:
    its stored format and quantization config are all this reads).

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
    engine = engine_of(sheet).name
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


def sheet_quant_params(sheet: Sheet, facts: ModelFacts | ConfigOnlyFacts | None,
                       runs: str) -> QuantParams:
    """Group size (GPTQ/AWQ), double quantization (bitsandbytes) and fp8 block of the running
    format: the pre-quantized checkpoint's own ``quantization_config`` wins over the sheet's
    values, which win over ``gpusizer.formats``' defaults.

    Raises:
        SheetError: the sheet sets a value the checkpoint contradicts.
    """
    return quant_params(sheet.quantization, facts.quant if facts is not None else None, runs,
                        stored_format=facts.stored_format if facts is not None else None)


def _weights_items(sheet: Sheet, facts: ModelFacts | None, plan: WeightPlan, share: Share,
                   phases: tuple[str, ...]) -> tuple[list[Item], int, list[Note]]:
    notes: list[Note] = []
    rec = weight_format(plan.runs)
    if facts is None:
        params = sheet.model.parameters
        assert params is not None
        b = dense_bytes(params, plan.runs)
        per_gpu = int(Fraction(b) * share.weight_fraction)
        item = Item("weights", per_gpu, "estimated", phases, _WEIGHTS_SOURCE,
                    f"{params} parameters × {rec.bits} bit / 8 = {b} B"
                    + (f" × {share.weight_fraction} per GPU" if share.weight_fraction != 1 else ""))
        notes.append(Note("bare_count", "bare parameter count: quantization metadata (scales, "
                          "zero points, absmax), modules kept in another format (embeddings, "
                          "lm_head, norms), working memory, temporary load buffers and memory "
                          "outside the process are not counted (R5)"))
        if rec.bits == 4:
            notes.append(Note("theoretical_format", "4-bit row is theoretical: real 4-bit formats "
                              "carry metadata and keep some layers in other formats, so it is not "
                              "a guaranteed peak (R7)"))
        return [item], per_gpu, notes
    engine = engine_of(sheet).name
    if rec.family == "bitsandbytes" and _experts_one_by_one(sheet, facts, engine_of(sheet)):
        # transformers 4.x: each expert is an nn.Linear that bitsandbytes quantizes, as it
        # quantizes the checkpoint's stored experts (format record: packs(None, …))
        row = rule_row("transformers", "bnb_moe_experts", sheet.stack.transformers)
        notes.append(Note("stack_rule", f"transformers {sheet.stack.transformers} "
                          f"({row.versions}): {row.value}: {row.source}"))
        engine = None
    bd = weight_breakdown(facts, plan.runs, compute_dtype=plan.compute_dtype,
                          quant=sheet_quant_params(sheet, facts, plan.runs), engine=engine)
    notes += [Note("format_exclusions", text) for text in bd.notes]
    stored_roles = rec.packs(None, facts.quant) or ()
    if rec.unpacked_experts_note and "expert_linear" in stored_roles \
            and "expert_linear" not in (rec.packs(engine, facts.quant) or ()) \
            and facts.architecture.parameters_by_role("expert_linear"):
        notes.append(Note("format_kept_dense",
                          rec.unpacked_experts_note.format(dtype=plan.compute_dtype)))
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
        largest = max((g.largest_matrix for g in facts.architecture.params
                       if g.role in QUANTIZABLE_ROLES), default=0)
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
        notes.append(Note("load_conversion",
                          f"weights converted at load: {src_fmt} → {plan.runs}"))
    if rec.estimate_note:
        notes.append(Note("theoretical_format", rec.estimate_note))
    return items, weights + (meta if bd.metadata_bytes else 0), notes


def _kv_dtype_bytes(sheet: Sheet, plan: WeightPlan) -> tuple[int, str]:
    assert sheet.inference is not None
    kv = sheet.inference.kv_cache_dtype
    dtype = plan.compute_dtype if kv == "auto" else kv
    if dtype.startswith("fp8"):   # fp8, fp8_e4m3, fp8_e5m2: one byte per value
        return 1, dtype
    return DTYPE_BYTES[dtype], dtype


def _inference_items(sheet: Sheet, facts: ModelFacts, plan: WeightPlan, share: Share,
                     engine: Engine) -> tuple[list[Item], int, object]:
    inf = sheet.inference
    assert inf is not None
    b = DTYPE_BYTES[plan.compute_dtype]
    kvb, kv_dtype = _kv_dtype_bytes(sheet, plan)
    layout = engine.kv_layout(facts, dtype_bytes=kvb, tp=share.tp)
    seqs = share.sequences
    images = inf.images
    image_tokens, image_text = image_tokens_per_request(
        facts, per_request=images.per_request, width=images.width, height=images.height)
    tokens = inf.tokens_per_sequence + image_tokens
    round_to = engine.kv_block_tokens(inf)
    lf = share.layer_fraction
    kv_full = int(Fraction(kv_bytes(layout, tokens=tokens, sequences=seqs, round_to=round_to)) * lf)
    prompt_kv = engine.prompt_kv_bytes(layout, tokens=inf.prompt_tokens + image_tokens,
                                       sequences=seqs, block_tokens=round_to)
    kv_prompt = int(Fraction(prompt_kv) * lf)
    static = engine.kv_static(inf)
    kv_src = ("KV cache = layers × 2 × kv_heads × head_dim × tokens × sequences × bytes "
              "(gpusizer/memory/kv_cache.py: transformers cache_utils, vLLM paged blocks, "
              "DeepSeek-V2 §2.1.2 for MLA)")
    kv_text = (f"{layout.description}; {seqs} sequence(s) × {tokens} tokens (prompt "
               f"{inf.prompt_tokens} + new {inf.new_tokens}) × {kvb} B ({kv_dtype})"
               + (f", blocks of {round_to} tokens" if round_to > 1 else "")
               + (f" × {lf} of the layers on this GPU" if lf != 1 else "")
               + (f"; the prompt holds {image_text} more (the processor's rule, "
                  "gpusizer/memory/vision.py)" if image_tokens else ""))
    phase_bytes = {} if static else {"prefill": kv_prompt}
    if not static and kv_prompt > kv_full:
        # sliding layers hold the whole prompt at the end of prefill (a view of it), more than
        # the window they keep while decoding: the item's size is its largest
        kv_full_item = kv_prompt
        phase_bytes = {"decode": kv_full}
        kv_text += (f"; at the end of prefill every layer, sliding ones included, still holds "
                    f"the whole prompt ({seqs} × {inf.prompt_tokens} tokens = {kv_prompt} B: "
                    "transformers' DynamicSlidingWindowLayer keeps a view of it until the first "
                    f"decode step), the largest size and the item's; decode {kv_full} B")
    else:
        kv_full_item = kv_full
    items = [Item("kv_cache", kv_full_item, "estimated", ("prefill", "decode"), kv_src,
                  kv_text + (" (static cache: allocated whole before prefill)" if static else ""),
                  phase_bytes=phase_bytes)]
    items += _recurrent_state_items(facts, sequences=seqs, dtype_bytes=b, share=share,
                                    paged=engine.paged_mamba_state)
    kernel = engine.attention_kernel(plan.rules.attention)
    items.append(engine.prefill_working(facts, inference=inf, share=share, dtype_bytes=b,
                                        kernel=kernel, weights_format=plan.runs,
                                        stack=sheet.stack))
    decode = forward_working_bytes(facts, batch=seqs, q_tokens=1, kv_tokens=tokens, dtype_bytes=b,
                                   kernel=kernel, logits_positions=1, tp=share.tp,
                                   fused_moe=engine.fused_moe,
                                   keeps_inputs_embeds=engine.keeps_inputs_embeds,
                                   weights_format=plan.runs)
    items.append(Item("decode_working", decode.total_bytes, "estimated", ("decode",),
                      WORKING_SOURCE, f"kernel {kernel}; " + decode.formula))
    transients = engine.decode_transients(facts, inference=inf, kv_bytes=kv_full,
                                          layer_fraction=lf)
    items += transients
    if any(it.name == "kv_cache_growth_transient" for it in transients):
        # the engine grows the cache with torch.cat: the freed, shorter tensors fragment
        row = rule_row("transformers", "kv_cache", sheet.stack.transformers)
        legacy = row.value == "legacy_tuple"
        if legacy:
            items = [it for it in items if it.name != "kv_cache_growth_transient"]
            items.append(Item("kv_cache_growth_transient", kv_full, "estimated", ("decode",),
                              row.source, f"transformers {sheet.stack.transformers} "
                              f"({row.versions}, legacy tuple cache): the previous cache of "
                              f"every layer lives beside the new one: {kv_full} B at the last "
                              "step"))
        items.append(_kv_growth_fragmentation(layout, inf, seqs, lf, whole_cache=legacy))
    return items, kv_full, layout


def _recurrent_state_items(facts: ModelFacts, *, sequences: int, dtype_bytes: int,
                           share: Share, paged: bool) -> list[Item]:
    """The ``recurrent_state`` item of a model with Mamba / linear-attention layers (none
    otherwise): made by the first prefill step, held to the end (transformers keeps every
    layer's state; vLLM one ``MambaSpec`` page per layer and request;
    ``memory/recurrent_state.py``)."""
    rule = vllm_recurrent_state_bytes if paged else recurrent_state_bytes
    st = rule(facts, dtype_bytes=dtype_bytes, sequences=sequences, tp=share.tp)
    if st is None:
        return []
    lf = share.layer_fraction
    size = int(Fraction(st.total_bytes) * lf)
    return [Item("recurrent_state", size, "estimated", ("prefill", "decode"),
                 "per-sequence conv + SSM / delta-rule states (gpusizer/memory/recurrent_state.py:"
                 " transformers cache_utils.LinearAttentionLayer; fp32 states of mamba_ssm and "
                 "flash-linear-attention)",
                 st.description + f": conv {st.conv_bytes} B + state {st.state_bytes} B"
                 + (f" × {lf} of the layers on this GPU" if lf != 1 else "")
                 + ("; vLLM: MambaSpec pages, not yet taken out of the KV pool's block count"
                    if paged else ""))]


def _kv_growth_fragmentation(layout, inf, sequences: int, layer_fraction: Fraction, *,
                             whole_cache: bool) -> Item:
    """The allocator's fragmentation of the full-attention layers' K and V growing by one
    token per decode step (``memory.reserved``); sliding layers keep a constant window."""
    layers = layout.full_layers
    here = max(1, -(-layers * layer_fraction.numerator // layer_fraction.denominator))
    per_tensor = layout.full_bytes_per_token // (2 * layers) * sequences if layers else 0
    return kv_growth_fragmentation_item(tensors=2 * here if layers else 0,
                                        bytes_per_token=per_tensor,
                                        prompt_tokens=inf.prompt_tokens,
                                        new_tokens=inf.new_tokens, whole_cache=whole_cache)


def _experts_one_by_one(sheet: Sheet, facts: ModelFacts, engine: Engine) -> bool:
    """The engine runs transformers' model code, which holds this MoE's routed experts as one
    ``nn.Linear`` per expert: the sheet's transformers version is on the ``per_expert_linear``
    row of ``bnb_moe_experts`` (``gpusizer.stack``: transformers 4.x) and the family did not
    already stack them in 4.x."""
    library = engine.modeling_library
    return (library is not None and facts.architecture.moe is not None
            and facts.model_type not in TRANSFORMERS_STACKED_IN_V4
            and rule_row(library, "bnb_moe_experts",
                         getattr(sheet.stack, library)).value == "per_expert_linear")


def _weight_tensor_sizes(facts: ModelFacts | None, plan: WeightPlan, share: Share,
                         engine: str | None, *, one_by_one: bool = False,
                         quant: QuantParams | None = None
                         ) -> list[tuple[int, int | tuple[int, ...]]]:
    """``(count, bytes)`` of the resident weight tensors on this GPU, in load order: one per
    matrix, followed by its quantization metadata as one tensor when the format packs it
    (``quant`` given); routed experts stacked per layer (one per expert when ``one_by_one``:
    transformers 4.x); tensor parallelism divides each tensor."""
    if facts is None:
        return []
    rec = weight_format(plan.runs)
    packed = None if rec.dense or quant is None else rec.packs(engine, facts.quant)
    out: list[tuple[int, int | tuple[int, ...]]] = []
    for role, n, r, c, per_elem in resident_matrices(facts, plan.runs, engine=engine,
                                                     compute_dtype=plan.compute_dtype):
        # Routed experts are stored as one stacked tensor per layer and projection (transformers
        # v5 grouped experts, vLLM FusedMoE w13/w2), not one tensor per expert.
        moe = facts.architecture.moe
        stack = moe.num_experts if (role == "expert_linear" and moe and not one_by_one) else 1
        size = int(stack * r * c * per_elem / share.tp)
        count = int(-(-Fraction(max(1, n // stack)) * share.layer_fraction // 1))
        meta = 0
        if quant is not None and not rec.dense and per_elem == rec.bits / 8 \
                and (packed is None or role in packed):
            one = Matrices(((stack, r, c),), stack * r * c, stack, stack * r, stack * c,
                           r * c)
            meta = rec.metadata(one, quant).bytes // share.tp
        out.append((count, (size, meta) if meta else size))
    return out


def estimate_memory(sheet: Sheet, facts: ModelFacts | None, *,
                    card: Card | None = None, interconnect: str | None = None) -> MemoryEstimate:
    """Size the sheet's memory per GPU, item by item and phase by phase: plan the weights (format,
    card rules, placement share), then the training or inference assembler, then the items every
    phase holds (CUDA context, NCCL, allocator slack), then a serving engine's pool.

    Args:
        sheet: the validated workload sheet.
        facts: the model's facts, or None for a bare ``model.parameters`` count.
        card: a card whose GPU rules apply (kernels, dtypes; a serving engine's pool), or None.
        interconnect: the offer's ``interconnect`` (``pcie``, ``nvlink``…) for the NCCL buffers
            of a multi-GPU placement; None: the card's default link (``memory.nccl``).

    Returns:
        A :class:`~gpusizer.memory.items.MemoryEstimate` (all bytes per GPU, integers).

    Raises:
        SheetError: the sheet does not hold against the model (length beyond the context
            window, heads or layers the placement cannot split, LoRA targets that match nothing).
        ModelError: a fact the sizing needs is unknown.
    """
    check_context_window(sheet, facts)
    inf, engine = sheet.inference, engine_of(sheet)
    plan = plan_weights(sheet, facts, card)
    notes = [Note("card_rule", change) for change in plan.rules.changes]
    if card is None:
        notes.append(Note("no_card", NO_CARD))
    else:
        notes.insert(0, Note("card", describe_card_rules(plan.rules)))
    share = _share(sheet, facts, engine)
    made = dict(reserve_bytes=sheet.reserve, card=card.name if card else None,
                weights_format=plan.runs, stored_format=plan.stored)
    if inf is None and sheet.task == "inference":
        w_items, weights_bytes, w_notes = _weights_items(sheet, facts, plan, share, ("load",))
        notes += [*w_notes, Note("no_inference_block", "no inference block: only 'weights "
                                 "only' and the indicative envelope are computed (no KV cache, "
                                 "no phase past load)")]
        return MemoryEstimate(weights_bytes=weights_bytes, items=tuple(w_items), phase_names=(),
                              lower_bound_items=_lower_bound_items(w_items),
                              lower_bound_phase="load", notes=tuple(notes),
                              gpus=sheet.placement.gpus, **made)
    phases = INFERENCE_PHASES if sheet.task == "inference" else TRAINING_PHASES
    w_items, weights_bytes, w_notes = _weights_items(sheet, facts, plan, share, phases)
    notes += w_notes
    cc = tuple(card.compute_capability.value) if card and card.compute_capability.value else None
    summary = kv_full = layout = None
    if sheet.task != "inference":
        items, t_notes, summary = _training_part(sheet, facts, plan, w_items, cc, phases)
        notes += t_notes
        weights_bytes = sum(it.bytes or 0 for it in items
                            if it.name in ("weights", "quantization_metadata"))
    else:
        notes += [Note("engine", text) for text in engine.notes(inf)]
        items, kv_full, layout = _inference_part(sheet, facts, plan, share, engine, w_items, cc)
    items += _every_phase_items(sheet, facts, plan, share, engine, phases, card, interconnect,
                                trained_sizes=_trained_tensor_sizes(sheet, facts, summary))
    # the workload's own KV cache, before a serving engine's pool replaces the item
    lower_items = _lower_bound_items(items)
    pool = None
    if inf is not None and facts is not None:
        pool, items, pool_notes = _apply_pool(engine, inf, facts, card, plan, share, items,
                                              weights_bytes=weights_bytes, layout=layout,
                                              kv_full=kv_full, sheet=sheet)
        notes += pool_notes
    host = host_ram(sheet, facts, items,
                    summary.host_bytes_per_gpu if summary is not None else 0,
                    summary.host_formula if summary is not None else "")
    made.update(host_ram_bytes=host.bytes, host_ram_formula=host.formula)
    return MemoryEstimate(
        weights_bytes=weights_bytes, items=tuple(items), phase_names=phases,
        lower_bound_items=lower_items,
        # inference: weights + the KV cache of every required token (end of decode); training:
        # certain from the first update on, parameters, their gradients and optimizer states
        lower_bound_phase="decode" if sheet.task == "inference" else "optimizer_step",
        pool=pool, notes=tuple(notes), training=summary,
        gpus=share.gpus if sheet.task == "inference" else sheet.placement.gpus, **made)


def check_context_window(sheet: Sheet, facts: ModelFacts | None) -> None:
    """Refuse a length beyond the model's context window (``max_position_embeddings``).

    Raises:
        SheetError: prompt + new tokens (inference) or the sequence length (training) exceed it.
    """
    window = facts.architecture.context_window_tokens if facts is not None else None
    if window is None:
        return
    inf = sheet.inference
    need = inf.tokens_per_sequence if inf else (sheet.training.sequence_length
                                                if sheet.training else 0)
    if need > window:
        what = (f"prompt_tokens + new_tokens = {inf.prompt_tokens} + {inf.new_tokens} = {need}"
                if inf else f"{need}")
        raise SheetError(f"{what} tokens exceeds the model's context window "
                         f"max_position_embeddings = {window} tokens",
                         field="inference" if inf else "training.sequence_length", value=need)


def _share(sheet: Sheet, facts: ModelFacts | None, engine: Engine) -> Share:
    """The heaviest GPU's share: the sheet's placement under the engine's rule (inference); one
    whole copy for training, whose placements are sized by ``memory.training``."""
    if sheet.task == "inference":
        concurrency = sheet.inference.concurrency if sheet.inference else 1
        return inference_share(facts, strategy=sheet.placement.strategy,
                               gpus=sheet.placement.gpus, concurrency=concurrency,
                               rule=engine.placement)
    return inference_share(facts, strategy="single", gpus=1, concurrency=1,
                           rule=TRAINING_ENGINE.placement)


def _training_part(sheet: Sheet, facts: ModelFacts | None, plan: WeightPlan,
                   weight_items: list[Item], cc: tuple[int, int] | None,
                   phases: tuple[str, ...]) -> tuple[list[Item], list[Note], TrainingSummary]:
    """The training assembler's items (``memory.training``) and the cuBLAS workspace of the
    forward, backward and validation passes.

    A bare ``model.parameters`` count (``facts`` None) takes the seed's calculator
    (``memory.training.bare_count``): what the count fixes, unknown items for the rest.
    """
    if facts is None:
        items, t_notes, summary = _bare_count_training(sheet, plan, weight_items, phases)
        items.append(cublas_workspace_item(cc, ("forward", "backward", "validation")))
        return items, [Note("training", n) for n in t_notes], summary
    items, t_notes, summary = training_items(
        sheet, facts, runs=plan.runs, compute_dtype=plan.compute_dtype,
        kernel=plan.rules.attention, weight_items=list(weight_items), phases=phases)
    items.append(cublas_workspace_item(cc, ("forward", "backward", "validation")))
    return items, [Note("training", n) for n in t_notes], summary


def _bare_count_training(sheet: Sheet, plan: WeightPlan, weight_items: list[Item],
                         phases: tuple[str, ...]) -> tuple[list[Item], list[str],
                                                           TrainingSummary]:
    """The bare count's training items and a summary of what the count fixes."""
    items, notes, shards, dtypes, host, trained = bare_count_training_items(
        sheet, list(weight_items), runs=plan.runs, compute_dtype=plan.compute_dtype,
        phases=phases)
    training = sheet.training
    tokens = training.microbatch * training.sequence_length
    export = None if training.export != "none" else 0
    if training.export == "full" and trained is not None:
        export = trained * dtypes.trainable_bytes
    summary = TrainingSummary(trained, dtypes.trainable_dtype, (), tokens,
                              tokens * training.gradient_accumulation * shards.data_parallel,
                              "unknown (no architecture)", export, plan.rules.attention,
                              host_bytes_per_gpu=host,
                              host_formula=f"{host} B" if host else "", placement=shards,
                              deepspeed_reference=deepspeed_reference(
                                  sheet, sheet.model.parameters, None, items,
                                  sheet.task == "full"))
    return items, notes, summary


def _inference_part(sheet: Sheet, facts: ModelFacts | None, plan: WeightPlan, share: Share,
                    engine: Engine, weight_items: list[Item], cc: tuple[int, int] | None):
    """The weights plus the KV cache, prefill and decode working memory and the cuBLAS
    workspace; unknown KV and working memory for a bare parameter count.

    Returns:
        ``(items, KV bytes of every required token or None, KV layout or None)``.
    """
    items = list(weight_items)
    if facts is None:
        reason = ("a bare parameter count has no architecture (layers, KV heads, head_dim): give "
                  "model.id or model.path to size it")
        items.append(Item("kv_cache", None, "estimated", ("prefill", "decode"), "R8",
                          unknown_reason=reason))
        items.append(Item("prefill_working", None, "estimated", ("prefill",), "R8",
                          unknown_reason=reason))
        return items, None, None
    inf_items, kv_full, layout = _inference_items(sheet, facts, plan, share, engine)
    items += inf_items
    items.append(cublas_workspace_item(cc, ("prefill", "decode")))
    items += int4_kernel_items(facts, plan.runs, engine.name, cc, share,
                               prompt_tokens=sheet.inference.prompt_tokens)
    return items, kv_full, layout


def non_torch_items(sheet: Sheet, plan: WeightPlan, card: Card | None, *,
                    phases: tuple[str, ...],
                    weight_tensor_sizes: list[tuple[int, int]]) -> list[Item]:
    """The items :func:`estimate_memory` adds that no tensor of the model shows, for a model no
    family counts (the simulation's fallback): the cuBLAS workspace of the passes that multiply,
    then :func:`_every_phase_items` (CUDA context, NCCL, allocator slack), with the allocator's
    slack over ``weight_tensor_sizes`` (``(count, bytes)`` of the resident weight tensors, as
    the simulation instantiated them) instead of the family's matrices.
    """
    cc = tuple(card.compute_capability.value) if card and card.compute_capability.value else None
    passes = ("prefill", "decode") if sheet.task == "inference" else (
        "forward", "backward", "validation")
    engine = engine_of(sheet)
    share = _share(sheet, None, engine)
    return [cublas_workspace_item(cc, passes),
            *_every_phase_items(sheet, None, plan, share, engine, phases, card, None,
                                tensor_sizes=weight_tensor_sizes)]


_STATE_TENSORS = {"adamw": 2, "sgd-momentum": 1, "sgd": 0}
"""State tensors per trainable tensor, each shaped like it and in its dtype, of the optimizers
whose states are plain device tensors (``memory.optimizer_states``: AdamW's ``exp_avg`` and
``exp_avg_sq``, SGD's ``momentum_buffer``); bitsandbytes' 8-bit and paged states and
Adafactor's factored ones are not replayed."""


def _trained_tensor_sizes(sheet: Sheet, facts: ModelFacts | None,
                          summary: TrainingSummary | None) -> list[tuple[int, int]]:
    """``(count, bytes)`` of the gradients and optimizer states a single-GPU or DDP training
    keeps (one gradient, and ``_STATE_TENSORS`` states, per trainable tensor, in the trained
    dtype); [] for inference and for the sharded placements, whose flat buffers
    ``memory.training.placement`` sizes."""
    if summary is None or facts is None or sheet.training is None \
            or sheet.placement.strategy not in ("single", "ddp"):
        return []
    per_elem = DTYPE_BYTES.get(summary.trainable_dtype, 4)
    copies = 1 + _STATE_TENSORS.get(sheet.training.optimizer, 0)
    return [(count * copies, rows * cols * per_elem)
            for count, rows, cols in trainable(sheet, facts).tensors]


def _every_phase_items(sheet: Sheet, facts: ModelFacts | None, plan: WeightPlan, share: Share,
                       engine: Engine, phases: tuple[str, ...], card: Card | None,
                       interconnect: str | None,
                       tensor_sizes: list[tuple[int, int]] | None = None,
                       trained_sizes: list[tuple[int, int]] | None = None) -> list[Item]:
    """What every phase holds whatever the task: the CUDA context, NCCL buffers of the
    placement (over the offer's interconnect, else the card's default link), and the
    allocator's slack over the resident tensors: the weights (``tensor_sizes``, else the
    family's resident matrices), then a training's gradients and optimizer states
    (``trained_sizes``)."""
    if tensor_sizes is None:
        one_by_one = facts is not None and _experts_one_by_one(sheet, facts, engine)
        tensor_sizes = _weight_tensor_sizes(
            facts, plan, share, None if one_by_one and weight_format(plan.runs).family
            == "bitsandbytes" else engine.name, one_by_one=one_by_one,
            quant=sheet_quant_params(sheet, facts, plan.runs) if facts is not None else None)
    if sheet.task == "inference":
        nccl = nccl_item(share.gpus, phases, share.strategy, card=card,
                         interconnect=interconnect)
    else:
        nccl = nccl_item(sheet.placement.gpus, phases, sheet.placement.strategy, training=True,
                         card=card, interconnect=interconnect, nodes=sheet.placement.nodes)
    return [cuda_context_item(phases), nccl, _slack(tensor_sizes, trained_sizes or [], phases)]


def _slack(weights: list[tuple[int, int]], trained: list[tuple[int, int]],
           phases: tuple[str, ...]) -> Item:
    """The allocator slack of the weights, and from the first step on of the gradients and
    optimizer states too (their slack at load is the weights' alone)."""
    if not trained:
        return allocator_slack_item(weights, phases)
    at_load = allocator_slack_item(weights, phases).bytes
    item = allocator_slack_item(weights + trained, phases,
                                what="weight, gradient and optimizer-state tensors")
    return Item(item.name, max(item.bytes, at_load), item.provenance, item.phases, item.source,
                item.formula + f"; at load, the weights alone: {at_load} B",
                phase_bytes={p: item.bytes if p != "load" else at_load for p in phases})


def _apply_pool(engine: Engine, inf, facts: ModelFacts, card: Card | None, plan: WeightPlan,
                share: Share, items: list[Item], *, weights_bytes: int, layout, kv_full,
                sheet: Sheet):
    """A serving engine's pool (with a card): the split, the items with the pool in place of
    the workload's KV cache, and the notes. CONTRACT.md: a serving engine takes its whole pool
    at start, so its peak is the budget (``MemoryEstimate`` derives it from the pool).

    Returns:
        ``(pool or None, items, notes)``.
    """
    pool, pool_notes = engine.pool(inference=inf, facts=facts, card=card,
                                   compute_dtype=plan.compute_dtype, weights_bytes=weights_bytes,
                                   items=items, layout=layout, sequences=share.sequences,
                                   sheet=sheet, tp=share.tp)
    notes = [Note("pool", text) for text in pool_notes]
    if pool is None:
        return None, items, notes
    items = engine.pool_items(items, pool, facts=facts, compute_dtype=plan.compute_dtype,
                              kv_needed=kv_full)
    notes.append(Note("pool_peak_is_budget", engine.pool_peak_note))
    return pool, items, notes


def _lower_bound_items(items: list[Item]) -> tuple[Item, ...]:
    """The items of a kind that may count in the certain lower bound (``ITEM_KINDS``)."""
    return tuple(it for it in items if ITEM_KINDS[it.name].lower_bound is not None)

