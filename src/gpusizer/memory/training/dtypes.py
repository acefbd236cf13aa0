"""The byte widths one training run uses, decided once: compute, trained, residual, outputs.

Mixed precision (``training.precision: amp``) keeps trained parameters, their gradients and
optimizer states in fp32 and computes in the compute dtype under ``torch.autocast`` (PyTorch
docs, Automatic Mixed Precision); ``pure`` keeps everything in the compute dtype. QLoRA's
``prepare_model_for_kbit_training`` (``peft/utils/other.py``) casts every non-quantized
parameter to fp32, which promotes the residual stream, and bitsandbytes linears
(``Linear4bit``/``Linear8bitLt``) return their input's dtype.

``precision: master`` — and ``amp`` under zero1/2/3 and a multi-GPU fsdp, whose mixed
precision it is — is the frameworks' mixed precision (ZeRO paper §3.1 "mixed-precision
training"; DeepSpeed ``bf16``/``fp16`` configs, Megatron's distributed optimizer): parameters and
gradients in the 16-bit compute dtype, an fp32 master copy and fp32 optimizer states beside
them, no autocast. Under FSDP (``MixedPrecision(param_dtype=…)``) the sharded flat parameter
itself stays fp32 — it is the master copy — and is gathered in the compute dtype, so the trained
parameters and their sharded gradients are fp32 there.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...formats import weight_format
from ...sheet import Sheet
from ..weights import DTYPE_BYTES
from .sharding import DEEPSPEED_STRATEGIES

__all__ = ["TrainingDtypes", "training_dtypes"]


@dataclass(frozen=True)
class TrainingDtypes:
    """Bytes per value of each kind of tensor a training step makes.

    Attributes:
        compute_dtype: the matmul dtype (``bf16``…).
        compute_bytes: its bytes per value (c in the formulas).
        trainable_dtype: dtype of trained parameters, gradients and optimizer states
            (``fp32`` under amp, else the compute dtype).
        trainable_bytes: its bytes per value.
        amp: precision amp (autocast decides the activations' dtypes; over fp32 trained
            parameters unless ``master``).
        prepare_kbit: QLoRA with ``prepare_model_for_kbit_training`` (the sheet's
            ``training.prepare_kbit_training`` unless false): the kept modules are fp32.
        residual_bytes: the residual stream between layers (4 once prepare_kbit makes the
            embeddings and norms fp32, else c).
        linear_output_bytes: outputs of the decoder linears (4 when a bitsandbytes linear gets
            an fp32 input, else c).
        attention_bytes: what the attention kernel keeps (the projections' dtype without
            autocast, c when autocast casts the kernel's inputs).
        logits_bytes: the lm_head output (4 when the fp32 lm_head runs without autocast).
        master: precision master (16-bit compute on parameters kept with an fp32 master copy).
        state_bytes: the optimizer states' dtype width (4 under amp and master, else
            trainable_bytes).
        master_bytes: bytes per trained parameter of a separate fp32 master copy (4 under
            master outside FSDP, whose fp32 shard is the parameter itself; else 0).
    """

    compute_dtype: str
    compute_bytes: int
    trainable_dtype: str
    trainable_bytes: int
    amp: bool
    prepare_kbit: bool
    residual_bytes: int
    linear_output_bytes: int
    attention_bytes: int
    logits_bytes: int
    master: bool = False
    state_bytes: int = 0
    master_bytes: int = 0


def training_dtypes(sheet: Sheet, *, runs: str, compute_dtype: str) -> TrainingDtypes:
    """The widths for ``sheet`` (a training sheet) with weights running as ``runs``."""
    training = sheet.training
    compute = DTYPE_BYTES[compute_dtype]
    placement = sheet.placement
    fsdp = placement.strategy == "fsdp" and placement.gpus > 1
    # DeepSpeed's and FSDP's mixed precision is master weights, not torch.autocast over fp32
    # parameters: amp under them is sized as the framework runs it
    framework_mixed = placement.strategy in DEEPSPEED_STRATEGIES or fsdp
    amp = training.precision == "amp"
    master = training.precision == "master" or (amp and framework_mixed)
    trained = 4 if ((amp and not master) or (master and fsdp)) else compute
    prepare = sheet.task == "qlora" and training.prepare_kbit_training is not False
    # bitsandbytes linears return their input's dtype: fp32 once the residual stream is fp32
    linear_output = 4 if (prepare and weight_format(runs).outputs_follow_input_dtype) else compute
    return TrainingDtypes(
        compute_dtype=compute_dtype, compute_bytes=compute,
        trainable_dtype="fp32" if trained == 4 else compute_dtype, trainable_bytes=trained,
        amp=amp, prepare_kbit=prepare, residual_bytes=4 if prepare else compute,
        linear_output_bytes=linear_output,
        # without autocast the attention kernel receives those fp32 projections as they are,
        # and the fp32 lm_head makes fp32 logits
        attention_bytes=linear_output if not amp else compute,
        logits_bytes=4 if (prepare and not amp) else compute,
        master=master, state_bytes=4 if (amp or master) else compute,
        master_bytes=4 if (master and not fsdp) else 0)
