"""Run the sheet's phases on the model and record each phase's peak (see ``tracker.py``).

Inference (transformers ``generate``'s memory path, huggingface/transformers
src/transformers/generation/utils.py):
- ``load``: the model (parameters and buffers) in the running dtype.
- ``prefill``: ``concurrency × prompt_tokens`` through the model with the cache, logits of the
  last position only (``logits_to_keep=1``, ``logits: all`` keeps every position), then the
  fp32 copy of the next-token logits and the argmax.
- ``decode``: one step of ``concurrency`` tokens against a cache already holding
  ``prompt_tokens + new_tokens − 1`` tokens, so the step reaches the full length. DynamicCache
  concatenates (old and new cache live together for a moment); a static cache is allocated whole
  before prefill.

Training (one optimizer step of ``transformers.Trainer``'s order):
- ``load``: the model (and LoRA adapters through PEFT).
- ``forward``: ``microbatch × sequence_length`` with labels (transformers' loss upcasts the
  logits to fp32); with ``gradient_accumulation > 1`` the second micro-step runs too, with the
  first one's gradients live.
- ``backward``: ``loss.backward()``.
- ``optimizer_step``: the step, then ``zero_grad(set_to_none=True)``.
- Two optimizer steps run, and each phase keeps its largest peak: the second step's forward and
  backward hold the optimizer states (the steady state of every later step).
- ``validation``: a no-grad forward of ``validation_microbatch`` sequences with labels.
- ``export`` is not simulated (it reads weights, which the simulation does not have).

Inputs carry no attention mask: an all-ones mask is skipped by transformers on a GPU, so passing
none is the same run; the position ids are 0…n-1 per row (no packed sequences).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..formats import FP8_DEFAULT_BLOCK
from ..sheet import Sheet
from .tracker import LiveTracker, PhasePeak

__all__ = ["RuleSwitches", "PhaseRun", "run_phases"]


@dataclass(frozen=True)
class RuleSwitches:
    """Which GPU rules apply (all on for ``gpusizer simulate``; off for the CPU ground truth).

    Attributes:
        attention: rule 1, route SDPA to the card's kernel.
        packed_sequences: rule 2, the packed-sequence check answers as on a GPU.
        optimizer: rule 3, the optimizer implementation of a GPU run (else PyTorch's CPU default).
        fake: run on fake tensors (False: real CPU tensors, for tiny models only).
    """

    attention: bool = True
    packed_sequences: bool = True
    optimizer: bool = True
    fake: bool = True


@dataclass(frozen=True)
class Quantization:
    """A quantized base: bitsandbytes nf4 / fp4 / int8, fp8, GPTQ or AWQ int4.

    Attributes:
        double_quant: nested absmax (nf4 / fp4).
        converted: the checkpoint stores 16-bit weights quantized while loading.
        prepare_kbit: PEFT's ``prepare_model_for_kbit_training`` (kept modules in fp32).
        fmt: the running format.
        group_size: GPTQ / AWQ inputs per scale (≤ 0: one group per row).
        block: fp8 ``weight_block_size`` (output rows, input columns).
    """

    double_quant: bool
    converted: bool
    prepare_kbit: bool = False
    fmt: str = "nf4"
    group_size: int = 128
    block: tuple[int, int] = FP8_DEFAULT_BLOCK


@dataclass
class PhaseRun:
    """What the run of all phases gave.

    Attributes:
        phases: one peak per phase (the largest where a phase ran twice), in run order.
        attention: ``{"kernel", "reason", "calls"}`` per distinct choice.
        notes: what was decided on the way.
        trainable_parameters: elements the optimizer updates (0 for inference).
        seconds: wall time of the run.
        weight_tensor_sizes: ``(count, bytes)`` of the model's own parameters after load (LoRA
            adapters excluded), for the allocator's slack.
        parameters: their elements.
        model_class, vision_language: as ``build.BuiltModel``.
    """

    phases: list[PhasePeak]
    attention: list[dict]
    notes: list[str] = field(default_factory=list)
    trainable_parameters: int = 0
    seconds: float = 0.0
    weight_tensor_sizes: list[tuple[int, int]] = field(default_factory=list)
    parameters: int = 0
    model_class: str = ""
    vision_language: bool = False


def run_phases(sheet: Sheet, config_dict: dict, *, dtype: str,
               compute_capability: tuple[int, int],
               rules: RuleSwitches = RuleSwitches(),
               quantization: Quantization | None = None,
               autocast: str | None = None) -> PhaseRun:
    """Build the model and run every phase of the sheet's task under the tracker.

    Raises:
        SimulationError: the model cannot be built or placed (see ``build.build_model``).
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from .build import build_model
    from .gpu_rules import GpuRules

    # Imported before the fake mode and the tracker open: a module's body runs once per
    # process, at its first import, and the tensors it makes there are CPU tensors a GPU run
    # never books. peft/tuners/loha/layer.py evaluates two ``scale=torch.tensor(1)`` default
    # arguments (2 × 512 B); imported under the tracker (the first LoRA simulation of a
    # process), they were counted as activations by that simulation alone and left fake in
    # peft. transformers' modeling modules make no tensor at import (every family checked);
    # tests/simulate/test_repeat.py fails if a first import moves a figure again.
    import peft  # noqa: F401  (peft/__init__.py imports every tuner)

    start = time.perf_counter()
    tracker = LiveTracker()
    gpu = GpuRules(compute_capability, requested=sheet.attention, attention=rules.attention,
                   packed_sequences=rules.packed_sequences,
                   packed=bool(sheet.training and sheet.training.packing))
    from .build import moves_that_change_nothing_skipped
    fake = FakeTensorMode() if rules.fake else _NullContext()
    reads = _DataDependentReads() if rules.fake else _NullContext()
    notes: list[str] = []
    training = sheet.task != "inference"
    t = sheet.training
    with moves_that_change_nothing_skipped(), fake, tracker, gpu, reads, \
            torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        state: dict = {}
        known = _KnownStorages(state)
        with tracker.phase("load", known):
            hook = None if quantization is None else _quantizer(quantization, dtype, tracker)
            built = build_model(config_dict, dtype=dtype, attention=sheet.attention,
                                task=sheet.task, sheet=sheet,
                                gradient_checkpointing=bool(t and t.checkpoint_mode == "full"),
                                pause=tracker.paused if hook else None, after_build=hook)
            state["model"] = built.model
            state["lora"] = sheet.task in ("lora", "qlora")
        sizes, parameters = _own_parameters(built.model, state["lora"])
        notes += built.notes
        if training:
            trainable = _run_training(sheet, built, tracker, known, state, rules, notes,
                                      autocast)
        else:
            trainable = 0
            _run_inference(sheet, built, tracker, known, state, notes)
    if getattr(reads, "calls", 0) or getattr(reads, "shapes", 0):
        notes.append(reads.note())
    merged: dict[str, PhasePeak] = {}
    for p in tracker.peaks:
        if p.name not in merged or p.peak_bytes > merged[p.name].peak_bytes:
            merged[p.name] = p
    attention = [{"kernel": k, "reason": why, "calls": n} for (k, why), n in gpu.choices.items()]
    impl = getattr(built.config, "_attn_implementation", None)
    if impl == "eager":
        attention.append({"kernel": "eager", "calls": None, "reason": (
            "attention: eager (S × S scores kept)" if sheet.attention == "eager" else
            "the model soft-caps attention logits and SDPA has no soft-cap: transformers' "
            "eager attention (S × S scores kept)")})
    return PhaseRun(list(merged.values()), attention, notes, trainable,
                    time.perf_counter() - start, sizes, parameters, built.model_class,
                    built.vision_language)


