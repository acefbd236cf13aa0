"""Parameter counting for a decoder-only transformer, from module shapes (pure, no config reading).

Every family module describes its layers as :class:`Linear` matrices plus norm, sink and
embedding element counts in a :class:`DecoderShapes`; :func:`param_groups` turns that into
:class:`~gpusizer.model.facts.ParamGroup` totals by component and role. One ``nn.Linear(in, out,
bias)`` holds ``out × in`` weights (+ ``out`` bias) — PyTorch ``torch/nn/modules/linear.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..facts import LinearModule, ModuleRole, ParamGroup, ParamRole

__all__ = ["Linear", "Experts", "DecoderShapes", "gqa_attention", "mlp", "param_groups",
           "linear_modules", "modules_of"]


@dataclass(frozen=True)
class Linear:
    """One weight matrix: ``rows`` = out_features, ``cols`` = in_features, optional bias (rows),
    its module name in transformers (``q_proj``, ``c_attn``…, the name PEFT targets) and its
    role in the layer (:data:`~gpusizer.model.facts.ModuleRole`: what the memory stage reads)."""

    rows: int
    cols: int
    bias: bool = False
    name: str = ""
    role: ModuleRole = field(kw_only=True)


@dataclass(frozen=True)
class Experts:
    """The MoE block of one layer.

    Attributes:
        count: routed experts.
        expert: one routed expert's matrices.
        router: the router (gate) matrix, ``count`` × hidden; its bias, if any, is a router bias.
        shared: the always-on shared expert MLP (DeepSeek), empty if none.
        stacked: the checkpoint stores each matrix kind as one 3-D tensor over all experts
            (gpt-oss ``gate_up_proj``), rather than one tensor per expert.

    ``expert`` names the checkpoint's per-expert tensors (``gate_proj``…; Mixtral ``w1``, ``w3``,
    ``w2``): transformers v5 concatenates them into stacked parameters, and PEFT maps LoRA targets
    by those names (:attr:`~gpusizer.model.facts.LinearModule.converted_from`).
    """

    count: int
    expert: tuple[Linear, ...]
    router: Linear
    shared: tuple[Linear, ...] = ()
    stacked: bool = False


@dataclass(frozen=True)
class DecoderShapes:
    """Module shapes of a whole model (per-layer figures are for one decoder layer).

    Attributes:
        layer_norm_elements: per layer, the block's norms (weight, and bias for LayerNorm).
        attention_norm_elements: per layer, norms inside attention (q/k norms, MLA latent norms).
        attention_sink_elements: per layer, learned attention-sink logits (gpt-oss).
        dense_mlp: matrices of the dense MLP, used on the ``num_layers - moe_layers`` dense layers.
        position_embeddings: elements of learned absolute position embeddings (GPT-2).
        attention_prefix / mlp_prefix: the attribute names of the attention and MLP blocks in a
            decoder layer (``self_attn``/``mlp``; GPT-2 ``attn``; Falcon ``self_attention``).
        lm_head_bias: the output layer has a vocab-wide bias (PhiMoE ``lm_head_bias``).
        shared_name: the shared expert's attribute in the MoE block (``shared_experts``; Llama 4
            ``shared_expert``).
    """

    hidden_size: int
    vocab_size: int
    num_layers: int
    attention: tuple[Linear, ...]
    layer_norm_elements: int
    final_norm_elements: int
    tie_word_embeddings: bool
    attention_norm_elements: int = 0
    attention_sink_elements: int = 0
    dense_mlp: tuple[Linear, ...] = ()
    experts: Experts | None = None
    moe_layers: int = 0
    position_embeddings: int = 0
    attention_prefix: str = "self_attn"
    mlp_prefix: str = "mlp"
    lm_head_bias: bool = False
    shared_name: str = "shared_experts"


def gqa_attention(hidden: int, heads: int, kv_heads: int, head_dim: int, *, qkv_bias: bool,
                  o_bias: bool, fused_qkv: bool = False,
                  names: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
                  ) -> tuple[Linear, ...]:
    """q, k, v, o projections of multi-head / grouped-query attention.

    q: hidden → heads·head_dim; k, v: hidden → kv_heads·head_dim; o: heads·head_dim →
    hidden.
    ``fused_qkv`` stores q, k, v as one matrix (Phi-3 ``qkv_proj``, Falcon ``query_key_value``,
    GPT-2 ``c_attn``): same element count, one matrix. ``names``: the module names, q, k, v, o
    (fused: qkv, o). Source: transformers ``models/llama/modeling_llama.py`` ``LlamaAttention``.
    """
    q, kv = heads * head_dim, kv_heads * head_dim
    o = Linear(hidden, q, o_bias, names[-1], role="attention_out")
    if fused_qkv:
        qkv = names[0] if len(names) == 2 else "qkv_proj"
        return (Linear(q + 2 * kv, hidden, qkv_bias, qkv, role="attention_in"), o)
    return (Linear(q, hidden, qkv_bias, names[0], role="attention_in"),
            Linear(kv, hidden, qkv_bias, names[1], role="attention_in"),
            Linear(kv, hidden, qkv_bias, names[2], role="attention_in"), o)


def mlp(hidden: int, intermediate: int, *, gated: bool, bias: bool = False,
        fused_gate_up: bool = False, names: tuple[str, ...] | None = None) -> tuple[Linear, ...]:
    """Feed-forward matrices: gated = gate, up (hidden → intermediate) and down; else up and down.

    ``names``: module names in that order (defaults: ``gate_proj``, ``up_proj``, ``down_proj``;
    fused ``gate_up_proj``, ``down_proj``; two matrices ``up_proj``, ``down_proj``). Roles: the
    last matrix is ``mlp_out``, the others ``mlp_in``.
    Source: transformers ``models/llama/modeling_llama.py`` ``LlamaMLP`` (gated),
    ``models/gpt2/modeling_gpt2.py`` ``GPT2MLP`` (two matrices); Phi-3 fuses gate and up.
    """
    if not gated:
        up, down = names or ("up_proj", "down_proj")
        return (Linear(intermediate, hidden, bias, up, role="mlp_in"),
                Linear(hidden, intermediate, bias, down, role="mlp_out"))
    if fused_gate_up:
        gate_up, down = names or ("gate_up_proj", "down_proj")
        return (Linear(2 * intermediate, hidden, bias, gate_up, role="mlp_in"),
                Linear(hidden, intermediate, bias, down, role="mlp_out"))
    gate, up, down = names or ("gate_proj", "up_proj", "down_proj")
    return (Linear(intermediate, hidden, bias, gate, role="mlp_in"),
            Linear(intermediate, hidden, bias, up, role="mlp_in"),
            Linear(hidden, intermediate, bias, down, role="mlp_out"))


def param_groups(shapes: DecoderShapes) -> tuple[ParamGroup, ...]:
    """Whole-model parameter groups by component and role; empty groups are left out.

    Totals: embed V·d (+ learned positions) + L·(attention + norms + sinks) + dense layers ·
    MLP + MoE layers · (E · expert + shared + router) + final norm + lm_head V·d unless tied
    (a tied lm_head shares the embedding's storage: ``model.num_parameters()`` counts it once).
    """
    s = shapes
    d, v, n = s.hidden_size, s.vocab_size, s.num_layers
    dense_layers = n - s.moe_layers
    out: list[ParamGroup] = [ParamGroup("embed_tokens", v * d, "embedding", 1, v, d, v * d,
                                        ((1, v, d),))]
    if s.position_embeddings:
        out.append(ParamGroup("position_embeddings", s.position_embeddings, "other"))
    out += _linear_groups("attention", "linear", s.attention, n)
    if s.attention_sink_elements:
        out.append(ParamGroup("attention_sinks", n * s.attention_sink_elements, "other"))
    out += _linear_groups("mlp", "linear", s.dense_mlp, dense_layers)
    e = s.experts
    if e is not None and s.moe_layers:
        per_tensor = e.count if e.stacked else 1
        out += _linear_groups("experts", "expert_linear", e.expert, s.moe_layers * e.count,
                              per_tensor=per_tensor)
        out += _linear_groups("shared_experts", "linear", e.shared, s.moe_layers)
        out += _linear_groups("router", "router", (e.router,), s.moe_layers)
    norms = n * (s.layer_norm_elements + s.attention_norm_elements) + s.final_norm_elements
    out.append(ParamGroup("norms", norms, "norm"))
    if not s.tie_word_embeddings:
        out.append(ParamGroup("lm_head", v * d, "lm_head", 1, v, d, v * d, ((1, v, d),)))
    if s.lm_head_bias:
        out.append(ParamGroup("lm_head_bias", v, "bias"))
    return tuple(g for g in out if g.count)


def _linear_groups(name: str, role: ParamRole, matrices: tuple[Linear, ...], times: int, *,
                   per_tensor: int = 1) -> list[ParamGroup]:
    """Weights of ``matrices`` repeated ``times``, then their biases as a ``<name>_bias`` group.

    ``per_tensor``: how many repeats the checkpoint stores in one tensor (stacked experts).
    """
    if not matrices or not times:
        return []
    counted = Counter((m.rows, m.cols) for m in matrices)
    shapes = tuple((k * times, r, c) for (r, c), k in sorted(counted.items()))
    weights = sum(k * r * c for k, r, c in shapes)
    largest = max(r * c for _, r, c in shapes) * per_tensor
    groups = [ParamGroup(name, weights, role, times * len(matrices),
                         sum(k * r for k, r, _ in shapes), sum(k * c for k, _, c in shapes),
                         largest, shapes)]
    bias = times * sum(m.rows for m in matrices if m.bias)
    if bias:
        groups.append(ParamGroup(f"{name}_bias", bias, "bias"))
    return groups


def modules_of(prefix: str, mats: tuple[Linear, ...], count: int,
               roles: dict[str, ModuleRole] | None = None) -> list[LinearModule]:
    """``mats`` as :class:`LinearModule` s under ``prefix``, each in ``count`` layers (none when
    ``count`` is 0), their roles renamed through ``roles`` (a shared expert's ``mlp_in`` →
    ``shared_expert_in``)."""
    if not count:
        return []
    return [LinearModule(f"{prefix}.{m.name}", m.rows, m.cols, count,
                         (roles or {}).get(m.role, m.role)) for m in mats]


def linear_modules(shapes: DecoderShapes) -> tuple[LinearModule, ...]:
    """The model's linear layers by module path and role, as PEFT sees them (``target_modules``
    suffixes).

    Decoder-layer ``nn.Linear``/``Conv1D`` modules under the attention and MLP prefixes, with the
    role their :class:`Linear` states; MoE routed experts as transformers v5 stores them — one
    stacked parameter per kind, ``gate_up_proj`` (gate and up fused, 2·I × h) and ``down_proj``
    (h × I), over all experts (``models/mixtral/modeling_mixtral.py`` ``MixtralExperts``), role
    ``expert`` — which PEFT reaches through ``target_parameters`` with one adapter per expert
    (``peft/tuners/lora/layer.py`` ``ParamWrapper``); shared experts under
    ``mlp.shared_experts`` (roles ``shared_expert_in`` / ``shared_expert_out``); the router
    (``mlp.gate``; gpt-oss ``mlp.router``); and ``lm_head``.
    """
    s = shapes
    dense_layers = s.num_layers - s.moe_layers
    out: list[LinearModule] = []

    def add(prefix: str, mats: tuple[Linear, ...], count: int,
            roles: dict[str, ModuleRole] | None = None) -> None:
        out.extend(modules_of(prefix, mats, count, roles))

    add(s.attention_prefix, s.attention, s.num_layers)
    add(s.mlp_prefix, s.dense_mlp, dense_layers)
    e = s.experts
    if e is not None and s.moe_layers:
        *first, last = e.expert
        # v5 stacks every matrix but the last (gate and up, or an already fused gate_up) as one
        # gate_up_proj, and the last as down_proj; the checkpoint's per-expert names stay as the
        # sources of the conversion, unless it already stores them stacked
        stacked = (("gate_up_proj", sum(m.rows for m in first), first[0].cols, first),
                   ("down_proj", last.rows, last.cols, (last,)))
        for name, rows, cols, sources in stacked:
            converted = () if e.stacked else tuple(m.name for m in sources)
            out.append(LinearModule(f"{s.mlp_prefix}.experts.{name}", rows, cols, s.moe_layers,
                                    "expert", e.count, converted_from=converted))
        add(f"{s.mlp_prefix}.{s.shared_name}", e.shared, s.moe_layers,
            {"mlp_in": "shared_expert_in", "mlp_out": "shared_expert_out"})
        out.append(LinearModule(f"{s.mlp_prefix}.{e.router.name or 'gate'}", e.router.rows,
                                e.router.cols, s.moe_layers, e.router.role))
    out.append(LinearModule("lm_head", s.vocab_size, s.hidden_size, 1, "lm_head"))
    return tuple(out)
