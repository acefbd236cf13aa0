"""Training memory per GPU: LoRA, QLoRA and full fine-tuning, phase by phase (R8, R12).

Phases (``TRAINING_PHASES``): ``load``; ``forward`` and ``backward`` of a step after the first
(optimizer states exist from the first update on, so the steady step is the larger);
``optimizer_step`` (the first update allocates the states); ``validation`` (forward without
gradients at the validation microbatch); ``export`` (adapter, merged or full save).

Within ``backward`` the live set changes layer by layer: saved activations are released as the
gradients of the trained parameters appear. :func:`training_items` walks that sweep — the start
(logits gradient), each decoder layer from the last to the first, the end — and reports each
item at the instant the backward total is largest, so a phase peak is what is live at once
(a sum of each item's maximum would only be a conservative envelope).

Placements (per GPU): ``single``; ``ddp`` (a full copy per GPU, plus DDP's gradient buckets —
``torch.nn.parallel.DistributedDataParallel`` copies every gradient into its buckets unless
``gradient_as_bucket_view=True``, "saved memory equal to the total gradients size", PyTorch
docs); ``zero2`` (DeepSpeed ZeRO stage 2: gradients and optimizer states ÷ N, Rajbhandari et al.
2020 §5.2, plus the reduce bucket, ``reduce_bucket_size`` 5e8 elements by default); ``fsdp`` full
shard (parameters, gradients and states ÷ N, plus the unsharded parameters of the layers in
flight — the current and the prefetched one, ``BackwardPrefetch.BACKWARD_PRE`` — and one layer's
unsharded gradients before its reduce-scatter, PyTorch FSDP docs).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SheetError
from ..formats import FORMATS, weight_format
from ..model.facts import QUANTIZABLE_ROLES, ModelFacts
from ..sheet import TRAINING_STRATEGIES, Sheet
from .activations import (TrainedParts, backward_layer_working, layer_activations,
                          logits_bytes)
from .items import Item
from .lora import LoraAdapters, lora_adapters
from .optimizer_states import TensorShape, optimizer_memory
from .weights import DTYPE_BYTES
from .working_memory import forward_working_bytes

__all__ = ["TrainingSummary", "training_items", "TRAINING_STRATEGIES"]

_ZERO_BUCKET_ELEMENTS = 500_000_000   # DeepSpeed reduce_bucket_size default (5e8 elements)
_ACT_SOURCE = ("Korthikanti et al. 2022 §4.1, re-derived for transformers' module code "
               "(gpusizer/memory/activations.py)")


@dataclass(frozen=True)
class TrainingSummary:
    """What a training estimate rests on (for the report and for comparisons between sheets).

    Attributes:
        trainable_parameters: parameters the optimizer updates (whole model).
        trainable_dtype: dtype of trained parameters, their gradients and optimizer states.
        lora_targets: resolved LoRA targets (empty for full fine-tuning).
        tokens_per_microbatch: microbatch × sequence_length.
        tokens_per_update: × gradient_accumulation × data-parallel GPUs (R12: keeps updates
            comparable when the microbatch changes).
        backward_peak_at: where in the backward sweep the total is largest.
        export_bytes: bytes the export writes (adapter, merged or full weights), or 0 for none.
        kernel: attention kernel assumed (flash / sdpa keep no s × s matrix; eager does).
    """

    trainable_parameters: int
    trainable_dtype: str
    lora_targets: tuple[str, ...]
    tokens_per_microbatch: int
    tokens_per_update: int
    backward_peak_at: str
    export_bytes: int
    kernel: str


def _check(sheet: Sheet, runs: str) -> None:
    """The weight format that runs (read from the checkpoint for ``weights: auto``, after the
    card's rules) against the task; the sheet refuses the rest."""
    if sheet.task == "full" and not weight_format(runs).dense:
        dense = [n for n, r in FORMATS.items() if r.dense]
        raise SheetError(f"full fine-tuning updates every weight: it needs "
                         f"{', '.join(dense[:-1])} or {dense[-1]} weights, not {runs} (use task "
                         "lora or qlora on a quantized base)", field="weights", value=runs)
    if sheet.task == "qlora" and sheet.weights == "auto" and not weight_format(runs).qlora_base:
        raise SheetError(f"qlora trains LoRA adapters on a 4-bit bitsandbytes base; the weights "
                         f"run as {runs}: expected weights "
                         f"{' or '.join(n for n, r in FORMATS.items() if r.qlora_base)}",
                         field="weights", value=runs)


def _full_tensors(facts: ModelFacts) -> list[TensorShape]:
    """Trainable tensors of full fine-tuning: each matrix (routed experts stacked per layer, as
    transformers v5 stores them); vectors (norms, biases) as hidden-wide tensors."""
    out: list[TensorShape] = []
    for g in facts.params:
        if g.shapes:
            stack = facts.moe.num_experts if (g.role == "expert_linear" and facts.moe) else 1
            out += [(max(1, n // stack), stack * r, c) for n, r, c in g.shapes]
        else:
            h = facts.hidden_size
            out.append((max(1, g.count // h), h, 1) if g.count >= h else (1, g.count, 1))
    return out


_ATTENTION_INPUT_READERS = frozenset({
    "q_proj", "k_proj", "v_proj", "qkv_proj", "query_key_value", "c_attn", "q_a_proj",
    "kv_a_proj_with_mqa"})
"""Module names that read the attention norm's output (each family's q/k/v projections)."""
_MLP_INPUT_READERS = (".gate_proj", ".up_proj", ".c_fc", ".dense_h_to_4h", "mlp.gate_up_proj")
"""Path suffixes of the modules that read the MLP norm's output."""


def _parts(sheet: Sheet, adapters: LoraAdapters | None) -> TrainedParts:
    if adapters is None:
        return TrainedParts(full=True, qkv=True, o=True, gate_up=True, down=True, experts=True)
    names = {m.name for m in adapters.modules}
    paths = {m.path for m in adapters.modules}
    qkv = bool(names & _ATTENTION_INPUT_READERS)
    o = bool({p for p in paths if p.endswith((".o_proj", ".dense", "attn.c_proj"))})
    gate_up = bool({p for p in paths if p.endswith(_MLP_INPUT_READERS)})
    down = bool({p for p in paths if p.endswith(("mlp.down_proj", "mlp.c_proj",
                                                  ".dense_4h_to_h"))
                 and "experts" not in p})
    experts = any(m.experts for m in adapters.modules)
    qkv_readers = sum(1 for m in adapters.modules if m.name in _ATTENTION_INPUT_READERS)
    gate_up_readers = sum(1 for p in paths if p.endswith(_MLP_INPUT_READERS)
                          and "experts" not in p and "shared" not in p)
    return TrainedParts(False, qkv, o, gate_up, down, experts, qkv_readers, gate_up_readers)


def training_items(sheet: Sheet, facts: ModelFacts, *, runs: str, compute_dtype: str,
                   kernel: str, weight_items: list[Item], phases: tuple[str, ...]) -> tuple[list[Item], list[str], TrainingSummary]:
    """Training items per GPU for a lora / qlora / full sheet.

    Args:
        sheet: the validated sheet (``training`` block present).
        facts: the model.
        runs: the weight format on the GPU; compute_dtype: the matmul dtype.
        kernel: the attention kernel that runs (``eager`` keeps s × s matrices).
        weight_items: the base weight items (``weights``, ``quantization_metadata``,
            transients) built for one whole copy of the model.
        phases: ``TRAINING_PHASES``.

    Returns:
        ``(items, notes, summary)``; the weight items are returned re-sized for the placement.

    Raises:
        SheetError: a weight format this task cannot train; LoRA targets that match nothing.
    """
    tr = sheet.training
    assert tr is not None
    _check(sheet, runs)
    notes: list[str] = []
    c = DTYPE_BYTES[compute_dtype]
    b, s = tr.microbatch, tr.sequence_length
    t = b * s
    n_gpu = sheet.placement.gpus
    strategy = sheet.placement.strategy
    shard = n_gpu if strategy == "fsdp" else 1
    state_shard = n_gpu if strategy in ("zero2", "fsdp") else 1
    amp = tr.precision == "amp"
    p_bytes = 4 if amp else c
    p_dtype = "fp32" if amp else compute_dtype
    full = sheet.task == "full"

    adapters = None if full else lora_adapters(facts, tr.lora.rank, tr.lora.targets)
    if full:
        trainable = facts.total_parameters
        tensors = _full_tensors(facts)
    else:
        trainable = adapters.parameters
        tensors = list(adapters.tensors)
    parts = _parts(sheet, adapters)
    items: list[Item] = []
    prepare = sheet.task == "qlora" and tr.prepare_kbit_training is not False
    residual = 4 if prepare else c
    # bitsandbytes linears return their input's dtype: fp32 once the residual stream is fp32
    linear_out = 4 if (prepare and weight_format(runs).outputs_follow_input_dtype) else c
    # without autocast the attention kernel receives those fp32 projections as they are, and the
    # fp32 lm_head makes fp32 logits
    attention_b = linear_out if not amp else c
    logits_b = 4 if (prepare and not amp) else c

    # -- weights (resident parameters) ---------------------------------------------------------
    for it in weight_items:
        if it.name == "weights" and full and amp:
            fp32 = trainable * 4 // shard
            items.append(Item("weights", fp32, "estimated", phases,
                              "torch.amp: the trained model is held in fp32; autocast computes in "
                              f"{compute_dtype} (PyTorch docs, Automatic Mixed Precision)",
                              f"{trainable} parameters × 4 B" + (f" ÷ {shard} (FSDP shard)"
                                                                  if shard > 1 else "")))
        elif it.name in ("weights", "quantization_metadata") and shard > 1 and it.bytes:
            items.append(Item(it.name, it.bytes // shard, it.provenance, it.phases, it.source,
                              f"{it.formula} ÷ {shard} (FSDP full shard)"))
        else:
            items.append(it)

    if adapters is not None:
        items.append(Item("lora_adapters", trainable * p_bytes // shard, "estimated", phases,
                          "LoRA, Hu et al. 2021 §4.1 (r × (in + out) per adapted matrix); PEFT "
                          "target matching (gpusizer/memory/lora.py)",
                          f"rank {tr.lora.rank}: {adapters.formula} × {p_bytes} B ({p_dtype})"
                          + (f" ÷ {shard}" if shard > 1 else "")))
        small = [m.path for m in adapters.modules if tr.lora.rank >= min(m.rows, m.cols)]
        if small:
            notes.append(f"LoRA rank {tr.lora.rank} is not below the smallest side of "
                         f"{', '.join(small)}: those adapters hold at least as many parameters "
                         "as a full update of the matrix (sized as asked)")
        if not amp and c < 4:
            notes.append("precision pure keeps LoRA adapters in the compute dtype; PEFT's "
                         "default (autocast_adapter_dtype=True) upcasts them to fp32, which "
                         "is precision amp")

    if prepare and c < 4:
        kept = sum(g.count for g in facts.params if g.role not in QUANTIZABLE_ROLES)
        largest_kept = max((g.largest_matrix for g in facts.params
                            if g.role in ("embedding", "lm_head")), default=0)
        # the cast runs right after loading, one parameter at a time: the largest 16-bit tensor
        # and its fp32 copy coexist once
        items.append(Item("prepare_kbit_upcast", kept * (4 - c) + largest_kept * c, "estimated",
                          phases, 
                          "peft prepare_model_for_kbit_training (peft/utils/other.py) casts every "
                          "non-quantized fp16/bf16 parameter to fp32; TRL's SFTTrainer calls it for "
                          "quantized models (training.prepare_kbit_training: false when not)",
                          f"{kept} kept parameters (embeddings, lm_head, norms) × (4 − {c}) B, "
                          f"+ {largest_kept} × {c} B while the largest is cast (load); the fp32 "
                          "embeddings and norms also make the residual stream fp32, and "
                          "bitsandbytes linears return fp32 outputs",
                          phase_bytes={p: kept * (4 - c) for p in phases if p != "load"}))
    linear_params = sum(g.count for g in facts.params
                        if g.role in (*QUANTIZABLE_ROLES, "lm_head")) + (
        facts.vocab_size * facts.hidden_size if facts.tie_word_embeddings else 0)
    per_layer_linear = sum(g.count for g in facts.params if g.role in QUANTIZABLE_ROLES) \
        // max(1, facts.num_layers)
    if full and amp and c < 4:
        copies = linear_params * c // shard
        one_layer = per_layer_linear * c
        items.append(Item("autocast_weight_copies", copies, "estimated",
                          ("forward", "backward", "validation"),
                          "torch autocast caches the low-precision cast of each fp32 weight "
                          "inside the autocast region (torch/amp/autocast_mode.py, "
                          "clear_autocast_cache on exit); backward keeps the casts it saved",
                          f"{linear_params} linear weights × {c} B" + (
                              f"; one layer {per_layer_linear} × {c} B in backward with "
                              "gradient checkpointing" if tr.gradient_checkpointing else ""),
                          phase_bytes={"backward": one_layer} if tr.gradient_checkpointing
                          else {}))

    # -- gradients and optimizer -----------------------------------------------------------------
    grads_total = trainable * p_bytes // state_shard
    opt = optimizer_memory(tr.optimizer, tr.optimizer_impl, tensors, p_bytes)
    states = opt.state_bytes // state_shard
    paged = opt.paged_bytes // state_shard
    steady = ("forward", "backward", "optimizer_step", "validation", "export")
    opt_src = "gpusizer/memory/optimizer_states.py (torch.optim, bitsandbytes, transformers)"
    if states or not paged:
        items.append(Item("optimizer_states", states, "estimated", steady if states else (),
                          opt_src, opt.formula + (f" ÷ {state_shard} (sharded)"
                                                  if state_shard > 1 else "")))
    if paged:
        items.append(Item("optimizer_states_paged", paged, "estimated", steady, opt_src,
                          "bitsandbytes paged states in CUDA managed memory: on the device "
                          "until memory runs short, then moved to host RAM by the driver; not "
                          "seen by max_memory_allocated" + (f" ÷ {state_shard}"
                                                            if state_shard > 1 else ""),
                          non_torch=True))
        notes.append(f"paged optimizer: {paged} B of states sit in CUDA managed memory — the "
                     "figure that moves to host RAM under memory pressure (device_peak_bytes "
                     "counts them on the device)")
    if opt.step_temporary_bytes:
        items.append(Item("optimizer_step_temporary", opt.step_temporary_bytes // state_shard,
                          "estimated", ("optimizer_step",), opt_src, opt.step_formula
                          + (f" ÷ {state_shard}" if state_shard > 1 else "")))

    # -- activations and the backward sweep ----------------------------------------------------
    la = layer_activations(facts, batch=b, seq=s, c=c, kernel=kernel, parts=parts,
                           residual_bytes=residual, linear_out_bytes=linear_out,
                           attention_bytes=attention_b)
    n_layers = facts.num_layers
    moe_layers = facts.moe.moe_layers if facts.moe else 0
    saved = [la.saved_bytes] * (n_layers - moe_layers) + [la.moe_saved_bytes] * moe_layers
    ckpt = tr.gradient_checkpointing
    kept = [la.input_bytes] * n_layers if ckpt else saved
    final_norm = 4 * t * facts.hidden_size + (2 * c * t * facts.hidden_size if full else 0)
    if prepare and amp and c < 4:
        # the fp32 lm_head is frozen: autocast's 16-bit copy of it is saved for the input gradient
        final_norm += facts.vocab_size * facts.hidden_size * c
    fwd_logits, bwd_logits, logits_text = logits_bytes(facts, tokens=t, c=logits_b)
    head_params = facts.vocab_size * facts.hidden_size if full else 0
    embed_at_end = head_params if (full and not facts.tie_word_embeddings) else 0
    layer_grads = (grads_total - (head_params + embed_at_end) * p_bytes // state_shard)
    layer_grads = max(0, layer_grads) // max(1, n_layers)
    head_grads = head_params * p_bytes // state_shard
    dequant = 0
    if weight_format(runs).backward_dequant_transient:
        dequant = max((g.largest_matrix for g in facts.params if g.role == "linear"),
                      default=0) * c
    wgrad = (max((g.largest_matrix for g in facts.params if g.role in QUANTIZABLE_ROLES),
                 default=0) * p_bytes if full else 0)
    w_bwd = backward_layer_working(facts, batch=b, seq=s, c=c, kernel=kernel,
                                   largest_dequantized=dequant, largest_weight_grad=wgrad,
                                   residual_bytes=residual, linear_out_bytes=linear_out)
    ga = tr.gradient_accumulation
    prior = grads_total if ga > 1 else 0     # gradients kept between microbatches
    instants = []   # (label, activations, logits, gradients, working)
    acts_all = sum(kept) + final_norm
    # the lm_head weight gradient is made after log_softmax's backward has released its fp32
    # tensors (the cast to the compute dtype comes first), so it is not live at this instant
    instants.append(("start (logits gradient)", acts_all, bwd_logits, prior, 0))
    for i in range(n_layers - 1, -1, -1):
        acts = sum(kept[:i]) + (kept[i] + saved[i] if ckpt else saved[i])
        g = max(prior, head_grads + layer_grads * (n_layers - i))
        instants.append((f"layer {i + 1} of {n_layers}", acts, 0, g, w_bwd))
    instants.append(("end (all gradients)", 0, 0, grads_total, 0))
    peak_at = max(instants, key=lambda x: x[1] + x[2] + x[3] + x[4])
    label, a_bwd, l_bwd, g_bwd, w_at = peak_at
    act_text = (f"{'checkpointed layer inputs ' if ckpt else ''}{n_layers} layers; per layer "
                f"{la.saved_bytes} B saved ({la.formula})"
                + (f"; inputs {la.input_bytes} B per layer kept, one layer recomputed in "
                   "backward" if ckpt else "") + f"; final norm {final_norm} B")
    items.append(Item("activations", acts_all, "estimated", ("forward", "backward"),
                      _ACT_SOURCE, act_text + f"; backward peak at {label}: {a_bwd} B",
                      phase_bytes={"backward": a_bwd}))
    items.append(Item("logits", max(fwd_logits, bwd_logits), "estimated",
                      ("forward", "backward"),
                      "transformers ForCausalLMLoss (fp32 upcast, cross_entropy = log_softmax + "
                      "nll_loss); grows as microbatch × sequence × vocab", logits_text,
                      phase_bytes={"forward": fwd_logits, "backward": l_bwd}))
    grad_phases = ("forward", "backward", "optimizer_step") if ga > 1 else \
        ("backward", "optimizer_step")
    items.append(Item("gradients", grads_total, "estimated", grad_phases,
                      "one gradient per trained parameter, in its dtype (torch autograd "
                      "AccumulateGrad); freed by zero_grad(set_to_none=True) after the update",
                      f"{trainable} × {p_bytes} B ({p_dtype})" + (
                          f" ÷ {state_shard}" if state_shard > 1 else "")
                      + f"; at the backward peak ({label}) {g_bwd} B"
                      + ("; gradient accumulation keeps them between microbatches" if ga > 1
                         else ""),
                      phase_bytes={"backward": g_bwd}))
    items.append(Item("backward_working", w_bwd, "estimated", ("backward",), _ACT_SOURCE,
                      "gradients of one layer's activations (2·c·T·h + 8·T·h + 3·c·T·I)"
                      + (f" + dequantized 4-bit weight {dequant} B" if dequant else "")
                      + (f" + one weight gradient {wgrad} B" if wgrad else ""),
                      phase_bytes={"backward": w_at}))

    # -- validation ----------------------------------------------------------------------------
    vb = tr.validation_microbatch or b
    val = forward_working_bytes(facts, batch=vb, q_tokens=s, kv_tokens=s, dtype_bytes=c,
                                kernel=kernel, logits_positions=s, logits_fp32_copies=0,
                                weights_format=runs)
    # the forward above sized the logits in c; fp32 logits add (4 − c) and need no fp32 copy
    per_logit = (logits_b - c) + (4 if logits_b < 4 else 0) + 4
    loss = vb * s * facts.vocab_size * per_logit
    items.append(Item("validation_working", val.total_bytes + loss, "estimated", ("validation",),
                      "forward without gradients (gpusizer/memory/working_memory.py) + the "
                      "loss's fp32 copy and log_softmax",
                      f"validation microbatch {vb}: {val.formula}; loss {vb}×{s}×"
                      f"{facts.vocab_size}×{per_logit} B"))

    # -- export --------------------------------------------------------------------------------
    export_bytes, export_item = _export(sheet, facts, adapters, runs, c, p_bytes)
    if export_item is not None:
        items.append(export_item)

    # -- placement extras ----------------------------------------------------------------------
    if strategy == "ddp" and n_gpu > 1:
        items.append(Item("ddp_gradient_buckets", grads_total, "estimated",
                          ("backward", "optimizer_step"),
                          "torch DistributedDataParallel: gradients are copied into communication "
                          "buckets unless gradient_as_bucket_view=True (PyTorch docs: 'saved "
                          "memory size equal to the total gradients size')",
                          f"= gradients {grads_total} B"))
    if strategy == "zero2" and n_gpu > 1:
        bucket = _ZERO_BUCKET_ELEMENTS * p_bytes
        items.append(Item("zero_reduce_bucket", bucket, "declared", ("backward",),
                          "DeepSpeed ZeRO config docs: reduce_bucket_size default 5e8 elements",
                          f"5e8 × {p_bytes} B"))
    if strategy == "fsdp" and n_gpu > 1:
        layer_params = (facts.total_parameters - facts.vocab_size * facts.hidden_size *
                        (1 if facts.tie_word_embeddings else 2)) // max(1, n_layers)
        gathered_b = 4 if (full and amp) else (weight_format(runs).byte_width or c)
        gathered = 2 * layer_params * gathered_b
        grads_layer = layer_params * p_bytes if full else 0
        items.append(Item("fsdp_gathered_layers", gathered + grads_layer, "estimated",
                          ("forward", "backward", "validation"),
                          "PyTorch FSDP full shard: the unsharded parameters of the current and "
                          "the prefetched layer (BackwardPrefetch.BACKWARD_PRE), and one layer's "
                          "unsharded gradients before reduce-scatter",
                          f"2 × {layer_params} × {gathered_b} B"
                          + (f" + {layer_params} × {p_bytes} B" if grads_layer else ""),
                          phase_bytes={"forward": gathered, "validation": gathered}))
        notes.append("FSDP: a quantized (bitsandbytes) base needs bnb_4bit_quant_storage to "
                     "shard; sized as if it shards like the other parameters")

    notes.append(f"gradient accumulation {ga}: {t} tokens per microbatch, "
                 f"{t * ga * (n_gpu if strategy != 'single' else 1)} tokens per update (R12)")
    if sheet.task == "qlora" and not prepare:
        notes.append("prepare_kbit_training false: the modules kept beside the 4-bit base "
                     "(norms, embeddings, lm_head) stay in the compute dtype")
    if kernel == "eager":
        notes.append("eager attention keeps microbatch × heads × s² softmax matrices per layer")
    summary = TrainingSummary(trainable, p_dtype, adapters.targets if adapters else (), t,
                              t * ga * (n_gpu if strategy != "single" else 1), label,
                              export_bytes, kernel)
    return items, notes, summary


def _export(sheet: Sheet, facts: ModelFacts, adapters: LoraAdapters | None, runs: str, c: int,
            p_bytes: int) -> tuple[int, Item | None]:
    """Bytes the export writes and its GPU transient.

    adapter: the adapter tensors (safetensors copies each tensor to host, no GPU allocation);
    merged: PEFT ``merge_and_unload`` adds ``scale · B @ A`` to each adapted weight in place —
    one delta matrix at a time (``get_delta_weight``), and a 4-bit base is dequantized, merged
    and re-quantized (bitsandbytes ``Linear4bit`` merge): the largest adapted matrix × (c +
    adapter bytes); the merged model is written in the compute dtype; full: the trained weights.
    """
    mode = sheet.training.export
    if mode == "none":
        return 0, None
    if mode == "adapter":
        out = adapters.parameters * p_bytes
        return out, None
    if mode == "merged":
        largest = max((m.rows * m.cols * max(1, m.experts) for m in adapters.modules), default=0)
        extra = c if weight_format(runs).merge_requantizes else 0
        tmp = largest * (p_bytes + extra)
        out = facts.total_parameters * c
        return out, Item("export_transient", tmp, "estimated", ("export",),
                         "PEFT merge_and_unload (LoraLayer.get_delta_weight), bitsandbytes "
                         "Linear4bit/Linear8bitLt merge (dequantize, add, re-quantize)",
                         f"largest adapted matrix {largest} values × ({p_bytes} + {extra}) B; "
                         f"writes {out} B ({facts.total_parameters} × {c} B)")
    out = facts.total_parameters * p_bytes
    return out, None