def _own_parameters(model, lora: bool) -> tuple[list[tuple[int, int]], int]:
    """``(count, bytes)`` pairs of the model's own parameters (LoRA adapters excluded) and their
    elements (``Module.parameters`` yields a tied parameter once)."""
    from collections import Counter
    sizes: Counter = Counter()
    elements = 0
    for p in model.parameters():
        if lora and p.requires_grad:
            continue
        sizes[p.numel() * p.element_size()] += 1
        elements += p.numel()
    return sorted((n, b) for b, n in sizes.items()), elements


def _quantizer(q: Quantization, dtype: str, tracker: LiveTracker):
    def hook(model) -> list[str]:
        import torch

        from .build import TORCH_DTYPES
        from .quantized import FORMATS as BNB4, quantize_linears
        compute = getattr(torch, TORCH_DTYPES[dtype])
        if q.fmt in BNB4:
            layers, values = quantize_linears(model, compute_dtype=compute,
                                              double_quant=q.double_quant, converted=q.converted,
                                              track=tracker.track)
            notes = [f"bitsandbytes 4-bit: {layers} linear layers ({values} values) packed with "
                     f"{'nested ' if q.double_quant else ''}absmax at their stored sizes; each "
                     f"matmul dequantizes its layer to {dtype} (one-layer transient)"
                     + ("; converted while loading (one 16-bit matrix at a time)" if q.converted
                        else "")]
        else:
            from .quantized_layouts import PackedLinear

            def make(m):
                return PackedLinear(q.fmt, m.in_features, m.out_features, bias=m.bias,
                                    compute_dtype=compute, loaded=q.converted,
                                    group_size=q.group_size, block=q.block)
            layers, values = quantize_linears(model, compute_dtype=compute, double_quant=False,
                                              converted=q.converted, track=tracker.track,
                                              make=make)
            how = {"int8": "int8 weight + fp32 SCB row scales; each matmul quantizes its input "
                           "(int8 T×in + fp32 T) into int32 and fp16 T×out transients",
                   "fp8": f"float8_e4m3fn weight + fp32 weight_scale_inv per {q.block[0]}×"
                          f"{q.block[1]} block; block-wise kernel (no matmul transient)",
                   "gptq-int4": f"int32 qweight/qzeros + fp16 scales (group {q.group_size}) + "
                                "int32 g_idx; fused kernel (no dequantization transient)",
                   "awq-int4": f"int32 qweight/qzeros + fp16 scales (group {q.group_size}); "
                               "fused kernel (no dequantization transient)"}[q.fmt]
            notes = [f"{q.fmt}: {layers} linear layers ({values} values) as stored: {how}"
                     + ("; converted while loading (one 16-bit matrix at a time)" if q.converted
                        else "")]
        if q.prepare_kbit:
            # peft prepare_model_for_kbit_training: every 16-bit parameter kept beside the
            # 4-bit layers is cast to fp32 (param.data = param.data.to(torch.float32))
            for p in model.parameters():
                if p.dtype in (torch.float16, torch.bfloat16):
                    p.data = p.data.to(torch.float32)
            notes.append("prepare_model_for_kbit_training: kept 16-bit parameters cast to fp32")
        return notes
    return hook


