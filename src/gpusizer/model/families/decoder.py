"""Parameter counting for a decoder-only transformer, from module shapes (pure, no config reading).

Every family module describes its layers as :class:`Linear` matrices plus norm, sink and
embedding element counts in a :class:`DecoderShapes`; :func:`param_groups` turns that into
:class:`~gpusizer.model.facts.ParamGroup` totals by component and role. One ``nn.Linear(in, out,
bias)`` holds ``out × in`` weights (+ ``out`` bias) — PyTorch ``torch/nn/modules/linear.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..facts import ParamGroup, ParamRole

__all__ = ["Linear", "Experts", "DecoderShapes", "gqa_attention", "mlp", "param_groups"]


@dataclass(frozen=True)
class Linear:
    """One weight matrix: ``rows`` = out_features, ``cols`` = in_features, optional bias (rows)."""

    rows: int
    cols: int
    bias: bool = False


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


def gqa_attention(hidden: int, heads: int, kv_heads: int, head_dim: int, *, qkv_bias: bool,
                  o_bias: bool, fused_qkv: bool = False) -> tuple[Linear, ...]:
    """q, k, v, o projections of multi-head / grouped-query attention.

    q: hidden → heads·head_dim; k, v: hidden → kv_heads·head_dim; o: heads·head_dim →
    hidden.
    ``fused_qkv`` stores q, k, v as one matrix (Phi-3 ``qkv_proj``, Falcon ``query_key_value``,
    GPT-2 ``c_attn``): same element count, one matrix. Source: transformers
    ``models/llama/modeling_llama.py`` ``LlamaAttention``.
    """
    q, kv = heads * head_dim, kv_heads * head_dim
    o = Linear(hidden, q, o_bias)
    if fused_qkv:
        return (Linear(q + 2 * kv, hidden, qkv_bias), o)
    return (Linear(q, hidden, qkv_bias), Linear(kv, hidden, qkv_bias),
            Linear(kv, hidden, qkv_bias), o)


def mlp(hidden: int, intermediate: int, *, gated: bool, bias: bool = False,
        fused_gate_up: bool = False) -> tuple[Linear, ...]:
    """Feed-forward matrices: gated = gate, up (hidden → intermediate) and down; else up and down.

    Source: transformers ``models/llama/modeling_llama.py`` ``LlamaMLP`` (gated),
    ``models/gpt2/modeling_gpt2.py`` ``GPT2MLP`` (two matrices); Phi-3 fuses gate and up.
    """
    down = Linear(hidden, intermediate, bias)
    if not gated:
        return (Linear(intermediate, hidden, bias), down)
    if fused_gate_up:
        return (Linear(2 * intermediate, hidden, bias), down)
    return (Linear(intermediate, hidden, bias), Linear(intermediate, hidden, bias), down)


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
