"""What trains: LoRA adapters (lora / qlora) or every parameter (full), and which layer inputs
autograd therefore saves.

LoRA (Hu et al. 2021 §4.1) trains ``r × (in + out)`` per adapted matrix (``memory/lora.py``);
full fine-tuning trains the whole model, each matrix one tensor (routed experts stacked per
layer, as transformers v5 stores them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...model.facts import ModelFacts
from ...sheet import Sheet, Training
from ..activations import TrainedParts
from ..items import Item
from ..lora import LoraAdapters, lora_adapters
from ..optimizer_states import TensorShape
from .dtypes import TrainingDtypes
from .sharding import Sharding, divided_text

__all__ = ["Trainable", "trainable", "trained_parts", "adapter_items"]


@dataclass(frozen=True)
class Trainable:
    """The parameters one training sheet updates.

    Attributes:
        full: every parameter trains (task full).
        parameters: parameters the optimizer updates (whole model).
        tensors: their tensors as ``(count, rows, cols)``, for per-tensor optimizer rules.
        adapters: the LoRA adapters, or None for full fine-tuning.
        parts: which layer inputs autograd saves because of what trains.
    """

    full: bool
    parameters: int
    tensors: tuple[TensorShape, ...]
    adapters: LoraAdapters | None
    parts: TrainedParts


def trainable(sheet: Sheet, facts: ModelFacts) -> Trainable:
    """What ``sheet`` trains on ``facts``.

    Raises:
        SheetError: LoRA targets that match no module (``memory/lora.py``).
    """
    if sheet.task == "full":
        return Trainable(True, facts.architecture.total_parameters, _full_tensors(facts), None,
                         trained_parts(None))
    lora = sheet.training.lora
    adapters = lora_adapters(facts, lora.rank, lora.targets)
    return Trainable(False, adapters.parameters, adapters.tensors, adapters,
                     trained_parts(adapters))


def _full_tensors(facts: ModelFacts) -> tuple[TensorShape, ...]:
    """Trainable tensors of full fine-tuning: each matrix (routed experts stacked per layer, as
    transformers v5 stores them); vectors (norms, biases) as hidden-wide tensors."""
    arch = facts.architecture
    hidden = arch.hidden_size
    out: list[TensorShape] = []
    for group in arch.params:
        if group.shapes:
            stack = arch.moe.num_experts if (group.role == "expert_linear" and arch.moe) else 1
            out += [(max(1, n // stack), stack * rows, cols) for n, rows, cols in group.shapes]
        elif group.count >= hidden:
            out.append((max(1, group.count // hidden), hidden, 1))
        else:
            out.append((1, group.count, 1))
    return tuple(out)


def trained_parts(adapters: LoraAdapters | None) -> TrainedParts:
    """Which parts of a layer save their input, from the adapted modules' roles (the family
    declares them: ``LinearModule.role``); full fine-tuning (``adapters`` None) trains all.

    ``qkv``: an ``attention_in`` module is adapted (it reads the attention norm's output);
    ``o``: ``attention_out``; ``gate_up``: ``mlp_in`` or ``shared_expert_in`` (both read the MLP
    norm's output); ``down``: ``mlp_out``; ``experts``: ``expert``. The reader counts are the
    adapted ``attention_in`` and (dense) ``mlp_in`` modules.
    """
    if adapters is None:
        return TrainedParts(full=True, qkv=True, o=True, gate_up=True, down=True, experts=True)
    roles = [m.role for m in adapters.modules]
    attention_readers = roles.count("attention_in")
    mlp_readers = roles.count("mlp_in")
    return TrainedParts(full=False, qkv=attention_readers > 0, o="attention_out" in roles,
                        gate_up=mlp_readers > 0 or "shared_expert_in" in roles,
                        down="mlp_out" in roles, experts="expert" in roles,
                        qkv_readers=attention_readers, gate_up_readers=mlp_readers)


def adapter_items(training: Training, trained: Trainable, dtypes: TrainingDtypes,
                  shards: Sharding, phases: tuple[str, ...]
                  ) -> tuple[list[Item], list[str], int]:
    """The ``lora_adapters`` item (trainable × trained bytes ÷ the parameter shard) and its
    notes, and the bytes per GPU it leaves in host RAM (FSDP / ZeRO-3 parameter offload keeps
    the adapters' shards there too); nothing for full fine-tuning."""
    adapters = trained.adapters
    if adapters is None:
        return [], [], 0
    rank, width = training.lora.rank, dtypes.trainable_bytes
    size = trained.parameters * width // shards.parameters
    host = size if shards.parameters_offloaded else 0
    item = Item("lora_adapters", size - host, "estimated",
                phases, "LoRA, Hu et al. 2021 §4.1 (r × (in + out) per adapted matrix); PEFT "
                "target matching (gpusizer/memory/lora.py)",
                f"rank {rank}: {adapters.formula} × {width} B ({dtypes.trainable_dtype})"
                + divided_text(shards.parameters)
                + (f" = {host} B in host RAM (parameter offload)" if host else ""))
    notes = []
    small = [m.path for m in adapters.modules if rank >= min(m.rows, m.cols)]
    if small:
        notes.append(f"LoRA rank {rank} is not below the smallest side of {', '.join(small)}: "
                     "those adapters hold at least as many parameters as a full update of the "
                     "matrix (sized as asked)")
    if not dtypes.amp and dtypes.compute_bytes < 4:
        notes.append("precision pure keeps LoRA adapters in the compute dtype; PEFT's default "
                     "(autocast_adapter_dtype=True) upcasts them to fp32, which is precision amp")
    return [item], notes, host
