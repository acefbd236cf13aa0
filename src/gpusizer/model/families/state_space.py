"""Hybrid decoders whose layers are Mamba / linear-attention mixers, attention, or neither.

Pure counting, like ``decoder.py``: a family reads its config and states, per layer, which token
mixer it has (``attention``, ``mixer`` or none) and which feed-forward block (dense, MoE or none);
:func:`describe_hybrid` sums the parameter groups, lists the linear modules by role and returns
the :class:`~gpusizer.model.architecture.Architecture` with the mixers' per-sequence states
(:class:`~gpusizer.model.facts.RecurrentState`).

The mixers' parameters (sources: transformers 5.24):

- Mamba-2 (``models/mamba2/modeling_mamba2.py`` ``Mamba2Mixer``; the same block in Nemotron-H,
  Falcon-H1, Granite 4.0 hybrid): ``in_proj`` hidden → 2·I + 2·G·N + H (gate, x, B, C, dt; I =
  heads × head_dim), ``conv1d`` over I + 2·G·N channels (depthwise: channels × kernel, + bias),
  ``dt_bias``, ``A_log``, ``D`` (H each), a gated RMSNorm of I, ``out_proj`` I → hidden;
- Mamba-1 (``models/jamba/modeling_jamba.py`` ``JambaMambaMixer``): ``in_proj`` hidden → 2·I,
  ``conv1d`` over I, ``x_proj`` I → R + 2·N, ``dt_proj`` R → I (+ bias), ``A_log`` I × N, ``D``
  I, ``out_proj`` I → hidden, and three RMSNorms (R, N, N);
- gated delta-net (``models/qwen3_next/modeling_qwen3_next.py`` ``Qwen3NextGatedDeltaNet``):
  ``in_proj_qkvz`` hidden → 2·K + 2·V (K = key heads × k_dim, V = value heads × v_dim),
  ``in_proj_ba`` hidden → 2 × value heads, ``conv1d`` over 2·K + V channels (no bias),
  ``dt_bias`` and ``A_log`` (value heads), a gated RMSNorm of v_dim, ``out_proj`` V → hidden.

Roles: the mixer's input projection reads the layer's norm output like q/k/v
(``attention_in``), its output projection writes the residual (``attention_out``); Mamba-1's
``x_proj`` and ``dt_proj`` read internal latents (``attention_latent``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..architecture import FULL, NO_CACHE, RECURRENT, Architecture
from ..config_reader import ConfigReader
from ..facts import (LinearModule, ModuleRole, MoeDims, ParamGroup, PositionKind,
                     RecurrentState)
from .decoder import Experts, Linear, _linear_groups, modules_of

__all__ = ["Mixer", "HybridSpec", "mamba2_mixer", "mamba1_mixer", "gated_delta_net",
           "mamba_heads", "describe_hybrid"]


@dataclass(frozen=True)
class Mixer:
    """One recurrent token mixer (per layer).

    Attributes:
        linears: its ``nn.Linear`` modules.
        other_elements: its other parameters (depthwise conv weight and bias, ``A_log``, ``D``,
            ``dt_bias``), kept in 16 bit by every weight format (not ``nn.Linear``).
        norm_elements: its norms (gated RMSNorm; Mamba-1's dt/B/C norms).
        state: the per-sequence state of one such layer (``layers`` = 1).
    """

    linears: tuple[Linear, ...]
    other_elements: int
    norm_elements: int
    state: RecurrentState


def mamba2_mixer(hidden: int, *, heads: int, head_dim: int, groups: int, d_state: int,
                 conv_kernel: int, bias: bool, conv_bias: bool, out_bias: bool | None = None,
                 gated_norm: bool = True, chunk: int = 256) -> Mixer:
    """Mamba-2's SSD mixer (``Mamba2Mixer``; see the module docstring). State per sequence:
    conv ``I + 2·G·N`` channels × kernel, SSM ``heads × head_dim × d_state`` in fp32.
    ``out_bias``: the output projection's bias when it differs from ``bias`` (Falcon-H1
    ``projectors_bias``); ``gated_norm``: False without the gated RMSNorm (Falcon-H1
    ``mamba_rms_norm: false``)."""
    inner = heads * head_dim
    conv = inner + 2 * groups * d_state
    linears = (Linear(inner + conv + heads, hidden, bias, "in_proj", role="attention_in"),
               Linear(hidden, inner, bias if out_bias is None else out_bias, "out_proj",
                      role="attention_out"))
    other = conv * conv_kernel + (conv if conv_bias else 0) + 3 * heads
    return Mixer(linears, other, inner if gated_norm else 0,
                 RecurrentState("ssd", 1, conv, conv_kernel, heads * head_dim * d_state,
                                in_proj_width=inner + conv + heads, inner=inner, heads=heads,
                                groups=groups, chunk=chunk))


def mamba_heads(cfg: ConfigReader, inner: int) -> tuple[int, int]:
    """Falcon-H1's and Granite 4.0's Mamba heads and head width: ``mamba_n_heads`` (128) and
    ``mamba_d_head`` ("auto" = ``inner`` / heads), whose product must be the Mamba width.

    Raises:
        ModelError: heads × head width is not ``inner``.
    """
    heads = cfg.optional_int("mamba_n_heads", 128)
    head_dim = cfg.optional_int_or_auto("mamba_d_head", inner // heads)
    if heads * head_dim != inner:
        raise cfg.error("mamba_d_head", f"× mamba_n_heads ({head_dim} × {heads}) must equal the "
                        f"Mamba width {inner}", head_dim)
    return heads, head_dim


def mamba1_mixer(hidden: int, *, inner: int, d_state: int, dt_rank: int, conv_kernel: int,
                 bias: bool, conv_bias: bool, bc_norms: bool) -> Mixer:
    """Mamba-1's selective-scan mixer (``JambaMambaMixer``). State per sequence: conv ``inner``
    channels × kernel, SSM ``inner × d_state`` in fp32."""
    linears = (Linear(2 * inner, hidden, bias, "in_proj", role="attention_in"),
               Linear(dt_rank + 2 * d_state, inner, False, "x_proj", role="attention_latent"),
               Linear(inner, dt_rank, True, "dt_proj", role="attention_latent"),
               Linear(hidden, inner, bias, "out_proj", role="attention_out"))
    other = inner * conv_kernel + (inner if conv_bias else 0) + inner * d_state + inner
    norms = dt_rank + 2 * d_state if bc_norms else 0
    return Mixer(linears, other, norms,
                 RecurrentState("selective_scan", 1, inner, conv_kernel, inner * d_state,
                                in_proj_width=2 * inner + dt_rank + 2 * d_state + inner,
                                inner=inner, chunk=2048))


def gated_delta_net(hidden: int, *, key_heads: int, value_heads: int, key_dim: int,
                    value_dim: int, conv_kernel: int) -> Mixer:
    """Qwen3-Next's gated delta-net (``Qwen3NextGatedDeltaNet``). State per sequence: conv
    ``2·K + V`` channels × kernel, delta-rule state ``value_heads × key_dim × value_dim`` in
    fp32."""
    k, v = key_heads * key_dim, value_heads * value_dim
    conv = 2 * k + v
    linears = (Linear(2 * k + 2 * v, hidden, False, "in_proj_qkvz", role="attention_in"),
               Linear(2 * value_heads, hidden, False, "in_proj_ba", role="attention_in"),
               Linear(hidden, v, False, "out_proj", role="attention_out"))
    return Mixer(linears, conv * conv_kernel + 2 * value_heads, value_dim,
                 RecurrentState("gated_delta_net", 1, conv, conv_kernel,
                                value_heads * key_dim * value_dim,
                                in_proj_width=2 * k + 2 * v + 2 * value_heads, inner=v,
                                heads=value_heads, chunk=64))


@dataclass(frozen=True)
class HybridSpec:
    """A hybrid model's module shapes, layer by layer.

    Attributes:
        mixers: per layer ``"attention"``, ``"mixer"``, ``"both"`` (attention and a mixer side
            by side: Falcon-H1) or ``""`` (no token mixer).
        ffn: per layer ``"dense"``, ``"moe"`` or ``""`` (no feed-forward block).
        attention: one attention layer's matrices; ``attention_norm_elements`` its q/k norms.
        mixer: the recurrent mixer.
        dense_mlp: one dense MLP's matrices.
        experts: the MoE block, or None.
        layer_norm_elements: per layer, the block norms (a layer with one block has one norm:
            ``norms_of`` gives it per layer instead when set).
        norms_of: per layer, its block norms' elements (overrides ``layer_norm_elements``).
        prefixes: module names of attention, mixer, MLP inside a layer (``self_attn``,
            ``mamba``, ``feed_forward``…).
        shared_gate: Qwen3-Next's ``shared_expert_gate`` (hidden → 1) beside the shared expert.
        experts_per_token: top-k routed experts.
        gated_mlp: the MLPs are gate/up/down (False: two matrices).
        peft_converts_experts: PEFT 0.21 maps LoRA targets onto the stacked experts
            (``_MOE_TARGET_MODULE_MAPPING`` knows the model); False: the experts keep no
            ``converted_from`` names and ``all-linear`` leaves them and the router out, as
            ``get_peft_model`` does on Jamba.
        moe_extra: other linears of a MoE block (Nemotron-H's latent ``fc1_latent_proj`` /
            ``fc2_latent_proj``).
        shared_path: the shared expert's module path in the layer when it is not inside the
            MoE block (Granite 4.0 ``shared_mlp``); empty: ``<mlp_prefix>.<shared_name>``.
    """

    hidden_size: int
    vocab_size: int
    mixers: tuple[str, ...]
    ffn: tuple[str, ...]
    attention: tuple[Linear, ...]
    mixer: Mixer
    final_norm_elements: int
    tie_word_embeddings: bool
    layer_norm_elements: int = 0
    norms_of: tuple[int, ...] = ()
    attention_norm_elements: int = 0
    dense_mlp: tuple[Linear, ...] = ()
    experts: Experts | None = None
    attention_prefix: str = "self_attn"
    mixer_prefix: str = "mamba"
    mlp_prefix: str = "mlp"
    shared_name: str = "shared_expert"
    shared_gate: bool = False
    experts_per_token: int = 1
    gated_mlp: bool = True
    peft_converts_experts: bool = True
    moe_extra: tuple[Linear, ...] = ()
    shared_path: str = ""


def describe_hybrid(s: HybridSpec, *, num_attention_heads: int, num_key_value_heads: int,
                    head_dim: int, intermediate_size: int, context_window_tokens: int | None,
                    peft_default_targets: tuple[str, ...] | None,
                    positions: PositionKind = "rope", notes: tuple[str, ...] = ()
                    ) -> Architecture:
    """The :class:`Architecture` of a hybrid: parameter groups, modules, layer types and the
    recurrent states (``layers`` = the mixer layers)."""
    d, v = s.hidden_size, s.vocab_size
    n = len(s.mixers)
    n_attn = sum(1 for m in s.mixers if m in ("attention", "both"))
    n_mix = sum(1 for m in s.mixers if m in ("mixer", "both"))
    n_dense, n_moe = s.ffn.count("dense"), s.ffn.count("moe")
    groups: list[ParamGroup] = [ParamGroup("embed_tokens", v * d, "embedding", 1, v, d, v * d,
                                           ((1, v, d),))]
    groups += _linear_groups("attention", "linear", s.attention, n_attn)
    groups += _linear_groups("mixer", "linear", s.mixer.linears, n_mix)
    if n_mix and s.mixer.other_elements:
        groups.append(ParamGroup("mixer_conv_and_ssm", n_mix * s.mixer.other_elements, "other"))
    groups += _linear_groups("mlp", "linear", s.dense_mlp, n_dense)
    e = s.experts
    shared = e.shared if e else ()
    gate = (Linear(1, d, False, "shared_expert_gate", role="router"),) if s.shared_gate else ()
    if e is not None and n_moe:
        groups += _linear_groups("experts", "expert_linear", e.expert, n_moe * e.count,
                                 per_tensor=e.count if e.stacked else 1)
        groups += _linear_groups("shared_experts", "linear", shared, n_moe)
        groups += _linear_groups("router", "router", (e.router,) + gate, n_moe)
        groups += _linear_groups("moe_latent", "linear", s.moe_extra, n_moe)
    block_norms = sum(s.norms_of) if s.norms_of else n * s.layer_norm_elements
    norms = (block_norms + n_attn * s.attention_norm_elements + n_mix * s.mixer.norm_elements
             + s.final_norm_elements)
    groups.append(ParamGroup("norms", norms, "norm"))
    if not s.tie_word_embeddings:
        groups.append(ParamGroup("lm_head", v * d, "lm_head", 1, v, d, v * d, ((1, v, d),)))

    modules: list[LinearModule] = []

    def add(prefix: str, mats: tuple[Linear, ...], count: int,
            roles: dict[str, ModuleRole] | None = None) -> None:
        modules.extend(modules_of(prefix, mats, count, roles))

    add(s.attention_prefix, s.attention, n_attn)
    add(s.mixer_prefix, s.mixer.linears, n_mix)
    add(s.mlp_prefix, s.dense_mlp, n_dense)
    if e is not None and n_moe:
        *first, last = e.expert
        stacked_in = "gate_up_proj" if len(first) > 1 else first[0].name
        for name, rows, cols, sources in (
                (stacked_in, sum(m.rows for m in first), first[0].cols, first),
                ("down_proj", last.rows, last.cols, (last,))):
            modules.append(LinearModule(f"{s.mlp_prefix}.experts.{name}", rows, cols, n_moe,
                                        "expert", e.count,
                                        converted_from=tuple(m.name for m in sources)
                                        if s.peft_converts_experts else ()))
        add(s.shared_path or f"{s.mlp_prefix}.{s.shared_name}", shared, n_moe,
            {"mlp_in": "shared_expert_in", "mlp_out": "shared_expert_out"})
        add(s.mlp_prefix, (e.router,) + gate + s.moe_extra, n_moe)
    modules.append(LinearModule("lm_head", v, d, 1, "lm_head"))

    # a layer with both keeps keys and values (and its state, in ``recurrent``)
    kinds = {"attention": FULL, "both": FULL, "mixer": RECURRENT, "": NO_CACHE}
    st = s.mixer.state
    recurrent = (replace(st, layers=n_mix),) if n_mix else ()
    moe = (MoeDims(e.count, s.experts_per_token, e.expert[-1].cols, 1 if shared else 0, n_moe)
           if e is not None and n_moe else None)
    return Architecture(
        hidden_size=d, num_layers=n, num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads, head_dim=head_dim, vocab_size=v,
        intermediate_size=intermediate_size, gated_mlp=s.gated_mlp,
        tie_word_embeddings=s.tie_word_embeddings,
        layer_types=tuple(kinds[m] for m in s.mixers), sliding_window=None,
        context_window_tokens=context_window_tokens, params=tuple(g for g in groups if g.count),
        positions=positions, peft_default_targets=peft_default_targets, moe=moe, notes=notes,
        modules=tuple(modules), recurrent=recurrent)