def _data_dependent_reads_mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class DataDependentReads(TorchDispatchMode):
        """Answers a read of a fake tensor's value (``.item()``, ``bool(t)``,
        ``aten._local_scalar_dense``) that FakeTensorMode cannot give (it keeps the value of a
        tensor made from a Python number only) with 0 / False: the
        inputs are all token 0, so a count of image or special tokens is 0 and a check for
        NaN is False. Counted, and said in a note."""

        calls = 0
        shapes = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            import torch
            from torch._subclasses.fake_tensor import (DataDependentOutputException,
                                                       DynamicOutputShapeException)
            if func in _LARGEST_OUTPUT:
                try:
                    return func(*args, **(kwargs or {}))
                except DynamicOutputShapeException:
                    self.shapes += 1
                    shape, dtype = _LARGEST_OUTPUT[func](*args)
                    return torch.empty(shape, dtype=dtype, device=args[0].device)
            if func is torch.ops.aten.index.Tensor:
                try:
                    return func(*args, **(kwargs or {}))
                except DynamicOutputShapeException:
                    # x[mask]: every element of the mask selected (its largest output), as
                    # one integer index per mask dimension of the mask's size
                    self.shapes += 1
                    return func(args[0], _bool_as_int_indices(args[1]))
            if func is not torch.ops.aten._local_scalar_dense.default:
                return func(*args, **(kwargs or {}))
            try:  # a fake tensor made from a Python number keeps its value
                return func(*args, **(kwargs or {}))
            except DataDependentOutputException:
                self.calls += 1
                t = args[0]
                return False if t.dtype == torch.bool else (0.0 if t.is_floating_point() else 0)

        def note(self) -> str:
            parts = []
            if self.calls:
                parts.append(f"{self.calls} read(s) of a tensor's value (.item(), a tensor's "
                             "truth) answered 0 / False: fake tensors have no values, and the "
                             "inputs are all token 0 (no image or special token)")
            if self.shapes:
                parts.append(f"{self.shapes} op(s) whose output size depends on values "
                             "(nonzero, masked_select) given their largest output (every "
                             "element selected): an upper bound of what they hold")
            return "; ".join(parts)

    import torch
    aten = torch.ops.aten
    global _LARGEST_OUTPUT
    _LARGEST_OUTPUT = {
        # nonzero: one row of indices per element at most (every element non-zero)
        aten.nonzero.default: lambda t, *a: ((t.numel(), t.dim()), torch.int64),
        # masked_select: at most every element of the broadcast input
        aten.masked_select.default: lambda t, m, *a: (
            (max(t.numel(), m.numel()),), t.dtype),
    }
    return DataDependentReads


