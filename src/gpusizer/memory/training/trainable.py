"""What trains: PEFT adapters (lora / qlora, any ``training.peft`` method, with
``modules_to_save``) or every parameter (full), and which layer inputs autograd therefore saves.

LoRA (Hu et al. 2021 §4.1) trains ``r × (in + out)`` per adapted matrix (``memory/lora.py``);
the other PEFT methods are the entries of ``peft_methods.PEFT_METHODS``; full fine-tuning trains
the whole model, each matrix one tensor (routed experts stacked per layer, as transformers v5
stores them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import SheetError
from ...model.facts import ModelFacts
from ...sheet import Sheet, Training
from ..activations import TrainedParts
from ..items import Item
from ..optimizer_states import TensorShape
from .dtypes import TrainingDtypes
from .peft_methods import PEFT_METHODS, PeftAdapters, Step, peft_adapters
from .sharding import Sharding, divided_text

__all__ = ["Trainable", "SavedModules", "trainable", "trained_parts", "adapter_items",
           "method_items", "saved_modules"]


@dataclass(frozen=True)
class SavedModules:
    """PEFT's ``modules_to_save``: a trained copy of each named module (``ModulesToSaveWrapper``
    in peft/utils/other.py deep-copies the module; the original stays, frozen).

    Attributes:
        names: the sheet's names.
        parameters: elements of the copies (whole model).
        tensors: ``(count, rows, cols)`` of the copies, for per-tensor optimizer rules.
        formula: the sum with this sheet's numbers.
        lm_head: the output layer trains (its input, the final norm's output, is kept).
    """

    names: tuple[str, ...] = ()
    parameters: int = 0
    tensors: tuple[TensorShape, ...] = ()
    formula: str = ""
    lm_head: bool = False


@dataclass(frozen=True)
class Trainable:
    """The parameters one training sheet updates.

    Attributes:
        full: every parameter trains (task full).
        parameters: parameters the optimizer updates (whole model).
        tensors: their tensors as ``(count, rows, cols)``, for per-tensor optimizer rules.
        adapters: the PEFT adapters, or None for full fine-tuning.
        parts: which layer inputs autograd saves because of what trains.
        saved: the ``modules_to_save`` copies (counted in ``parameters`` and ``tensors``).
    """

    full: bool
    parameters: int
    tensors: tuple[TensorShape, ...]
    adapters: PeftAdapters | None
    parts: TrainedParts
    saved: SavedModules = SavedModules()

    @property
    def virtual_tokens(self) -> int:
        """Tokens a prompt-learning method prepends to every sequence (0 otherwise)."""
        return self.adapters.virtual_tokens if self.adapters else 0


def trainable(sheet: Sheet, facts: ModelFacts) -> Trainable:
    """What ``sheet`` trains on ``facts``.

    Raises:
        SheetError: LoRA targets that match no module (``memory/lora.py``).
    """
    if sheet.task == "full":
        return Trainable(True, facts.architecture.total_parameters, _full_tensors(facts), None,
                         trained_parts(None))
    adapters = peft_adapters(sheet.training, facts)
    saved = saved_modules(sheet.training.modules_to_save, facts, adapters)
    return Trainable(False, adapters.parameters + saved.parameters,
                     adapters.tensors + saved.tensors, adapters,
                     trained_parts(adapters, amp=sheet.training.precision == "amp"), saved)


def saved_modules(names: list[str], facts: ModelFacts, adapters: PeftAdapters) -> SavedModules:
    """The trained copies ``modules_to_save`` adds: ``lm_head`` (V × h, + bias), ``embed_tokens``
    (the token embedding, V × h; a tied lm_head gets a copy of its own), or a decoder linear
    PEFT does not adapt (one copy per layer). PEFT matches the names as module-path suffixes
    (peft/utils/other.py ``_set_trainable``); checked against ``get_peft_model`` in the tests.

    Raises:
        SheetError: a name that is no such module, or one the method adapts too.
    """
    field = "training.modules_to_save"
    arch = facts.architecture
    adapted = {m.path for m in adapters.modules}
    out: list[tuple[str, int, int, int]] = []
    for name in names:
        if name == "embed_tokens":
            out.append((name, 1, arch.vocab_size, arch.hidden_size))
            continue
        hit = [m for m in arch.modules if not m.experts
               and (m.path == name or m.path.endswith("." + name))]
        if not hit:
            known = ["embed_tokens"] + sorted({m.path for m in arch.modules if not m.experts})
            raise SheetError(f"no module of this {facts.model_type} model is named {name!r}; "
                             f"modules: {', '.join(known)}", field=field, value=name)
        both = [m.path for m in hit if m.path in adapted]
        if both:
            raise SheetError(f"{', '.join(both)} is adapted by peft {adapters.method} too: PEFT "
                             "then trains the copy and drops the adapter; list it in one place",
                             field=field, value=name)
        out += [(m.path, m.count, m.rows, m.cols) for m in hit]
    total = sum(n * r * c for _, n, r, c in out)
    formula = " + ".join(f"{p} {n} × {r} × {c}" for p, n, r, c in out) + f" = {total}"
    return SavedModules(tuple(names), total, tuple((n, r, c) for _, n, r, c in out),
                        formula if out else "", any(p == "lm_head" for p, *_ in out))


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


def trained_parts(adapters: PeftAdapters | None, *, amp: bool = False) -> TrainedParts:
    """Which parts of a layer save their input, from the adapted modules' roles (the family
    declares them: ``LinearModule.role``); full fine-tuning (``adapters`` None) trains all.

    ``qkv``: an ``attention_in`` module is adapted (it reads the attention norm's output);
    ``o``: ``attention_out``; ``gate_up``: ``mlp_in`` or ``shared_expert_in`` (both read the MLP
    norm's output); ``down``: ``mlp_out``; ``experts``: ``expert``. The reader counts are the
    adapted ``attention_in`` and (dense) ``mlp_in`` modules. Only the modules whose adapter
    keeps its input count (``ModuleShare.saves_input``; under ``amp`` none of a method that keeps
    a copy instead, ``PeftMethod.amp_copies_input``, whose copies are in its added memory).
    """
    if adapters is None:
        return TrainedParts(full=True, qkv=True, o=True, gate_up=True, down=True, experts=True)
    copies = amp and PEFT_METHODS[adapters.method].amp_copies_input
    roles = [s.module.role for s in adapters.shares if s.saves_input and not copies]
    attention_readers = roles.count("attention_in")
    mlp_readers = roles.count("mlp_in")
    return TrainedParts(full=False, qkv=attention_readers > 0, o="attention_out" in roles,
                        gate_up=mlp_readers > 0 or "shared_expert_in" in roles,
                        down="mlp_out" in roles, experts="expert" in roles,
                        qkv_readers=attention_readers, gate_up_readers=mlp_readers)


def adapter_items(training: Training, trained: Trainable, dtypes: TrainingDtypes,
                  shards: Sharding, phases: tuple[str, ...]
                  ) -> tuple[list[Item], list[str], int]:
    """The ``lora_adapters`` item (the method's trainable tensors × trained bytes ÷ the parameter
    shard; the name is kept for every PEFT method) and its
    notes, and the bytes per GPU it leaves in host RAM (FSDP / ZeRO-3 parameter offload keeps
    the adapters' shards there too); nothing for full fine-tuning."""
    adapters = trained.adapters
    if adapters is None:
        return [], [], 0
    rank, width = training.lora.rank, dtypes.trainable_bytes
    if adapters.method == "lora":
        source = ("LoRA, Hu et al. 2021 §4.1 (r × (in + out) per adapted matrix); PEFT target "
                  "matching (gpusizer/memory/lora.py)")
        text = f"rank {rank}: {adapters.formula}"
    else:
        source = (f"PEFT 0.21.2 {adapters.source} (gpusizer/memory/training/peft_methods.py, "
                  "checked against get_peft_model)")
        text = f"peft {adapters.method}: {adapters.formula}"
    size = adapters.parameters * width // shards.parameters
    host = size if shards.parameters_offloaded else 0
    item = Item("lora_adapters", size - host, "estimated", phases, source,
                f"{text} × {width} B ({dtypes.trainable_dtype})" + divided_text(shards.parameters)
                + (f" = {host} B in host RAM (parameter offload)" if host else ""))
    notes = []
    small = [m.path for m in adapters.modules if rank >= min(m.rows, m.cols)]
    if small and adapters.method in ("lora", "dora", "rslora"):
        notes.append(f"LoRA rank {rank} is not below the smallest side of {', '.join(small)}: "
                     "those adapters hold at least as many parameters as a full update of the "
                     "matrix (sized as asked)")
    if not dtypes.amp and dtypes.compute_bytes < 4:
        notes.append("precision pure keeps LoRA adapters in the compute dtype; PEFT's default "
                     "(autocast_adapter_dtype=True) upcasts them to fp32, which is precision amp")
    return [item], notes, host


def method_items(training: Training, facts: ModelFacts, trained: Trainable,
                 dtypes: TrainingDtypes, shards: Sharding, phases: tuple[str, ...], *,
                 quantized_base: bool) -> tuple[list[Item], list[str]]:
    """What a PEFT method adds beside its adapters (``peft_methods``: ``Added``), and the
    ``modules_to_save`` copies: ``modules_to_save`` (trained copies × trained bytes ÷ FSDP
    shard), ``adapter_buffers`` (frozen tensors, e.g. VeRA's projections), ``adapter_state``
    (AdaLoRA's rank allocator), ``adapter_activations`` (forward and backward; unknown with its
    reason where not derived). Nothing for LoRA without ``modules_to_save``.
    """
    adapters = trained.adapters
    if adapters is None:
        return [], []
    width, c = dtypes.trainable_bytes, dtypes.compute_bytes
    items: list[Item] = []
    notes: list[str] = []
    saved = trained.saved
    if saved.parameters:
        items.append(Item("modules_to_save", saved.parameters * width // shards.parameters,
                          "estimated", phases, "PEFT modules_to_save (peft/utils/other.py "
                          "ModulesToSaveWrapper: a trained copy beside the frozen module)",
                          f"{saved.formula} × {width} B ({dtypes.trainable_dtype})"
                          + divided_text(shards.parameters)))
        notes.append(f"modules_to_save {', '.join(saved.names)}: the trained copies are sized "
                     f"in the trainable dtype ({dtypes.trainable_dtype}); PEFT deep-copies the "
                     "module, so they keep its dtype unless the trainer casts them")
    method = PEFT_METHODS[adapters.method]
    step = Step(training.microbatch * (training.sequence_length + trained.virtual_tokens),
                training.microbatch, c, width, dtypes.amp, training.checkpoint_mode != "none",
                4 if quantized_base else c)
    added = method.added(adapters, facts, step)
    source = f"PEFT 0.21.2 {method.source} (gpusizer/memory/training/peft_methods.py)"
    if added.buffer_bytes:
        items.append(Item("adapter_buffers", added.buffer_bytes, "estimated", phases, source,
                          added.buffer_formula))
    if added.state_bytes:
        # held from the first update on, like the optimizer states
        items.append(Item("adapter_state", added.state_bytes // shards.states, "estimated",
                          tuple(p for p in phases if p != "load"), source, added.state_formula
                          + divided_text(shards.states)))
    head = saved.lm_head and not trained.full
    head_bytes = step.tokens * facts.architecture.hidden_size * c if head else 0
    if added.activations_bytes is None:
        items.append(Item("adapter_activations", None, "estimated", ("forward", "backward"),
                          source, f"peft {adapters.method}: not derived",
                          unknown_reason=added.unknown_reason))
    elif added.activations_bytes or head_bytes:
        text = added.activations_formula
        if head_bytes:
            text += f"; trained lm_head copy keeps its input T × h × {c} B = {head_bytes} B"
        items.append(Item("adapter_activations", added.activations_bytes + head_bytes,
                          "estimated", ("forward", "backward"), source, text.lstrip("; ")))
    if trained.virtual_tokens:
        notes.append(f"peft {adapters.method}: {trained.virtual_tokens} virtual tokens run "
                     f"through every layer and the logits: activations and logits are sized "
                     f"for {training.sequence_length + trained.virtual_tokens} tokens per "
                     "sequence")
    return items, notes
