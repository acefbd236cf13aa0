"""PEFT methods (``training.peft``): what each trains, the frozen buffers it adds, and what it
adds to the activations, one :class:`PeftMethod` entry per method in :data:`PEFT_METHODS`.

Adding a method is one entry: its PEFT config class and defaults (``options``), a ``count``
(trainable tensors of one adapted module, or of the prompt encoder), an ``added`` (activations and
buffers) and, for ``simulate``, the PEFT config keywords. Every count follows PEFT 0.21.2's own
layer code (``peft/tuners/<method>/layer.py``, cited per entry) and is checked against
``get_peft_model`` on a meta-device model in ``tests/memory/test_peft_methods.py``.

Symbols in the formulas: ``in`` / ``out`` a linear's in_features / out_features; ``T`` tokens of
a microbatch (microbatch × sequence); ``c`` the compute dtype's bytes; ``a`` the trainable dtype's
bytes (fp32 under amp); ``n`` virtual tokens; ``L`` decoder layers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any, NamedTuple

from ...errors import SheetError
from ...model.facts import LinearModule, ModelFacts
from ...model.peft_tables import builds_conv1d, config_names_kv_heads, peft_default_targets
from ...sheet import LORA_METHODS, Training
from ..lora import lora_adapters, lora_targets
from ..optimizer_states import TensorShape

__all__ = ["PeftAdapters", "PeftMethod", "PEFT_METHODS", "ModuleShare", "peft_adapters",
           "Added", "Step", "peft_config_kwargs", "resolved_options"]

_OPTIONS_FIELD = "training.peft_options"


@dataclass(frozen=True)
class ModuleShare:
    """One kind of adapted module and what the method makes for each of its instances.

    Attributes:
        module: the adapted linear (its ``count`` instances over the model).
        tensors: ``(rows, cols)`` of each trainable tensor one instance gets.
        saves_input: autograd keeps the module's input because of the adapter (LoRA's
            ``lora_A(x)``; VeRA and IA3 on outputs read only frozen tensors or the output).
    """

    module: LinearModule
    tensors: tuple[tuple[int, int], ...]
    saves_input: bool = True

    @property
    def parameters(self) -> int:
        """Trainable elements of all instances."""
        return self.module.count * sum(r * c for r, c in self.tensors)


@dataclass(frozen=True)
class Added:
    """What a method adds beside its trainable tensors, for one training sheet (bytes).

    Attributes:
        activations_bytes: tensors autograd keeps because of the adapters over the whole
            forward (or one layer's under gradient checkpointing), with the largest forward
            transient of one module; None when not derived (``unknown_reason`` says why).
        activations_formula: the sum with the sheet's numbers.
        buffer_bytes: frozen tensors the method adds on the GPU (VeRA's shared projections).
        buffer_formula: their formula.
        state_bytes: tensors the method keeps across steps beside the optimizer (AdaLoRA's rank
            allocator).
        state_formula: their formula.
        unknown_reason: why ``activations_bytes`` is None.
    """

    activations_bytes: int | None = 0
    activations_formula: str = ""
    buffer_bytes: int = 0
    buffer_formula: str = ""
    state_bytes: int = 0
    state_formula: str = ""
    unknown_reason: str | None = None


@dataclass(frozen=True)
class PeftAdapters:
    """The adapters one PEFT sheet adds (any method; :class:`~..lora.LoraAdapters`'s fields).

    Attributes:
        method: the ``training.peft`` value.
        modules: the adapted linear layers (empty for prompt-learning methods).
        targets: target names as resolved.
        parameters: trainable parameters, whole model (PEFT's trainable count).
        tensors: ``(count, rows, cols)`` of every trainable tensor, for per-tensor optimizer
            rules.
        formula: the sum with this sheet's numbers.
        shares: per adapted module kind, what each instance gets.
        virtual_tokens: tokens the method prepends to every sequence (prompt, p-tuning), which
            every layer and the logits then process; 0 otherwise.
        options: the method's options as resolved (PEFT's defaults filled in).
        source: where the count comes from (PEFT file).
    """

    method: str
    modules: tuple[LinearModule, ...]
    targets: tuple[str, ...]
    parameters: int
    tensors: tuple[TensorShape, ...]
    formula: str
    shares: tuple[ModuleShare, ...] = ()
    virtual_tokens: int = 0
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    source: str = ""


@dataclass(frozen=True)
class PeftMethod:
    """One PEFT method.

    Attributes:
        name: the ``training.peft`` value.
        config_class: PEFT's config class (``simulate`` builds it by name).
        options: option names this method reads from ``training.peft_options`` with PEFT
            0.21.2's defaults (None: required, or filled from PEFT's per-model table).
        source: PEFT file(s) the count and the activations follow.
        count: ``(facts, options) -> (shares, targets)`` for module methods, or
            ``(facts, options) -> tensors`` for prompt methods (see ``prompt``).
        added: ``(adapters, facts, step) -> Added`` (:class:`Step`).
        prompt: a prompt-learning method (``count`` returns ``(tensors, virtual_tokens)``).
        default_table: which of PEFT's default-target tables applies (``lora``: the family's,
            else a table below).
        amp_copies_input: under amp the adapter casts its input to the fp32 adapter dtype and
            keeps that copy (or autocast's c copy of it) instead of the input itself; the copy
            is in ``added``, the input is then not kept on the adapter's account
            (``trainable.trained_parts``). LoRA keeps its rule of record (the input counted).
    """

    name: str
    config_class: str
    options: dict[str, Any]
    source: str
    count: Callable[..., Any]
    added: Callable[..., Added]
    prompt: bool = False
    default_table: str = "lora"
    amp_copies_input: bool = False


_NO_CONV1D = ("loha", "lokr", "oft", "boft")
"""Methods PEFT 0.21 refuses on ``Conv1D`` linears (``_create_new_module``: "Target module ...
is not supported")."""


def _int_option(options: dict[str, Any], key: str, minimum: int = 0) -> int:
    value = options[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SheetError(f"expected an integer >= {minimum}", field=f"{_OPTIONS_FIELD}.{key}",
                         value=value)
    return value


def _bool_option(options: dict[str, Any], key: str) -> bool:
    value = options[key]
    if not isinstance(value, bool):
        raise SheetError("expected true or false", field=f"{_OPTIONS_FIELD}.{key}", value=value)
    return value


def _targets(facts: ModelFacts, method: "PeftMethod", options: dict[str, Any]
             ) -> tuple[tuple[LinearModule, ...], tuple[str, ...]]:
    """The modules ``target_modules`` names (PEFT's matching, ``memory/lora.py``); only
    ``nn.Linear`` modules: PEFT 0.21 adapts stacked expert parameters with LoRA only."""
    targets = options["target_modules"]
    if targets is None:
        targets = "default"
    if isinstance(targets, str) and targets not in ("default", "all-linear"):
        targets = [targets]
    defaults: Any = "family"
    if method.default_table != "lora":
        defaults = peft_default_targets(facts.model_type, method.default_table)
        if defaults is not None:
            # PEFT adapts what its default list matches and skips the rest (Mixtral's w2 is
            # stacked in transformers v5); a list the sheet gives must match name by name
            paths = [m.path for m in facts.architecture.modules if not m.experts]
            defaults = tuple(t for t in defaults
                             if any(p == t or p.endswith("." + t) for p in paths)) or None
    mods, resolved = lora_targets(facts, targets, field=f"{_OPTIONS_FIELD}.target_modules",
                                  defaults=defaults, method=method.name)
    stacked = [m.path for m, _ in mods if m.experts]
    if stacked:
        raise SheetError(f"PEFT 0.21 adapts stacked expert parameters ({', '.join(stacked)}) "
                         f"with LoRA only (target_parameters), not {method.name}",
                         field=f"{_OPTIONS_FIELD}.target_modules", value=targets)
    if method.name in _NO_CONV1D and builds_conv1d(facts.model_type):
        raise SheetError(f"PEFT 0.21's {method.name} does not support the Conv1D linears of "
                         f"{facts.model_type} (peft/tuners/{method.name}/model.py)",
                         field="training.peft", value=method.name)
    return tuple(m for m, _ in mods), resolved


def _per_module(fn: Callable[[LinearModule, dict[str, Any]], tuple[tuple[int, int], ...]],
                saves_input: Callable[[LinearModule, dict[str, Any]], bool] = lambda m, o: True):
    """A ``count`` for module methods: ``fn(module, options)`` gives one instance's tensors."""
    def count(facts: ModelFacts, method: PeftMethod, options: dict[str, Any]):
        mods, resolved = _targets(facts, method, options)
        return tuple(ModuleShare(m, fn(m, options), saves_input(m, options))
                     for m in mods), resolved
    return count


def _instances(adapters: PeftAdapters, checkpointing: bool,
               per: Callable[[LinearModule], int]) -> int:
    """Σ count × per(module), or one layer's Σ per(module) when checkpointing recomputes the
    layers one at a time (only the layer being recomputed holds its saved tensors)."""
    return sum((1 if checkpointing else s.module.count) * per(s.module) for s in adapters.shares)


def _layers_text(checkpointing: bool) -> str:
    return "one layer (checkpointing)" if checkpointing else "every instance"


# --- LoRA, rsLoRA, DoRA: peft/tuners/lora/layer.py (LoraLayer.update_layer), lora/dora.py ---

def _nothing_added(*_args) -> Added:
    """LoRA / rsLoRA: the adapters' saved inputs are the module inputs (``activations``)."""
    return Added()


def _dora_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """DoRA (peft/tuners/lora/dora.py ``DoraLinearLayer.forward``): ``(m/‖W + s·BA‖ − 1) ·
    base_result + m/‖…‖ · lora_result · s`` keeps ``base_result`` and ``lora_result`` (T × out
    each, c bytes) for the magnitude's gradient; the weight norm is recomputed every forward
    from ``lora_B(lora_A(eye(in)))`` (in × in identity and the out × in ``BA`` in a bytes) and
    the merged ``W + s·BA`` (two out × in temporaries in c), freed after the module: one
    module's worth is live at a time."""
    tokens, c, a, checkpointing = step.tokens, step.c, step.a, step.checkpointing
    saved = _instances(adapters, checkpointing, lambda m: 2 * tokens * m.rows * c)
    transient = max((m.cols * m.cols * a + m.rows * m.cols * (a + 2 * c)
                     for m in adapters.modules), default=0)
    return Added(saved + transient, f"saved base_result + lora_result 2 × T × out × {c} B over "
                 f"{_layers_text(checkpointing)} = {saved} B + one module's weight-norm "
                 f"recomputation in² × {a} + out × in × ({a} + 2 × {c}) = {transient} B")


def _lora_count(facts: ModelFacts, training: Training, dora: bool):
    """LoRA through ``memory/lora.py`` (stacked experts too); DoRA adds a magnitude vector
    (out) per adapted module (peft/tuners/lora/layer.py ``dora_init``)."""
    lora = training.lora
    if dora:
        mods, _ = lora_targets(facts, lora.targets)
        stacked = [m.path for m, _ in mods if m.experts]
        if stacked:
            raise SheetError(f"PEFT 0.21 has no DoRA for stacked expert parameters "
                             f"({', '.join(stacked)})", field="training.lora.targets",
                             value=lora.targets)
    base = lora_adapters(facts, lora.rank, lora.targets)
    r = lora.rank
    shares = tuple(ModuleShare(m, ((r, m.cols), (m.rows, r)) + (((m.rows, 1),) if dora else ()))
                   for m in base.modules)
    extra = sum(m.count * m.rows for m in base.modules) if dora else 0
    tensors = base.tensors + tuple((m.count, m.rows, 1) for m in base.modules if dora)
    formula = base.formula + (f" + magnitude vectors Σ count × out = {extra}" if dora else "")
    return shares, base.targets, base.parameters + extra, tensors, formula


# --- IA3: peft/tuners/ia3/layer.py (IA3Layer.update_layer, Linear.forward) ---

def _ia3_feedforward(module: LinearModule, options: dict[str, Any]) -> bool:
    names = options["feedforward_modules"]
    return any(module.path == n or module.path.endswith("." + n) for n in names)


def _ia3_tensors(module: LinearModule, options: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """``ia3_l``: (1, in) on a feedforward module (it scales the input), else (out, 1)."""
    return ((1, module.cols),) if _ia3_feedforward(module, options) else ((module.rows, 1),)


def _ia3_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """``base_layer(x) * ia3_l`` keeps the base output (T × out, c) for ``ia3_l``'s gradient;
    on a feedforward module ``x * ia3_l`` keeps the input (counted in ``activations``), which
    under amp is ``x.to(ia3_l.dtype)``, a T × in × a copy (the multiply is not autocast); each
    keeps its scaling vector ``1 * ia3_l.flatten()`` (in or out values, a). Checked with
    ``saved_tensors_hooks`` around one PEFT module, amp and pure."""
    tokens, c, a, amp, checkpointing = step.tokens, step.c, step.a, step.amp, step.checkpointing
    layers = (lambda m: 1) if checkpointing else (lambda m: m.count)
    # + the scaling vector ``1 * ia3_l.flatten()``, a new tensor of in or out values in a
    saved = sum(layers(s.module) * ((tokens * s.module.cols * a if amp else 0) + s.module.cols * a
                                    if s.saves_input else (tokens * c + a) * s.module.rows)
                for s in adapters.shares)
    return Added(saved, f"base outputs T × out × {c} B of the non-feedforward modules, scaling "
                 f"vectors × {a} B"
                 + (f", fp32 input copies T × in × {a} B of the feedforward ones" if amp else "")
                 + f" over {_layers_text(checkpointing)} = {saved} B")


# --- LoHa / LoKr: peft/tuners/loha/layer.py, peft/tuners/lokr/layer.py ---

def _loha_tensors(module: LinearModule, options: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """hada_w1_a (out × r), hada_w1_b (r × in), hada_w2_a, hada_w2_b."""
    r = _int_option(options, "r", 1)
    return ((module.rows, r), (r, module.cols)) * 2


def _factorization(dimension: int, factor: int = -1) -> tuple[int, int]:
    """PEFT's ``factorization`` (peft/tuners/lokr/layer.py): two factors of ``dimension``, the
    first ≤ the second, as close to √dimension (or to ``factor``) as the search reaches."""
    if factor > 0 and dimension % factor == 0:
        return factor, dimension // factor
    if factor == -1:
        factor = dimension
    m, n = 1, dimension
    length = m + n
    while m < n:
        new_m = m + 1
        while dimension % new_m != 0:
            new_m += 1
        new_n = dimension // new_m
        if new_m + new_n > length or new_m > factor:
            break
        m, n = new_m, new_n
    return (n, m) if m > n else (m, n)


def _lokr_tensors(module: LinearModule, options: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """out = a·b and in = c·d by :func:`_factorization`; w1 (a × c) whole unless
    decompose_both and r < max(a, c)/2 (then r × (a + c)); w2 (b × d) whole when
    r ≥ max(b, d)/2, else w2_a (b × r), w2_b (r × d) (``LoKrLayer.update_layer``)."""
    r = _int_option(options, "r", 1)
    factor = options["decompose_factor"]
    a, b = _factorization(module.rows, factor)
    cc, d = _factorization(module.cols, factor)
    both = _bool_option(options, "decompose_both")
    w1 = ((a, r), (r, cc)) if (both and r < max(a, cc) / 2) else ((a, cc),)
    w2 = ((b, d),) if not (r < max(b, d) / 2) else ((b, r), (r, d))
    return w1 + w2


def _delta_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """LoHa / LoKr build the whole delta weight each forward (``get_delta_weight``: a Hadamard
    or Kronecker product, out × in) and run ``F.linear(x, delta)``, which keeps the delta
    (trained) for x's gradient, in c (autocast's copy under amp, the adapter dtype under pure);
    under amp LoKr also keeps autocast's c copy of its input, which it first casts to the
    adapter dtype (``_cast_input_dtype`` in ``lokr/layer.py`` ``_get_delta_activations``;
    LoHa's passes x as it is). Checked by counting the tensors autograd saves
    (``torch.autograd.graph.saved_tensors_hooks``) around one PEFT module, amp and pure."""
    tokens, c, amp, checkpointing = step.tokens, step.c, step.amp, step.checkpointing
    copy = amp and adapters.method == "lokr"
    saved = _instances(adapters, checkpointing,
                       lambda m: m.rows * m.cols * c + (tokens * m.cols * c if copy else 0))
    return Added(saved, f"delta weight out × in × {c} B"
                 + (f" + input copy T × in × {c} B" if copy else "")
                 + f" per adapted module over {_layers_text(checkpointing)} = {saved} B")


# --- OFT: peft/tuners/oft/layer.py (OFTLayer.update_layer, OFTRotationModule) ---

def _oft_blocks(module: LinearModule, options: dict[str, Any]) -> tuple[int, int]:
    """``(r, block size)``: exactly one of r and oft_block_size is given (the other 0); a value
    that does not divide in_features moves to the nearest divisor (``adjust_oft_parameters``)."""
    r, size, inp = _int_option(options, "r"), _int_option(options, "oft_block_size"), module.cols
    if (r == 0) == (size == 0):
        raise SheetError("OFT takes exactly one of r and oft_block_size (the other 0)",
                         field=f"{_OPTIONS_FIELD}.r", value={"r": r, "oft_block_size": size})
    given = size or r
    if inp % given != 0 or given > inp:
        given = _adjust(inp, given)
    return (inp // given, given) if size else (given, inp // given)


def _adjust(inp: int, params: int) -> int:
    """PEFT's ``adjust_oft_parameters``: the divisor of ``inp`` nearest to ``params``."""
    if params >= inp:
        return inp
    higher = params
    while higher <= inp and inp % higher != 0:
        higher += 1
    lower = params
    while lower > 1 and inp % lower != 0:
        lower -= 1
    return lower if (params - lower) <= (higher - params) else higher


def _oft_tensors(module: LinearModule, options: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """oft_R: (r, b(b − 1)/2) upper-triangle entries of r skew-symmetric b × b blocks (one
    block when block_share)."""
    r, b = _oft_blocks(module, options)
    return ((1 if _bool_option(options, "block_share") else r, b * (b - 1) // 2),)


def _oft_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """OFT rotates the input, ``einsum(x, R)`` with R the Cayley–Neumann series of the
    skew-symmetric blocks Q (``_cayley_batch``, k = num_cayley_neumann_terms ≥ 3, k − 2
    ``bmm``). Pure: the bmm keep Q, Q², …, Q^(k−2) and the einsum R, k − 1 tensors of
    r × b × b in a, and x (the module input, in ``activations``). Amp: autocast runs the bmm
    and the einsum in c on copies: each bmm keeps two c operands (Q's copy twice, then the
    previous power and a copy of Q), the einsum a c copy of R and of the input (which OFT
    first casts to the adapter dtype): (2k − 3) × r × b² × c + T × in × c. Checked by counting
    the tensors autograd saves around one PEFT module (``saved_tensors_hooks``)."""
    tokens, c, a, amp, checkpointing = step.tokens, step.c, step.a, step.amp, step.checkpointing
    if not _bool_option(options := adapters.options, "use_cayley_neumann"):
        return Added(None, unknown_reason="OFT without use_cayley_neumann solves (I + Q)⁻¹ "
                     "(torch.linalg.solve): what autograd keeps of it is not derived")
    terms = _int_option(options, "num_cayley_neumann_terms", 3)
    if _bool_option(options, "block_share"):
        return Added(None, unknown_reason="OFT with block_share repeats one rotation over the "
                     "blocks (orth_rotate.repeat): what autograd keeps of it is not derived")

    def per(m: LinearModule) -> int:
        r, b = _oft_blocks(m, options)
        if amp:
            return (2 * terms - 3) * r * b * b * c + tokens * m.cols * c
        return (terms - 1) * r * b * b * a
    saved = _instances(adapters, checkpointing, per)
    return Added(saved, (f"Cayley–Neumann bmm operands and R (2 × {terms} − 3) × r × b² × {c} B"
                         f" + input copy T × in × {c} B" if amp else
                         f"Cayley–Neumann products and R ({terms} − 1) × r × b² × {a} B")
                 + f" per adapted module over {_layers_text(checkpointing)} = {saved} B")


# --- BOFT: peft/tuners/boft/layer.py (BOFTLayer.update_layer) ---

def _boft_tensors(module: LinearModule, options: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """boft_R: (m, blocks, b, b) with m = boft_n_butterfly_factor butterfly factors, b ×
    blocks = in_features (one of boft_block_size, boft_block_num given, the other 0);
    boft_s: (out, 1)."""
    size, num = _int_option(options, "boft_block_size"), _int_option(options, "boft_block_num")
    factors = _int_option(options, "boft_n_butterfly_factor", 1)
    if (size == 0) == (num == 0):
        raise SheetError("BOFT takes exactly one of boft_block_size and boft_block_num (the "
                         "other 0)", field=f"{_OPTIONS_FIELD}.boft_block_size",
                         value={"boft_block_size": size, "boft_block_num": num})
    given = size or num
    if module.cols % given != 0:
        raise SheetError(f"in_features {module.cols} of {module.path} is not divisible by "
                         f"{given} (PEFT refuses it)", field=f"{_OPTIONS_FIELD}.boft_block_size",
                         value=given)
    blocks = module.cols // size if size else num
    b = module.cols // blocks
    return ((factors * blocks, b * b), (module.rows, 1))


def _boft_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """BOFT with one butterfly factor (what PEFT runs without its CUDA extension, which forces
    boft_n_butterfly_factor to 1; peft/tuners/boft/layer.py ``update_layer``, Linear.forward)
    keeps per adapted module: the Cayley transform's fp32 operands (``cayley_batch``,
    ``torch.linalg.solve``, "must be in float32": three blocks × b² × 4 B tensors and the
    blocks × b int32 pivots), the dense block-diagonal rotation (``torch.block_diag``) and its
    two products with the permutation (``bmm`` with ``boft_P``), in × in × c each, the scale
    ``boft_s`` reshaped (out × (c + a)), and the result it scales (T × out × c). Checked with
    ``saved_tensors_hooks`` around one PEFT module, amp and pure. Several butterfly factors
    (the CUDA extension's ``FastBlockDiag``) are not derived: unknown."""
    tokens, c, a, checkpointing = step.tokens, step.c, step.a, step.checkpointing
    options = adapters.options
    if _int_option(options, "boft_n_butterfly_factor", 1) != 1:
        return Added(None, unknown_reason="BOFT with several butterfly factors runs PEFT's CUDA "
                     "extension (FastBlockDiag, peft/tuners/boft/layer.py): what autograd keeps "
                     "of it is not derived")

    def per(m: LinearModule) -> int:
        (blocks, b2), _ = _boft_tensors(m, options)     # one factor: (blocks, b²)
        return (3 * blocks * b2 * 4 + blocks * math.isqrt(b2) * 4 + 3 * m.cols * m.cols * c
                + tokens * m.rows * c + m.rows * (c + a))
    saved = _instances(adapters, checkpointing, per)
    return Added(saved, f"Cayley operands 3 × blocks × b² × 4 B + pivots blocks × b × 4 B + "
                 f"block-diagonal rotation and its two products 3 × in² × {c} B + scale "
                 f"out × ({c} + {a}) B + scaled result T × out × {c} B per adapted module over "
                 f"{_layers_text(checkpointing)} = {saved} B")


# --- VeRA: peft/tuners/vera/layer.py, peft/tuners/vera/model.py (_init_vera_A_vera_B) ---

def _vera_tensors(module: LinearModule, options: dict[str, Any]) -> tuple[tuple[int, int], ...]:
    """vera_lambda_b (out), vera_lambda_d (r); the projections vera_A / vera_B are frozen and
    shared by every adapted module."""
    return ((module.rows, 1), (_int_option(options, "r", 1), 1))


def _vera_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """``λ_b · F.linear(λ_d · F.linear(x, A), B)`` keeps ``x·A`` (T × r) and ``(λ_d·xA)·B``
    (T × out), in c, for the λ gradients; A and B are frozen, so x is not kept; under amp the
    two linears keep autocast's c copies of the slices of A and B, r × (in + out) × c per
    module (checked with ``saved_tensors_hooks`` around one PEFT module). The shared
    projections vera_A (r × max in) and vera_B (max out × r) are buffers moved to the base
    layer's dtype (``_move_adapter_to_device_of_base_layer``; c on a 16-bit base, fp32 on a
    quantized one, whose dtype is not floating)."""
    tokens, c, amp, checkpointing = step.tokens, step.c, step.amp, step.checkpointing
    r = _int_option(adapters.options, "r", 1)
    saved = _instances(adapters, checkpointing, lambda m: tokens * (r + m.rows) * c
                       + (r * (m.cols + m.rows) * c if amp else 0))
    max_in = max(m.cols for m in adapters.modules)
    max_out = max(m.rows for m in adapters.modules)
    width = step.base_bytes
    buffers = r * (max_in + max_out) * width
    return Added(saved, f"x·A and (λ_d·xA)·B: T × (r + out) × {c} B"
                 + (f" + copies of A, B r × (in + out) × {c} B" if amp else "")
                 + " per adapted module over "
                 f"{_layers_text(checkpointing)} = {saved} B", buffers,
                 f"vera_A {r} × {max_in} + vera_B {max_out} × {r}, × {width} B = {buffers} B")


# --- AdaLoRA: peft/tuners/adalora/layer.py (AdaLoraLayer.update_layer, RankAllocator) ---

def _adalora_tensors(module: LinearModule, options: dict[str, Any]
                     ) -> tuple[tuple[int, int], ...]:
    """lora_A (r × in), lora_B (out × r), lora_E (r × 1) at r = init_r, and ranknum (1)."""
    r = _int_option(options, "init_r", 1)
    return ((r, module.cols), (module.rows, r), (r, 1), (1, 1))


def _adalora_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """``x @ (A·E)ᵀ @ Bᵀ · s / (ranknum + ε)`` keeps (A·E)ᵀ (r × in), the T × r product and
    the T × out result divided by ranknum, in c; under amp also autocast's c copies of the
    input (cast to the adapter dtype first) and of Bᵀ: T × in + r × out (counted with
    ``saved_tensors_hooks`` around one PEFT module, amp and pure). The RankAllocator
    (``update_ipt``) keeps ipt, exp_avg_ipt and exp_avg_unc, each shaped like every lora_A,
    lora_B and lora_E, in their dtype, from the first update on."""
    tokens, c, a, amp, checkpointing = step.tokens, step.c, step.a, step.amp, step.checkpointing
    r = _int_option(adapters.options, "init_r", 1)
    saved = _instances(adapters, checkpointing,
                       lambda m: (r * m.cols + tokens * r + tokens * m.rows) * c
                       + ((tokens * m.cols + r * m.rows) * c if amp else 0))
    lora_elements = sum(m.count * r * (m.cols + m.rows + 1) for m in adapters.modules)
    state = 3 * lora_elements * a
    return Added(saved, "(A·E)ᵀ r × in + T × r + T × out"
                 + (" + input copy T × in + Bᵀ copy r × out" if amp else "")
                 + f", × {c} B, per adapted module over "
                 f"{_layers_text(checkpointing)} = {saved} B", state_bytes=state,
                 state_formula=f"RankAllocator ipt, exp_avg_ipt, exp_avg_unc: 3 × "
                 f"{lora_elements} × {a} B")


# --- prompt learning: peft/tuners/{prompt_tuning,prefix_tuning,p_tuning}/model.py and
# peft/utils/other.py (_prepare_prompt_learning_config) ---

def _token_dim(facts: ModelFacts, options: dict[str, Any], prefix: bool) -> int:
    """PEFT's token_dim: hidden_size; for prefix tuning on a GQA model, head_dim ×
    num_key_value_heads (the KV width, peft/utils/other.py, PEFT #1901)."""
    if options.get("token_dim") is not None:
        return _int_option(options, "token_dim", 1)
    arch = facts.architecture
    if prefix and config_names_kv_heads(facts.model_type):
        # transformers' DeepseekV2/V3 configs set head_dim = qk_rope_head_dim, which PEFT reads
        head_dim = arch.mla.qk_rope_head_dim if arch.mla else arch.head_dim
        return head_dim * arch.num_key_value_heads
    return arch.hidden_size


def _prompt_tensors(facts: ModelFacts, method: PeftMethod, options: dict[str, Any]):
    """Prompt tuning: one embedding, n × token_dim (num_transformer_submodules 1 for a
    causal LM)."""
    n = _int_option(options, "num_virtual_tokens", 1)
    return ((1, n, _token_dim(facts, options, False)),), n, f"{n} × token_dim"


def _prefix_tensors(facts: ModelFacts, method: PeftMethod, options: dict[str, Any]):
    """Prefix tuning: embedding n × (2·L·d) with d = token_dim; with prefix_projection, an
    n × d embedding and a two-layer MLP d → H → 2·L·d (H = encoder_hidden_size, default d)."""
    n = _int_option(options, "num_virtual_tokens", 1)
    d = _token_dim(facts, options, True)
    layers = facts.architecture.num_layers
    if not _bool_option(options, "prefix_projection"):
        return ((1, n, 2 * layers * d),), 0, f"{n} × 2 × {layers} × {d}"
    h = options["encoder_hidden_size"] or d
    return ((1, n, d), (1, h, d), (1, h, 1), (1, 2 * layers * d, h),
            (1, 2 * layers * d, 1)), 0, f"{n} × {d} + MLP {d} → {h} → 2 × {layers} × {d}"


def _ptuning_tensors(facts: ModelFacts, method: PeftMethod, options: dict[str, Any]):
    """P-tuning (PromptEncoder): embedding n × d, then MLP d → H → H → d (three linears with
    bias), or a bidirectional LSTM (encoder_num_layers) and an MLP 2H → 2H → d."""
    n = _int_option(options, "num_virtual_tokens", 1)
    d = _token_dim(facts, options, False)
    h = options["encoder_hidden_size"] or d
    kind = options["encoder_reparameterization_type"]
    embedding = ((1, n, d),)
    if kind == "MLP":
        return embedding + ((1, h, d), (1, h, 1), (1, h, h), (1, h, 1), (1, d, h),
                            (1, d, 1)), n, f"{n} × {d} + MLP {d} → {h} → {h} → {d}"
    if kind != "LSTM":
        raise SheetError("expected MLP or LSTM",
                         field=f"{_OPTIONS_FIELD}.encoder_reparameterization_type", value=kind)
    layers = _int_option(options, "encoder_num_layers", 1)
    lstm: list[TensorShape] = []
    for i in range(layers):     # torch.nn.LSTM: W_ih 4H × in, W_hh 4H × H, two 4H biases
        width = d if i == 0 else 2 * h
        lstm += [(2, 4 * h, width), (2, 4 * h, h), (4, 4 * h, 1)]
    return embedding + tuple(lstm) + ((1, 2 * h, 2 * h), (1, 2 * h, 1), (1, d, 2 * h),
                                      (1, d, 1)), n, f"{n} × {d} + LSTM({d}, {h}) + MLP"


def _prompt_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """The n virtual tokens run through every layer and the logits (counted by sizing the
    sequence as s + n, ``PeftModelForCausalLM.forward`` concatenates them to the input
    embeddings and the labels); p-tuning's MLP keeps its inputs b × n × (d + 2H) in c."""
    batch, c = step.batch, step.c
    if adapters.method != "p-tuning":
        return Added(0, f"{adapters.virtual_tokens} virtual tokens added to the sequence")
    n, o = adapters.virtual_tokens, adapters.options
    d = _token_dim(facts, o, False)
    h = o["encoder_hidden_size"] or d
    if o["encoder_reparameterization_type"] != "MLP":
        return Added(None, unknown_reason="p-tuning's LSTM encoder activations are not derived")
    saved = batch * n * (d + 2 * h) * c
    return Added(saved, f"{n} virtual tokens added to the sequence; prompt MLP inputs "
                 f"{batch} × {n} × ({d} + 2 × {h}) × {c} B = {saved} B")


def _prefix_added(adapters: PeftAdapters, facts: ModelFacts, step: Step) -> Added:
    """The prefix enters every layer's KV (peft_model.py ``get_prompt``: cast to the base
    model's dtype, a DynamicCache the layers extend): attention keeps K and V over n more
    positions, 2 × b × n × kv_heads × head_dim × c per layer (one layer under checkpointing);
    with prefix_projection the MLP keeps b × n × (d + H) in c."""
    batch, c, checkpointing = step.batch, step.c, step.checkpointing
    arch = facts.architecture
    if arch.mla:
        return Added(None, unknown_reason="PEFT sizes the prefix as head_dim (qk_rope_head_dim) "
                     "× KV heads, which is neither MLA's key (qk_nope + qk_rope) nor value "
                     "width: what its attention keeps is not derived")
    if _token_dim(facts, adapters.options, True) != arch.head_dim * arch.num_key_value_heads:
        return Added(None, unknown_reason=f"PEFT sizes the prefix {facts.model_type} as "
                     "hidden_size (its config names no num_key_value_heads), not its KV width: "
                     "what its attention keeps is not derived")
    n, o = _int_option(adapters.options, "num_virtual_tokens", 1), adapters.options
    per_layer = 2 * batch * n * arch.num_key_value_heads * arch.head_dim * c
    layers = 1 if checkpointing else arch.num_layers
    saved = per_layer * layers
    text = f"K, V over {n} prefix positions 2 × {batch} × {n} × {arch.num_key_value_heads} × " \
           f"{arch.head_dim} × {c} B × {layers} layers"
    if o["prefix_projection"]:
        d = _token_dim(facts, o, True)
        h = o["encoder_hidden_size"] or d
        saved += batch * n * (d + h) * c
        text += f" + prefix MLP inputs {batch} × {n} × ({d} + {h}) × {c} B"
    return Added(saved, f"{text} = {saved} B")


class Step(NamedTuple):
    """The training step a method's additions are sized for.

    Attributes:
        tokens: T, microbatch × sequence length (tokens).
        batch: the microbatch (sequences).
        c: compute dtype bytes. a: trainable dtype bytes.
        amp: precision amp (autocast over fp32 adapters).
        checkpointing: gradient checkpointing (one layer's saved tensors at a time).
        base_bytes: bytes of a float dtype the frozen base layers hold (c; 4 on a quantized
            base, whose integer dtype PEFT does not cast buffers to).
    """

    tokens: int
    batch: int
    c: int
    a: int
    amp: bool
    checkpointing: bool
    base_bytes: int


_TARGET = {"target_modules": None}
_LYCORIS = "peft/tuners/lycoris_utils.py"
PEFT_METHODS: dict[str, PeftMethod] = {m.name: m for m in (
    PeftMethod("lora", "LoraConfig", {}, "peft/tuners/lora/layer.py", None, _nothing_added),
    PeftMethod("rslora", "LoraConfig", {}, "peft/tuners/lora/layer.py (use_rslora: scaling "
               "alpha/√r, same tensors)", None, _nothing_added),
    PeftMethod("dora", "LoraConfig", {}, "peft/tuners/lora/layer.py, peft/tuners/lora/dora.py",
               None, _dora_added),
    PeftMethod("ia3", "IA3Config", {**_TARGET, "feedforward_modules": None},
               "peft/tuners/ia3/layer.py", _per_module(
                   _ia3_tensors, lambda m, o: _ia3_feedforward(m, o)), _ia3_added,
               default_table="ia3", amp_copies_input=True),
    PeftMethod("loha", "LoHaConfig", {**_TARGET, "r": 8}, f"peft/tuners/loha/layer.py, {_LYCORIS}",
               _per_module(_loha_tensors), _delta_added),
    PeftMethod("lokr", "LoKrConfig", {**_TARGET, "r": 8, "decompose_both": False,
                                      "decompose_factor": -1},
               f"peft/tuners/lokr/layer.py, {_LYCORIS}", _per_module(_lokr_tensors),
               _delta_added, amp_copies_input=True),
    PeftMethod("oft", "OFTConfig", {**_TARGET, "r": 0, "oft_block_size": 32,
                                    "block_share": False, "use_cayley_neumann": True,
                                    "num_cayley_neumann_terms": 5},
               "peft/tuners/oft/layer.py", _per_module(_oft_tensors), _oft_added,
               amp_copies_input=True),
    PeftMethod("boft", "BOFTConfig", {**_TARGET, "boft_block_size": 4, "boft_block_num": 0,
                                      "boft_n_butterfly_factor": 1},
               "peft/tuners/boft/layer.py", _per_module(_boft_tensors), _boft_added),
    PeftMethod("vera", "VeraConfig", {**_TARGET, "r": 256}, "peft/tuners/vera/layer.py",
               _per_module(_vera_tensors, lambda m, o: False), _vera_added),
    PeftMethod("adalora", "AdaLoraConfig", {**_TARGET, "init_r": 12, "target_r": 8,
                                          "total_step": None},
               "peft/tuners/adalora/layer.py", _per_module(_adalora_tensors), _adalora_added,
               default_table="adalora", amp_copies_input=True),
    PeftMethod("prompt", "PromptTuningConfig", {"num_virtual_tokens": None, "token_dim": None},
               "peft/tuners/prompt_tuning/model.py", _prompt_tensors, _prompt_added,
               prompt=True),
    PeftMethod("prefix", "PrefixTuningConfig", {"num_virtual_tokens": None, "token_dim": None,
                                                "prefix_projection": False,
                                                "encoder_hidden_size": None},
               "peft/tuners/prefix_tuning/model.py, peft/utils/other.py", _prefix_tensors,
               _prefix_added, prompt=True),
    PeftMethod("p-tuning", "PromptEncoderConfig", {
        "num_virtual_tokens": None, "token_dim": None, "encoder_hidden_size": None,
        "encoder_reparameterization_type": "MLP", "encoder_num_layers": 2},
        "peft/tuners/p_tuning/model.py", _ptuning_tensors, _prompt_added, prompt=True),
)}
"""Every ``training.peft`` method (PEFT 0.21.2): the registry ``trainable`` reads."""


def resolved_options(training: Training) -> dict[str, Any]:
    """``training.peft_options`` over the method's PEFT defaults.

    Raises:
        SheetError: an option the method does not read (the error lists those it reads); a
            required option left unset (``num_virtual_tokens`` of the prompt methods).
    """
    method = PEFT_METHODS[training.peft]
    given = dict(training.peft_options)
    unknown = sorted(set(given) - set(method.options))
    if unknown:
        known = ", ".join(sorted(method.options)) or "none (lora, dora and rslora read "\
            "training.lora)"
        raise SheetError(f"peft {method.name} reads no option {unknown[0]!r}; it reads: {known}",
                         field=f"{_OPTIONS_FIELD}.{unknown[0]}", value=given[unknown[0]])
    options = {**method.options, **given}
    if method.prompt and options["num_virtual_tokens"] is None:
        raise SheetError(f"peft {method.name} needs num_virtual_tokens (PEFT has no default)",
                         field=f"{_OPTIONS_FIELD}.num_virtual_tokens", value=None)
    return options


def peft_adapters(training: Training, facts: ModelFacts) -> PeftAdapters:
    """What ``training.peft`` trains on ``facts``: PEFT 0.21.2's trainable tensors.

    Raises:
        SheetError: options the method does not read or cannot take; targets that match no
            module, or default targets PEFT has none of for this model type.
    """
    method = PEFT_METHODS[training.peft]
    options = resolved_options(training)
    if training.peft in LORA_METHODS:
        shares, targets, total, tensors, formula = _lora_count(facts, training,
                                                               training.peft == "dora")
        return PeftAdapters(method.name, tuple(s.module for s in shares), targets, total,
                            tensors, formula, shares, 0, options, method.source)
    if method.prompt:
        tensors, virtual, text = method.count(facts, method, options)
        total = sum(n * r * c for n, r, c in tensors)
        return PeftAdapters(method.name, (), (), total, tuple(tensors),
                            f"{text} = {total} parameters", (), virtual, options, method.source)
    if method.name == "ia3" and options["feedforward_modules"] is None:
        table = peft_default_targets(facts.model_type, "ia3_feedforward")
        if table is None:
            raise SheetError(f"PEFT has no default IA3 feedforward_modules for model_type "
                             f"{facts.model_type!r}: list them (a subset of target_modules)",
                             field=f"{_OPTIONS_FIELD}.feedforward_modules", value=None)
        options["feedforward_modules"] = list(table)
    shares, targets = method.count(facts, method, options)
    total = sum(s.parameters for s in shares)
    tensors = tuple((s.module.count, r, c) for s in shares for r, c in s.tensors)
    terms = "; ".join(f"{s.module.path}: {s.module.count} × ("
                      f"{' + '.join(f'{r}×{c}' for r, c in s.tensors)})" for s in shares)
    return PeftAdapters(method.name, tuple(s.module for s in shares), targets, total, tensors,
                        f"{terms} = {total} parameters", shares, 0, options, method.source)


def peft_config_kwargs(training: Training) -> tuple[str, dict[str, Any]]:
    """PEFT's config class name and keywords for ``training`` (``simulate`` builds the config
    with them; ``task_type`` CAUSAL_LM is added there)."""
    name = training.peft
    method = PEFT_METHODS[name]
    if name in LORA_METHODS:
        lora = training.lora
        kw: dict[str, Any] = {
            "r": lora.rank, "lora_alpha": lora.alpha or 2 * lora.rank, "lora_dropout": 0.0,
            "target_modules": None if lora.targets == "default" else lora.targets,
            "use_dora": name == "dora", "use_rslora": name == "rslora"}
        return method.config_class, kw
    options = {k: v for k, v in resolved_options(training).items() if v is not None}
    if name == "adalora":
        options.setdefault("total_step", 1)   # PEFT requires it; it does not change memory
    return method.config_class, options
