"""Build the sheet's model from its config.json without weights: on fake tensors, no remote code.

The config comes from ``model.path`` (its config.json) or, for ``model.id``, from the bundled
registry (each entry keeps the whole config.json) or the Hub (one attempt, then its cache), as
``gpusizer.model.resolve.config_for_sheet`` reads it. The model class is transformers' own
(``AutoModelForCausalLM.from_config``, or ``AutoModelForImageTextToText`` for a vision-language
model: :func:`model_class_for`), so the traced code is the code a GPU run
executes; ``trust_remote_code`` is never passed (a ``model_type`` transformers does not ship is an
error). The sheet's PEFT method (``training.peft``, any of them, with ``modules_to_save``) is
added by PEFT itself (``get_peft_model``), its config built from the same registry the
estimate counts with (``memory/training/peft_methods.py`` ``peft_config_kwargs``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..model.resolve import config_for_sheet
from ..sheet import Sheet
from .errors import SimulationError

__all__ = ["load_config_dict", "TORCH_DTYPES", "attention_implementation", "build_model"]

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def load_config_dict(sheet: Sheet, *, base_dir: Path | None = None) -> tuple[dict, str]:
    """The model's config.json as a dict, with where it was read: ``model.path``, the bundled
    registry (whose entries keep the whole config.json, so this works offline), or the Hub
    (``gpusizer.model.resolve.config_for_sheet``).

    Raises:
        SimulationError: a bare ``model.parameters`` count (no architecture to run).
        ModelError: the folder has no readable config.json; a malformed ``model.id``.
        ModelNotFoundError: ``model.id`` unknown to the registry and the Hub (or not cached
            offline). HubError: the Hub cannot be reached (exit 1, as every command).
    """
    m = sheet.model
    if m.parameters is not None:
        raise SimulationError("a bare parameter count has no architecture to run; give model.id "
                              "or model.path (a folder with config.json)",
                              field="model.parameters", value=m.parameters)
    return config_for_sheet(sheet, base_dir=base_dir)


def attention_implementation(sheet_attention: str, config: dict) -> str:
    """transformers' ``attn_implementation`` for the sheet.

    ``eager`` → eager. ``sdpa`` and ``flash`` → ``sdpa`` (the simulator routes SDPA calls to the
    kernel the card runs; the flash-attn package's kernel allocates what SDPA's flash kernel
    allocates), except a model that soft-caps attention logits, which transformers' SDPA path
    refuses: eager.
    """
    if sheet_attention == "eager":
        return "eager"
    if config.get("attn_logit_softcapping") and sheet_attention != "flash":
        return "eager"
    return "sdpa"


@dataclass
class BuiltModel:
    """The model on fake tensors and what was done to build it.

    Attributes:
        model: the ``nn.Module`` (a PEFT model for LoRA).
        config: the transformers config object.
        notes: decisions taken (attention implementation, LoRA targets, MoE experts path).
        lora_targets: PEFT target modules, or None.
        model_class: the transformers class instantiated (``LlamaForCausalLM``).
        vision_language: an image-text-to-text model (its text tokens run, no image).
    """

    model: object
    config: object
    notes: list[str]
    lora_targets: list[str] | None = None
    model_class: str = ""
    vision_language: bool = False


def build_model(config_dict: dict, *, dtype: str, attention: str, task: str, sheet: Sheet,
                gradient_checkpointing: bool = False, pause=None,
                after_build=None) -> BuiltModel:
    """Instantiate the model with transformers (call it inside ``FakeTensorMode``).

    ``pause`` (a context manager) is held while transformers instantiates the model, and
    ``after_build(model)`` runs next, before LoRA: how 4-bit layers replace the 16-bit ones
    without the 16-bit model ever counting.

    Raises:
        SimulationError: transformers does not know the ``model_type`` (remote code is never
            run), or PEFT cannot place the LoRA adapters.
    """
    import torch
    from transformers import AutoConfig

    cfg = dict(config_dict)
    cfg.pop("auto_map", None)
    model_type = cfg.get("model_type")
    cfg.pop("quantization_config", None)
    try:
        config = AutoConfig.for_model(**cfg)
    except (ValueError, KeyError) as exc:
        raise SimulationError(f"transformers cannot build model_type {model_type!r} without remote "
                              f"code ({exc}); gpusizer never runs remote code",
                              field="model_type", value=model_type) from None
    auto, vision_language = model_class_for(model_type)
    notes = []
    impl = attention_implementation(attention, cfg)
    config._attn_implementation = impl
    notes.append(f"transformers attn_implementation={impl!r}")
    text = config.get_text_config()
    experts = None
    if getattr(text, "num_experts", None) or getattr(text, "num_local_experts", None) or \
            getattr(text, "n_routed_experts", None):
        config._experts_implementation = experts = "grouped_mm"
        notes.append("MoE experts run transformers' grouped_mm path (the CUDA default on sm80+): "
                     "it processes tokens × top_k rows whatever the routing, so the uniform top-k "
                     "routing assumed here and any real routing give the same tensor sizes")
    config.use_cache = task == "inference"
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    from contextlib import nullcontext
    model = None
    while model is None:
        try:
            with pause() if pause else nullcontext():
                model = auto.from_config(config, dtype=torch_dtype)
        except ValueError as exc:
            if "does not support setting experts implementation" in str(exc) and experts:
                # a class without transformers' pluggable experts: its own MoE code runs
                config._experts_implementation = None
                experts = False
                notes[-1] = (f"MoE experts: transformers' {model_type} class has no pluggable "
                             "experts implementation; its own MoE code runs")
                continue
            if impl != "sdpa" or "does not support an attention implementation" not in str(exc) \
                    or config._attn_implementation == "eager":
                raise
            # transformers refuses SDPA for this class (e.g. gpt-oss attention sinks): eager
            config._attn_implementation = "eager"
            notes.append(f"transformers has no SDPA path for {model_type}: eager attention "
                         "(S × S scores kept)")
    if after_build is not None:
        notes += after_build(model)
    if task != "inference" and gradient_checkpointing:
        every = sheet.training.checkpointing.every if sheet.training is not None else 1
        model.activation_checkpointing_enable(every_n_layers=every)
        notes.append("gradient checkpointing: transformers' default (non-reentrant "
                     "torch.utils.checkpoint per decoder layer)"
                     + (f", every {every} layers (every_n_layers)" if every > 1 else ""))
    targets = None
    if task in ("lora", "qlora"):
        model, targets = _add_peft(model, sheet, torch_dtype, notes)
    elif task == "full":
        model.train()
    return BuiltModel(model, config, notes, targets, type(model.get_base_model() if targets
                                                           else model).__name__,
                      vision_language)


def model_class_for(model_type: object):
    """transformers' auto class that builds ``model_type``, and whether it is a
    vision-language model: ``AutoModelForCausalLM`` when its causal-LM mapping has the type,
    else ``AutoModelForImageTextToText`` (``MODEL_FOR_*_MAPPING_NAMES`` of
    ``transformers/models/auto/modeling_auto.py``, the classes config.json's ``architectures``
    name).

    Raises:
        SimulationError: neither mapping has the type (an encoder, a speech model …).
    """
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
    vision_language = model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    if model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return AutoModelForCausalLM, vision_language
    if vision_language:
        return AutoModelForImageTextToText, True
    raise SimulationError(f"transformers has no causal-LM nor image-text-to-text class for "
                          f"model_type {model_type!r}: simulate runs generative language models "
                          "(AutoModelForCausalLM, AutoModelForImageTextToText)",
                          field="model_type", value=model_type)


@contextmanager
def moves_that_change_nothing_skipped() -> Iterator[None]:
    """``Module.to(device, dtype)`` returns the module untouched when every parameter and buffer
    already has that device and dtype (as on a GPU, where it changes nothing); a dtype change
    of fake parameters replaces them (:func:`_cast_fake`); anything else runs as usual.

    Fake parameters are always swapped by ``Module._apply`` (``torch.utils.swap_tensors``),
    which fails for them (FakeTensorMode keeps a weak reference to the new tensor), even for a
    move that changes nothing; models that cast a submodule in ``__init__`` (an fp32 norm,
    ``.to(dtype=torch.float32)``) and PEFT's adapter moves need the cast."""
    from itertools import chain
    from unittest import mock

    import torch
    from torch._subclasses.fake_tensor import FakeTensor
    original = torch.nn.Module.to

    def to(self, *args, **kwargs):
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        tensors = list(chain(self.parameters(), self.buffers()))
        if all(device is None or t.device == device for t in tensors):
            if all(dtype is None or not t.is_floating_point() or t.dtype == dtype
                   for t in tensors):
                return self
            if dtype is not None and any(isinstance(t, FakeTensor) for t in tensors):
                return _cast_fake(self, dtype)
        return original(self, *args, **kwargs)

    with mock.patch.object(torch.nn.Module, "to", to):
        yield


