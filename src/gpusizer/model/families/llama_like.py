"""The Llama-shaped decoder shared by most families: RMSNorm, RoPE, q/k/v/o attention, gated MLP.

A family module states how it departs from Llama in a :class:`LlamaStyle` (biases, q/k norms,
norms per layer, fused projections, default tying, which layers slide, the MoE block) and calls
:func:`describe_llama_like`. Source of the common shape: transformers
``models/llama/modeling_llama.py`` (``LlamaAttention``, ``LlamaMLP``, ``LlamaDecoderLayer``,
``LlamaModel``: embed_tokens, layers, final norm; ``LlamaForCausalLM``: lm_head).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..architecture import Architecture
from ..config_reader import ConfigReader
from ..facts import MoeDims
from .decoder import DecoderShapes, Experts, gqa_attention, linear_modules, mlp, param_groups

__all__ = ["Dims", "MoeBlock", "LlamaStyle", "PEFT_Q_V", "read_dims", "describe_llama_like"]

BiasRule = Literal["never", "always", "attention_bias"]

PEFT_Q_V: tuple[str, ...] = ("q_proj", "v_proj")
"""PEFT's default LoRA targets for the Llama-shaped families it lists (``peft/utils/constants.py``
``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``, peft 0.21: llama, mistral, qwen2, qwen3,
gemma, gemma2, gemma3_text)."""


@dataclass(frozen=True)
class Dims:
    """The core widths every family reads (elements)."""

    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int


@dataclass(frozen=True)
class MoeBlock:
    """A family's MoE block: the experts, which layers carry it, and the facts for ModelFacts."""

    experts: Experts
    is_moe: tuple[bool, ...]
    dims: MoeDims


@dataclass(frozen=True)
class LlamaStyle:
    """How a family departs from Llama.

    Attributes:
        tie_default: ``tie_word_embeddings`` when config.json omits it (the config class default).
        qkv_bias / o_bias: "never", "always", or "attention_bias" (read that key).
        attention_bias_default: ``attention_bias`` when absent (false; gpt-oss: true).
        mlp_bias: read ``mlp_bias_key`` (Llama: ``mlp_bias``; StarCoder2: ``use_bias``), default
            ``attention_bias_default``.
        bias_key: the key the ``"attention_bias"`` rule reads (StarCoder2: ``use_bias``).
        qk_norm: RMSNorm on q and k (Qwen3, Gemma 3): per head, 2 × head_dim per layer.
        qk_norm_width: ``"head"`` (one head_dim-wide norm shared by the heads) or
            ``"projection"`` (OLMo 2: over the whole q and k projections, (heads + kv_heads) ×
            head_dim per layer).
        norms_per_layer: hidden-wide norms per layer (2; Gemma 2/3 and GLM-4 have 4; Cohere 2's
            parallel block 1).
        norm: ``"rms"`` (weight only, fp32 upcast) or ``"layer"`` (``nn.LayerNorm``: weight and
            bias, 2 × hidden per norm; StarCoder2, PhiMoE).
        fused: Phi-3's fused ``qkv_proj`` and ``gate_up_proj``.
        fused_gate_up: only the MLP's gate and up are fused (GLM-4 ``gate_up_proj``).
        gated_mlp: gate/up/down (True) or a two-matrix MLP (StarCoder2 ``c_fc``/``c_proj``).
        mlp_names: the MLP's module names when they are not Llama's.
        lm_head_bias: read ``lm_head_bias`` (PhiMoE): a vocab-wide bias on the output layer.
        parallel_block: attention and MLP read one norm's output and are summed with the residual
            (Cohere 2); give ``norms_per_layer`` 1 with it.
        sinks: one learned attention-sink logit per query head and layer (gpt-oss).
        head_dim_default: ``head_dim`` when absent (None: hidden_size / num_attention_heads).
        layers: the ``layer_types`` rule, from :mod:`.layer_pattern`.
        moe: reads the MoE block, or None for a dense model.
        peft_default_targets: PEFT's default LoRA targets for this ``model_type`` (see
            :attr:`~gpusizer.model.architecture.Architecture.peft_default_targets`), or None.

    Positions are rotary in every Llama-shaped family (``LlamaRotaryEmbedding``; its ``inv_freq``
    buffer is non-persistent), so none declares a persistent buffer.
    """

    layers: Callable[[ConfigReader, int], tuple[tuple[str, ...], int | None]]
    tie_default: bool = False
    qkv_bias: BiasRule = "never"
    o_bias: BiasRule = "never"
    attention_bias_default: bool = False
    mlp_bias: bool = False
    mlp_bias_key: str = "mlp_bias"
    bias_key: str = "attention_bias"
    qk_norm: bool = False
    qk_norm_width: Literal["head", "projection"] = "head"
    norms_per_layer: int = 2
    norm: Literal["rms", "layer"] = "rms"
    fused: bool = False
    fused_gate_up: bool = False
    gated_mlp: bool = True
    mlp_names: tuple[str, ...] | None = None
    lm_head_bias: bool = False
    parallel_block: bool = False
    sinks: bool = False
    head_dim_default: int | None = None
    moe: Callable[[ConfigReader, Dims], MoeBlock] | None = None
    peft_default_targets: tuple[str, ...] | None = None


