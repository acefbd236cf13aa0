"""Adaptation on one rung (R9, R12): forward, backward (× gradient_accumulation), the first
optimizer update, a validation forward, and the export when the sheet asks for one.

- ``lora``: PEFT LoRA on the sheet's targets (``default``: PEFT's table for the family); the
  adapters are in the compute dtype for ``precision: pure`` (``autocast_adapter_dtype=False``)
  and in fp32 under ``torch.autocast`` for ``amp``.
- ``full``: every parameter trained (``amp``: fp32 parameters, autocast to the sheet's dtype).
- ``qlora``: LoRA on a bitsandbytes 4-bit base (``measure.quantized_bases``), after PEFT's
  ``prepare_model_for_kbit_training`` unless ``training.prepare_kbit_training: false`` (TRL's
  SFTTrainer calls it on a quantized model). 8-bit / paged optimizers are
  ``bitsandbytes.optim``'s (``quantized_bases.BNB_OPTIMIZERS``); both need bitsandbytes on
  CUDA, checked before the run (``model_loader.preflight``).

Labels are the inputs (causal LM loss over every position). Executed dimensions come from the
shapes the embedding received: ``sequence_length`` and ``microbatch`` of every training forward
(each must equal the plan), ``gradient_accumulation`` as forward/backward pairs run,
``optimizer_steps``, and ``validation_microbatch``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from ..errors import MeasureUnsupportedError
from ..sheet import Sheet
from .faults import Injection
from .phases import PhaseRunner
from .quantized_bases import BNB_OPTIMIZERS
from .shapes import InputProbe

__all__ = ["prepare_training", "build_optimizer", "run_training"]

_COMPUTE = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def prepare_training(model, sheet: Sheet):
    """Make the trained parameters trainable (the sheet's PEFT adapters, ``training.peft``, or
    everything); returns the model.

    qlora runs PEFT's ``prepare_model_for_kbit_training`` first (it upcasts the kept modules
    to fp32 and enables input gradients for checkpointing), unless the sheet says
    ``prepare_kbit_training: false``.

    Raises:
        MeasureUnsupportedError: a chunked or fused loss, packing, selective checkpointing or
            offload without checkpointing (the harness runs none of them).
    """
    t = sheet.training
    unrun = [(f, v) for f, v, asked in (
        ("training.loss", t.loss, t.loss != "standard"),
        ("training.packing", True, t.packing),
        ("training.checkpointing.mode", "selective", t.checkpoint_mode == "selective"),
        ("training.checkpointing.offload", True,
         t.checkpointing.offload and t.checkpoint_mode != "full")) if asked]
    if unrun:
        raise MeasureUnsupportedError("the harness runs transformers' own loss, unpacked "
                                      "sequences and whole-layer checkpointing (use gpusizer "
                                      "estimate)", field=unrun[0][0], value=unrun[0][1])
    full = t.checkpoint_mode == "full"
    if sheet.task == "qlora" and t.prepare_kbit_training is not False:
        from peft import prepare_model_for_kbit_training
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=full,
            gradient_checkpointing_kwargs={"use_reentrant": False})
        if full and (t.checkpointing.every != 1 or t.checkpointing.offload):
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False},
                every_n_layers=t.checkpointing.every, offload=t.checkpointing.offload)
    elif full:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False},
                                            every_n_layers=t.checkpointing.every,
                                            offload=t.checkpointing.offload)
    if sheet.task in ("lora", "qlora"):
        import peft
        from peft import get_peft_model

        from ..memory.training.peft_methods import peft_config_kwargs
        # the sheet's PEFT method, its config built from the registry estimate counts with
        config_class, kw = peft_config_kwargs(t)
        if t.modules_to_save:
            kw["modules_to_save"] = list(t.modules_to_save)
        cfg = getattr(peft, config_class)(task_type="CAUSAL_LM", **kw)
        if full:
            model.enable_input_require_grads()
        model = get_peft_model(model, cfg, autocast_adapter_dtype=t.precision == "amp")
    else:
        for p in model.parameters():
            p.requires_grad_(True)
    model.train()
    return model


def build_optimizer(params, sheet: Sheet) -> torch.optim.Optimizer:
    """The sheet's optimizer over the trained parameters.

    Raises:
        MeasureUnsupportedError: an optimizer neither torch.optim nor bitsandbytes.optim has.
    """
    t = sheet.training
    params = [p for p in params if p.requires_grad]
    impl = {"foreach": {"foreach": True}, "fused": {"fused": True},
            "for-loop": {"foreach": False}}[t.optimizer_impl]
    if t.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=1e-5, **impl)
    if t.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-5, **impl)
    if t.optimizer == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9, **impl)
    if t.optimizer == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2,
                                     **({"foreach": impl.get("foreach", False)}
                                        if "fused" not in impl else {}))
    if t.optimizer in BNB_OPTIMIZERS:
        import bitsandbytes as bnb   # checked present by model_loader.preflight
        return getattr(bnb.optim, BNB_OPTIMIZERS[t.optimizer])(params, lr=1e-5)
    raise MeasureUnsupportedError(f"optimizer {t.optimizer}: this harness runs adamw, sgd, "
                                  f"sgd-momentum, adafactor and {', '.join(BNB_OPTIMIZERS)}",
                                  field="training.optimizer", value=t.optimizer)


def _autocast(sheet: Sheet, device: torch.device, compute_name: str):
    """``torch.autocast`` to the compute dtype under ``precision: amp`` (none in fp32 or pure)."""
    if sheet.training.precision != "amp" or compute_name == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=_COMPUTE[compute_name])


def run_training(model, sheet: Sheet, dims: dict[str, int], phases: PhaseRunner,
                 device: torch.device, compute_name: str, export_dir: Path,
                 inject: Injection | None = None,
                 executed: dict[str, int] | None = None) -> dict[str, int]:
    """Run one optimizer update's worth of phases at ``dims``; returns the executed dimensions.

    ``executed`` (when given) is filled as the phases go, so a failure still leaves what ran.

    ``model`` is already prepared (:func:`prepare_training`) and may be DDP-wrapped.

    Raises:
        PhaseFailure: a phase ran out of memory or failed.
    """
    t = sheet.training
    seq, mb = dims["sequence_length"], dims["microbatch"]
    fed_seq = seq - 1 if inject and inject.at("truncate", "sequence_length") else seq
    fed_mb = mb - 1 if inject and inject.at("truncate", "microbatch") and mb > 1 else mb
    sheet_vmb = t.validation_microbatch or t.microbatch
    vmb = sheet_vmb if mb == t.microbatch else min(sheet_vmb, mb)  # lower rungs scale it down
    ddp = torch.nn.parallel.DistributedDataParallel
    inner = model.module if isinstance(model, ddp) else model
    vocab = int(inner.config.get_text_config().vocab_size)
    gen = torch.Generator(device="cpu").manual_seed(0)
    probe = InputProbe(inner)
    optimizer = build_optimizer(inner.parameters(), sheet)
    state: dict = {}
    train_calls, val_calls = [], []
    executed = {} if executed is None else executed

    def tally() -> None:
        seqs, mbs = {s for _, s in train_calls}, {b for b, _ in train_calls}
        executed.update(sequence_length=min(seqs) if seqs else 0,
                        microbatch=min(mbs) if mbs else 0,
                        gradient_accumulation=len(train_calls))
    try:
        for step in range(t.gradient_accumulation):
            ids = torch.randint(0, vocab, (fed_mb, fed_seq), generator=gen).to(device)

            def forward(ids=ids) -> None:
                with _autocast(sheet, device, compute_name):
                    out = model(input_ids=ids, labels=ids)
                state["loss"] = out.loss / t.gradient_accumulation
                del out

            def backward() -> None:
                state.pop("loss").backward()

            phases.run("forward", forward, step=step, planned=dims)
            train_calls += probe.take()
            tally()
            phases.run("backward", backward, step=step)
            probe.take()

        def optimizer_step() -> None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        phases.run("optimizer_step", optimizer_step)
        executed["optimizer_steps"] = 1
        val_ids = torch.randint(0, vocab, (vmb, fed_seq), generator=gen).to(device)

        def validation() -> None:
            inner.eval()
            with torch.no_grad(), _autocast(sheet, device, compute_name):
                out = model(input_ids=val_ids, labels=val_ids)
            state["val_loss"] = float(out.loss)
            del out
            inner.train()

        phases.run("validation", validation, validation_microbatch=vmb)
        val_calls = probe.take()
        if val_calls:
            executed["validation_microbatch"] = val_calls[0][0]
        if t.export != "none":
            def export() -> None:
                export_dir.mkdir(parents=True, exist_ok=True)
                if t.export == "adapter" and sheet.task == "lora":
                    inner.save_pretrained(str(export_dir), safe_serialization=True)
                elif t.export in ("merged", "full") and sheet.task == "lora":
                    merged = inner.merge_and_unload()
                    if t.export == "full":
                        merged.save_pretrained(str(export_dir), safe_serialization=True)
                else:
                    inner.save_pretrained(str(export_dir), safe_serialization=True)

            phases.run("export", export, export=t.export)
    finally:
        probe.remove()
        state.clear()
        del optimizer
    return executed