def _cast_fake(module, dtype):
    """Cast ``module``'s floating-point parameters and buffers to ``dtype`` by replacing them
    (what ``Module._apply`` does for a parameter whose tensor type changes), a tied parameter
    once; returns ``module``."""
    import torch
    done: dict[int, object] = {}
    for m in module.modules():
        for k, p in m._parameters.items():
            if p is None or not p.is_floating_point() or p.dtype == dtype:
                continue
            if id(p) not in done:
                with torch.no_grad():
                    done[id(p)] = torch.nn.Parameter(p.to(dtype), requires_grad=p.requires_grad)
            m._parameters[k] = done[id(p)]
        for k, b in m._buffers.items():
            if b is not None and b.is_floating_point() and b.dtype != dtype:
                m._buffers[k] = b.to(dtype)
    return module


_NOT_ON_FAKE_TENSORS = {
    "loha": "PEFT's LoHa forward applies the adapter only when torch.rand(1) > module_dropout "
            "(peft/tuners/loha/layer.py Linear.forward): a data-dependent branch fake tensors "
            "cannot take, so the adapters would be skipped",
    "lokr": "PEFT's LoKr forward applies the adapter only when torch.rand(1) > module_dropout "
            "(peft/tuners/lokr/layer.py Linear.forward): a data-dependent branch fake tensors "
            "cannot take, so the adapters would be skipped",
}
"""Methods simulate cannot run through PEFT on fake tensors, with the reason (``estimate`` sizes
them)."""