def _bool_as_int_indices(indices: list) -> list:
    """``aten.index.Tensor``'s indices with each boolean mask of k dimensions replaced by k
    int64 index tensors of the mask's element count (the selection of every element)."""
    import torch
    out: list = []
    for idx in indices:
        if idx is not None and idx.dtype in (torch.bool, torch.uint8):
            n = idx.numel()
            out += [torch.zeros((n,), dtype=torch.int64, device=idx.device)] * idx.dim()
        else:
            out.append(idx)
    return out


_LARGEST_OUTPUT: dict = {}
"""Ops whose output size depends on values → their largest output ``(shape, dtype)``."""


def _DataDependentReads():
    return _data_dependent_reads_mode()()


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


class _KnownStorages:
    """Names the storages the run can name, when a phase closes (see ``tracker.KnownStorages``)."""

    def __init__(self, state: dict) -> None:
        self.state = state

    def __call__(self) -> dict[int, str]:
        out: dict[int, str] = {}
        model = self.state.get("model")
        lora = self.state.get("lora", False)
        if model is not None:
            for buf in model.buffers():
                out[id(buf.untyped_storage())] = "buffers"
            for mod in model.modules():
                for name in getattr(mod, "metadata_names", ()):
                    buf = getattr(mod, name, None)
                    if buf is not None:
                        out[id(buf.untyped_storage())] = "quantization_metadata"
            for p in model.parameters():
                cat = "lora_adapters" if lora and p.requires_grad else "parameters"
                out[id(p.untyped_storage())] = cat
                if p.grad is not None:
                    out[id(p.grad.untyped_storage())] = "gradients"
        opt = self.state.get("optimizer")
        if opt is not None:
            for value in _tensors(opt.state):
                out.setdefault(id(value.untyped_storage()), "optimizer_states")
        cache = self.state.get("cache")
        if cache is not None and hasattr(cache, "layers"):
            for layer in cache.layers:
                for name in ("keys", "values"):
                    kv = getattr(layer, name, None)
                    if kv is not None and hasattr(kv, "untyped_storage"):
                        out[id(kv.untyped_storage())] = "kv_cache"
                # transformers 5.24 cache_utils.LinearAttentionLayer: per-sequence states of the
                # Mamba / linear-attention layers, dicts of state index → tensor
                for name in ("conv_states", "recurrent_states"):
                    for state in (getattr(layer, name, None) or {}).values():
                        if state is not None and hasattr(state, "untyped_storage"):
                            out[id(state.untyped_storage())] = "recurrent_state"
        elif cache is not None:  # a model's own cache class: every tensor it holds
            for value in _tensors(vars(cache)):
                out[id(value.untyped_storage())] = "kv_cache"
        return out