def read_dims(cfg: ConfigReader, *, head_dim_default: int | None = None) -> Dims:
    """hidden_size, num_hidden_layers, num_attention_heads, vocab_size (required);
    num_key_value_heads (default: num_attention_heads, i.e. MHA); head_dim (default
    ``head_dim_default`` or hidden_size / num_attention_heads, which must then divide exactly).

    Raises:
        ModelError: a required key is missing, or the head width cannot be derived.
    """
    hidden = cfg.require_int("hidden_size")
    heads = cfg.require_int("num_attention_heads")
    dims = dict(hidden_size=hidden, num_layers=cfg.require_int("num_hidden_layers"),
                num_heads=heads, num_kv_heads=cfg.optional_int("num_key_value_heads", heads),
                vocab_size=cfg.require_int("vocab_size"))
    head_dim = cfg.optional_int("head_dim", 0, minimum=1) or head_dim_default
    if head_dim is None:
        if hidden % heads:
            raise cfg.error("head_dim", f"absent and hidden_size {hidden} is not a multiple of "
                            f"num_attention_heads {heads}")
        head_dim = hidden // heads
    return Dims(head_dim=head_dim, **dims)


def _bias(cfg: ConfigReader, rule: BiasRule, default: bool, key: str) -> bool:
    if rule == "attention_bias":
        return cfg.flag(key, default)
    return rule == "always"


def describe_llama_like(cfg: ConfigReader, style: LlamaStyle) -> Architecture:
    """Architecture of a Llama-shaped model under ``style``.

    Raises:
        ModelError: a required key is missing or has the wrong type.
    """
    d = read_dims(cfg, head_dim_default=style.head_dim_default)
    default = style.attention_bias_default
    attention = gqa_attention(d.hidden_size, d.num_heads, d.num_kv_heads, d.head_dim,
                              qkv_bias=_bias(cfg, style.qkv_bias, default, style.bias_key),
                              o_bias=_bias(cfg, style.o_bias, default, style.bias_key),
                              fused_qkv=style.fused)
    mlp_bias = cfg.flag(style.mlp_bias_key, default) if style.mlp_bias else False
    intermediate = cfg.require_int("intermediate_size")
    block = style.moe(cfg, d) if style.moe else None
    moe_layers = sum(block.is_moe) if block else 0
    dense_mlp = mlp(d.hidden_size, intermediate, gated=style.gated_mlp, bias=mlp_bias,
                    fused_gate_up=style.fused or style.fused_gate_up, names=style.mlp_names)
    layer_types, window = style.layers(cfg, d.num_layers)
    tie = cfg.flag("tie_word_embeddings", style.tie_default)
    norm_width = d.hidden_size * (2 if style.norm == "layer" else 1)   # LayerNorm: + bias
    qk_norm = 0
    if style.qk_norm:
        qk_norm = (d.num_heads + d.num_kv_heads) * d.head_dim \
            if style.qk_norm_width == "projection" else 2 * d.head_dim
    shapes = DecoderShapes(
        hidden_size=d.hidden_size, vocab_size=d.vocab_size, num_layers=d.num_layers,
        attention=attention, layer_norm_elements=style.norms_per_layer * norm_width,
        attention_norm_elements=qk_norm,
        attention_sink_elements=d.num_heads if style.sinks else 0,
        final_norm_elements=norm_width, tie_word_embeddings=tie,
        dense_mlp=dense_mlp, experts=block.experts if block else None, moe_layers=moe_layers,
        lm_head_bias=cfg.flag("lm_head_bias", False) if style.lm_head_bias else False)
    return Architecture(
        hidden_size=d.hidden_size, num_layers=d.num_layers, num_attention_heads=d.num_heads,
        num_key_value_heads=d.num_kv_heads, head_dim=d.head_dim, vocab_size=d.vocab_size,
        intermediate_size=intermediate if moe_layers < d.num_layers else 0,
        gated_mlp=style.gated_mlp,
        tie_word_embeddings=tie, layer_types=layer_types, sliding_window=window,
        context_window_tokens=cfg.optional_nullable_int("max_position_embeddings", None),
        params=param_groups(shapes), positions="rope",
        peft_default_targets=style.peft_default_targets, moe=block.dims if block else None,
        modules=linear_modules(shapes), norm=style.norm, norms_per_layer=style.norms_per_layer,
        qk_norm=style.qk_norm, fused_gate_up_output=style.fused_gate_up,
        parallel_block=style.parallel_block)
