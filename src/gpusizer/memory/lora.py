"""LoRA targets and trainable parameters, following PEFT's matching rules.

LoRA (Hu et al. 2021, §4.1) adds ``B·A`` beside a frozen ``W`` (out × in): ``A`` is r × in and
``B`` is out × r, so one adapted module trains ``r × (in + out)`` parameters. PEFT
(``peft/tuners/tuners_utils.py`` ``check_target_module_exists``) matches a list of target names
against module paths: a target matches a module when the path equals it or ends with
``"." + target``; ``"all-linear"`` takes every ``nn.Linear``/``Conv1D`` except the output layer
(``_maybe_include_all_linear_layers``). transformers v5 stores routed experts as one stacked
parameter per kind (``mlp.experts.gate_up_proj``), which PEFT adapts through
``target_parameters`` with one adapter per expert (``peft/tuners/lora/layer.py``
``ParamWrapper``: ``lora_A`` (r·E) × in, ``lora_B`` out × (r·E)): those are matched only by a target
naming their parent too (``experts.<name>``), never by a bare ``down_proj``.

Which modules are which comes from the family (``LinearModule.role``, ``converted_from``,
``Architecture.peft_default_targets``): nothing here depends on a module name or ``model_type``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SheetError
from ..model.facts import LinearModule, ModelFacts

__all__ = ["LoraAdapters", "lora_targets", "lora_adapters"]


@dataclass(frozen=True)
class LoraAdapters:
    """The adapters one LoRA sheet adds.

    Attributes:
        modules: the adapted linear layers (paths, shapes, instances).
        targets: the target names as resolved (PEFT's default list when the sheet says
            ``default``).
        parameters: trainable parameters, whole model: Σ count × max(1, experts) × r × (in + out).
        tensors: ``(count, rows, cols)`` of every adapter tensor (A and B of each instance),
            for per-tensor optimizer rules.
        formula: the sum with this sheet's numbers.
    """

    modules: tuple[LinearModule, ...]
    targets: tuple[str, ...]
    parameters: int
    tensors: tuple[tuple[int, int, int], ...]
    formula: str


def _all_linear(modules: tuple[LinearModule, ...]) -> tuple[tuple[LinearModule, int], ...]:
    """PEFT 0.21 ``all-linear``: every linear except the ``lm_head``; on MoE models whose
    checkpoint stores experts one by one (transformers v5 converts them at load), also the router
    and the stacked experts, with one adapter per source tensor of a concatenated parameter
    (``peft/utils/transformers_weight_conversion.py``: ``gate_up_proj`` gets block-diagonal
    adapters for gate and up, A (2·r·E) × in, B out × (2·r·E)). With those converted experts,
    peft 0.21 also leaves out the plain modules named like the experts' source tensors
    (``_MOE_TARGET_MODULE_MAPPING``: ``gate_proj``, ``up_proj``, ``down_proj`` of dense layers
    and shared experts in DeepSeek-V3), as checked against ``get_peft_model`` in the tests."""
    source_names = {name for m in modules if m.role == "expert" for name in m.converted_from}
    out = []
    for m in modules:
        if m.role == "lm_head":
            continue
        if m.role in ("expert", "router"):
            if source_names:
                out.append((m, max(1, len(m.converted_from))))
        elif m.name not in source_names:
            out.append((m, 1))
    return tuple(out)


def _matches(module: LinearModule, target: str) -> bool:
    path = module.path
    if module.experts and "." not in target:
        return False  # stacked expert parameters need PEFT target_parameters, named with parent
    return path == target or path.endswith("." + target) or target.endswith("." + path) \
        or target == module.name and not module.experts


def lora_targets(facts: ModelFacts, targets: str | list[str], *,
                 field: str = "training.lora.targets",
                 defaults: tuple[str, ...] | None | str = "family", method: str = "LoRA",
                 ) -> tuple[tuple[tuple[LinearModule, int], ...], tuple[str, ...]]:
    """Resolve the sheet's ``training.lora.targets`` to ``(module, adapters per expert)`` pairs.

    ``field`` names the sheet key in errors; ``defaults`` is what ``default`` stands for:
    ``"family"`` (the family's PEFT LoRA default, ``Architecture.peft_default_targets``), or
    another method's default list from PEFT's tables (None: PEFT has none for this model);
    ``method`` names the PEFT method in that error.

    Raises:
        SheetError: ``default`` for a family PEFT has no default for; a target that matches no
            module (PEFT raises too); a model without module facts (a bare parameter count).
    """
    arch = facts.architecture
    if not arch.modules:
        raise SheetError("LoRA needs the model's linear modules: give model.id or model.path, "
                         "not a bare parameter count", field=field, value=targets)
    names = sorted({m.path for m in arch.modules})
    if targets == "all-linear":
        return _all_linear(arch.modules), ("all-linear",)
    if targets == "default":
        default = arch.peft_default_targets if defaults == "family" else defaults
        if default is None:
            raise SheetError(f"PEFT has no default {method} targets for model_type "
                             f"{facts.model_type!r} (peft/utils/constants.py): list them, e.g. "
                             f"[{', '.join(m.name for m in arch.modules[:2])}] or all-linear; "
                             f"modules: {', '.join(names)}", field=field, value=targets)
        targets = list(default)
    chosen: list[LinearModule] = []
    for t in targets:
        hit = [m for m in arch.modules if _matches(m, t)]
        if not hit:
            stacked = [m.path for m in arch.modules if m.experts]
            hint = f" (stacked experts: name them as {', '.join(stacked)})" if stacked else ""
            raise SheetError(f"no linear module of this {facts.model_type} model matches "
                             f"{t!r}; its modules: {', '.join(names)}{hint}", field=field,
                             value=t)
        chosen += [m for m in hit if m not in chosen]
    return tuple((m, 1) for m in chosen), tuple(targets)


def lora_adapters(facts: ModelFacts, rank: int, targets: str | list[str]) -> LoraAdapters:
    """Trainable parameters of LoRA rank ``rank`` on ``targets``.

    Formula: Σ over adapted modules of count × max(1, experts) × r × (in + out) (Hu et al.
    2021 §4.1; PEFT ``ParamWrapper`` for stacked experts).

    Raises:
        SheetError: see :func:`lora_targets`.
    """
    mods, resolved = lora_targets(facts, targets)
    total = 0
    tensors: list[tuple[int, int, int]] = []
    terms = []
    for m, sources in mods:
        per = max(1, m.experts) * sources
        total += m.count * per * rank * (m.rows + m.cols)
        tensors += [(m.count, per * rank, m.cols), (m.count, m.rows, per * rank)]
        e = f" × {m.experts} experts" if m.experts else ""
        e += f" × {sources} source tensors" if sources > 1 else ""
        terms.append(f"{m.path}: {m.count}{e} × {rank} × ({m.cols} + {m.rows})")
    return LoraAdapters(tuple(m for m, _ in mods), resolved, total, tuple(tensors),
                        "; ".join(terms) + f" = {total} parameters")
