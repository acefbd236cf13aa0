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
naming ``experts.<name>``, never by a bare ``down_proj``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SheetError
from ..model.facts import LinearModule, ModelFacts

__all__ = ["PEFT_DEFAULT_TARGETS", "LoraAdapters", "lora_targets", "lora_adapters"]

PEFT_DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    # peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING (peft 0.21):
    # the modules `target_modules=None` adapts, by config.json model_type. The table lists
    # mixtral too, but get_peft_model then raises NoMatchingPeftModuleError on transformers v5's
    # Mixtral (checked in the tests): no default is claimed for it.
    "llama": ("q_proj", "v_proj"), "mistral": ("q_proj", "v_proj"),
    "qwen2": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"), "gemma": ("q_proj", "v_proj"),
    "gemma2": ("q_proj", "v_proj"), "gemma3_text": ("q_proj", "v_proj"),
    "falcon": ("query_key_value",), "gpt2": ("c_attn",),
}


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


def _all_linear(facts: ModelFacts) -> tuple[tuple[LinearModule, int], ...]:
    """PEFT 0.21 ``all-linear``: every linear except ``lm_head``; on MoE models whose checkpoint
    stores experts one by one (transformers v5 converts them at load), also the router and the
    stacked experts, with one adapter per source tensor of a concatenated parameter
    (``peft/utils/transformers_weight_conversion.py``: ``gate_up_proj`` gets block-diagonal
    adapters for gate and up, A (2·r·E) × in, B out × (2·r·E)). With those converted experts,
    peft 0.21 also leaves out the plain modules named like the experts' source tensors
    (``gate_proj``, ``up_proj``, ``down_proj`` of dense layers and shared experts: DeepSeek-V3),
    as checked against ``get_peft_model`` in the tests."""
    converted = any(x.converted_from for x in facts.modules if x.experts)
    out = []
    for m in facts.modules:
        if m.path == "lm_head":
            continue
        if m.experts or m.router:
            if converted:
                out.append((m, max(1, m.converted_from)))
        elif not (converted and m.name in ("gate_proj", "up_proj", "down_proj")):
            out.append((m, 1))
    return tuple(out)


def _matches(module: LinearModule, target: str) -> bool:
    path = module.path
    if module.experts and "experts." not in target and target != path:
        return False  # stacked expert parameters need PEFT target_parameters, named as such
    return path == target or path.endswith("." + target) or target.endswith("." + path) \
        or target == module.name and not module.experts


def lora_targets(facts: ModelFacts, targets: str | list[str]
                 ) -> tuple[tuple[tuple[LinearModule, int], ...], tuple[str, ...]]:
    """Resolve the sheet's ``training.lora.targets`` to ``(module, adapters per expert)`` pairs.

    Raises:
        SheetError: ``default`` for a family PEFT has no default for; a target that matches no
            module (PEFT raises too); a model without module facts (a bare parameter count).
    """
    field = "training.lora.targets"
    if not facts.modules:
        raise SheetError("LoRA needs the model's linear modules: give model.id or model.path, "
                         "not a bare parameter count", field=field, value=targets)
    names = sorted({m.path for m in facts.modules})
    if targets == "all-linear":
        return _all_linear(facts), ("all-linear",)
    if targets == "default":
        wanted = PEFT_DEFAULT_TARGETS.get(facts.architecture)
        if wanted is None:
            raise SheetError(f"PEFT has no default LoRA targets for model_type "
                             f"{facts.architecture!r} (peft/utils/constants.py): list them, e.g. "
                             f"[{', '.join(m.name for m in facts.modules[:2])}] or all-linear; "
                             f"modules: {', '.join(names)}", field=field, value=targets)
        targets = list(wanted)
    chosen: list[LinearModule] = []
    for t in targets:
        hit = [m for m in facts.modules if _matches(m, t)]
        if not hit:
            raise SheetError(f"no linear module of this {facts.architecture} model matches "
                             f"{t!r}; its modules: {', '.join(names)} (stacked experts: name "
                             "them experts.<name>)", field=field, value=t)
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