def _add_peft(model, sheet: Sheet, compute_dtype, notes: list[str]):
    """Wrap ``model`` with the sheet's PEFT method; returns the PEFT model and the adapted
    target modules (empty for prompt-learning methods).

    Raises:
        SimulationError: PEFT refuses the config on this model (it says why); a method or
            ``modules_to_save`` that cannot run on fake tensors (:data:`_NOT_ON_FAKE_TENSORS`).
    """
    import peft
    from peft import get_peft_model

    from ..memory.training.peft_methods import peft_config_kwargs
    training = sheet.training
    if training.peft in _NOT_ON_FAKE_TENSORS:
        raise SimulationError(f"simulate cannot run peft {training.peft}: "
                              f"{_NOT_ON_FAKE_TENSORS[training.peft]}; estimate sizes it",
                              field="training.peft", value=training.peft)
    if training.modules_to_save:
        raise SimulationError("simulate cannot run modules_to_save: PEFT deep-copies each "
                              "module (ModulesToSaveWrapper), and a deep copy of a fake tensor "
                              "lands in another FakeTensorMode; estimate sizes the copies",
                              field="training.modules_to_save",
                              value=list(training.modules_to_save))
    config_class, kw = peft_config_kwargs(training)
    if training.modules_to_save:
        kw["modules_to_save"] = list(training.modules_to_save)
    import torch
    from unittest import mock

    from peft.tuners.tuners_utils import BaseTunerLayer
    previous = torch.get_default_dtype()
    amp = training.precision == "amp"
    # PEFT makes the adapters in the default dtype, then moves them to the base layer's device
    # and dtype with Module.to() (and, by default, upcasts them to fp32), which cannot swap fake
    # parameters. There is one (CPU) device: make them in their final dtype directly, fp32
    # under amp (PEFT's autocast_adapter_dtype), the compute dtype under pure precision.
    torch.set_default_dtype(torch.float32 if amp else compute_dtype)
    no_move = mock.patch.object(BaseTunerLayer, "_move_adapter_to_device_of_base_layer",
                                lambda self, adapter_name, device=None: None)
    field = "training.lora.targets" if "lora_alpha" in kw else "training.peft_options"
    try:
        config = getattr(peft, config_class)(task_type="CAUSAL_LM", **kw)
        with moves_that_change_nothing_skipped(), no_move:
            peft_model = get_peft_model(model, config, autocast_adapter_dtype=False)
    except (ValueError, TypeError) as exc:
        raise SimulationError(f"PEFT cannot place {training.peft} adapters: {exc}",
                              field=field, value=kw.get("target_modules")) from None
    finally:
        torch.set_default_dtype(previous)
    targets = getattr(peft_model.peft_config["default"], "target_modules", None)
    placed = sorted(targets) if isinstance(targets, (set, list, tuple)) else []
    what = (f"rank {kw['r']}, alpha {kw['lora_alpha']}" if "lora_alpha" in kw else
            ", ".join(f"{k} {v}" for k, v in sorted(kw.items()) if k != "target_modules"))
    label = "LoRA" if training.peft == "lora" else f"{training.peft} ({config_class})"
    notes.append(f"{label} through PEFT: {what}, targets {placed}"
                 + (f", modules_to_save {kw['modules_to_save']}" if training.modules_to_save
                    else "")
                 + f", adapters in {'fp32 (amp)' if amp else 'the compute dtype (pure)'}")
    peft_model.train()
    return peft_model, placed