def _tensors(obj):
    import torch
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _tensors(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _tensors(v)


def _run_training(sheet, built, tracker, known, state, rules, notes, autocast) -> int:
    from contextlib import nullcontext

    import torch

    from .build import TORCH_DTYPES

    def amp():
        if autocast is None:
            return nullcontext()
        return torch.autocast("cpu", dtype=getattr(torch, TORCH_DTYPES[autocast]))

    if autocast is not None:
        notes.append(f"amp: forward under torch.autocast({autocast}); CPU autocast's op lists "
                     "are used (matmul/linear/SDPA cast down as on CUDA; CUDA's fp32-forced ops "
                     "that the model does not already run in fp32 may differ)")

    from .optimizers import make_optimizer
    t = sheet.training
    model = built.model
    state["lora"] = sheet.task in ("lora", "qlora")
    params = [p for p in model.parameters() if p.requires_grad]
    trainable = sum(p.numel() for p in params)
    impl = t.optimizer_impl if rules.optimizer else "cpu-default"
    micro = 2 if t.gradient_accumulation > 1 else 1

    from .losses import loss_note, training_loss
    if t.loss != "standard":
        notes.append(f"loss {t.loss}: {loss_note(t.loss, sheet.stack.framework)}")
    if t.packing:
        notes.append("packing: two documents per sequence (position_ids restart halfway), so "
                     "transformers builds its packed-sequence mask")

    def micro_steps() -> None:
        for _ in range(micro):
            with tracker.phase("forward", known):
                ids = torch.zeros((t.microbatch, t.sequence_length), dtype=torch.long)
                labels = ids.clone()
                with amp():
                    loss, kept = training_loss(model, sheet, ids, labels)
            with tracker.phase("backward", known):
                (loss / t.gradient_accumulation).backward()
                del loss, kept, ids, labels

    micro_steps()
    with tracker.phase("optimizer_step", known):
        if impl == "cpu-default":
            opt = torch.optim.AdamW(params, lr=1e-5) if t.optimizer.startswith(
                ("adamw", "paged-adamw-32")) else make_optimizer(t.optimizer, params, "for-loop")
        else:
            opt = make_optimizer(t.optimizer, params, impl)
        state["optimizer"] = opt
        opt.step()
        opt.zero_grad(set_to_none=True)
    # the second step's forward and backward run with the optimizer states live (the steady
    # state of every later step); each phase keeps its largest peak
    micro_steps()
    with tracker.phase("optimizer_step", known):
        opt.step()
        opt.zero_grad(set_to_none=True)
    notes.append("two optimizer steps ran: forward and backward peaks are those of the steady "
                 "state (optimizer states live), the optimizer_step peak the larger of the first "
                 "(states created) and the second")
    if micro > 1:
        notes.append(f"gradient_accumulation {t.gradient_accumulation}: the second micro-step of "
                     "each step ran with the first one's gradients live (later ones repeat it)")
    notes.append(f"optimizer {t.optimizer}, implementation "
                 f"{impl if impl != 'cpu-default' else 'PyTorch CPU default (per-tensor loop)'}")
    vmb = t.validation_microbatch or t.microbatch
    model.eval()
    with tracker.phase("validation", known), torch.no_grad():
        ids = torch.zeros((vmb, t.sequence_length), dtype=torch.long)
        labels = ids.clone()
        with amp():
            loss, kept = training_loss(model, sheet, ids, labels, validation=True)
        del loss, kept, ids, labels
    model.train()
    return trainable


def _refuses_the_cache(exc: BaseException) -> bool:
    """The model's forward refused a ``DynamicCache`` (it keeps a cache class of its own)."""
    text = str(exc)
    return ("cache of its own" in text or "Cache' object has no attribute" in text
            or "not compatible with `cache`" in text)


def _run_inference(sheet, built, tracker, known, state, notes) -> None:
    import torch
    from transformers import DynamicCache, StaticCache

    inf = sheet.inference
    model = built.model
    model.eval()
    # the decoder's config holds the layers a cache is made for (a composite config's text part)
    config = built.config.get_text_config(decoder=True)
    full = inf.prompt_tokens + inf.new_tokens
    keep = 0 if inf.logits == "all" else 1
    static = inf.cache == "static"

    own = {"cache": False}  # the model makes its own cache class (MiniMax, xLSTM)

    def step(ids, cache):
        out = model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=keep)
        # generation/utils.py: next_token_logits = outputs.logits[:, -1, :].to(copy=True,
        # dtype=torch.float32), then the argmax of greedy decoding
        nxt = out.logits[:, -1, :].to(copy=True, dtype=torch.float32)
        if own["cache"]:
            state["cache"] = out.cache
        del out
        return nxt.argmax(dim=-1)

    def new_cache():
        if own["cache"]:
            return None  # the model makes it on its first step (step() keeps it)
        return DynamicCache(config=config)

    with torch.no_grad():
        with tracker.phase("prefill", known):
            cache = (StaticCache(config=config, max_cache_len=full) if static
                     else DynamicCache(config=config))
            state["cache"] = cache
            ids = torch.zeros((inf.concurrency, inf.prompt_tokens), dtype=torch.long)
            try:
                tok = step(ids, cache)
            except (ValueError, AttributeError) as exc:
                if static or not _refuses_the_cache(exc):
                    raise
                # transformers' class keeps its own cache type: let it make one, as generate()
                # does (GenerationMixin._prepare_cache_for_generation skips such models)
                own["cache"] = True
                notes.append(f"{type(model).__name__} makes its own cache class "
                             f"({type(exc).__name__}: {exc}); it was let make it")
                state["cache"] = cache = None
                tok = step(ids, None)
            del ids
        if not static:
            # a fresh cache holding full − 1 tokens, outside any phase, so that the measured
            # decode step reaches the full length
            del tok
            state["cache"] = cache = None
            cache = new_cache()
            state["cache"] = cache
            if full - 1 > 0:
                step(torch.zeros((inf.concurrency, full - 1), dtype=torch.long), cache)
            if own["cache"]:
                cache = state["cache"]
        with tracker.phase("decode", known):
            ids = torch.zeros((inf.concurrency, 1), dtype=torch.long)
            tok = step(ids, cache)
            del ids, tok
