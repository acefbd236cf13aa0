"""What a family module returns: the architecture facts read from one config.json.

:func:`gpusizer.model.config.facts_from_config` wraps it with where the facts came from and the
stored format in a :class:`~gpusizer.model.facts.ModelFacts` (``facts.architecture``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .facts import (LinearModule, MlaDims, MoeDims, ParamGroup, PersistentBuffer, PositionKind,
                    RecurrentState, VisionTower)

__all__ = ["Architecture", "FULL", "SLIDING", "RECURRENT", "NO_CACHE"]

FULL = "full_attention"
"""``layer_types`` value of a layer whose KV cache grows with the whole sequence."""
SLIDING = "sliding_attention"
"""``layer_types`` value of a layer whose KV cache is capped at ``sliding_window`` tokens."""
RECURRENT = "linear_attention"
"""``layer_types`` value of a Mamba / linear-attention layer: its cache is a per-sequence state
(:class:`~gpusizer.model.facts.RecurrentState`), no keys or values (transformers' own name,
``cache_utils.LinearAttentionLayer``)."""
NO_CACHE = "no_cache"
"""``layer_types`` value of a layer that caches nothing (Nemotron-H's MLP and MoE blocks)."""


@dataclass(frozen=True, kw_only=True)
class Architecture:
    """Shapes, attention layout, parameter groups and module roles of one model.

    Attributes:
        hidden_size: d_model (elements).
        num_layers: decoder layers (``num_hidden_layers``).
        num_attention_heads: query heads.
        num_key_value_heads: KV heads (GQA/MQA); equals query heads for MHA.
        head_dim: per-head width (explicit ``head_dim`` when config.json gives one).
        vocab_size: tokens in the embedding.
        intermediate_size: dense MLP width (0 when every layer is MoE and none is dense).
        gated_mlp: True for gate/up/down MLPs (SwiGLU/GeGLU), False for two-matrix MLPs.
        tie_word_embeddings: lm_head shares the embedding matrix.
        layer_types: per layer ``"full_attention"`` or ``"sliding_attention"``.
        sliding_window: window in tokens for ``sliding_attention`` layers, or None.
        context_window_tokens: ``max_position_embeddings`` as config.json states it.
        params: parameter groups; :attr:`total_parameters` sums them.
        positions: how positions are encoded (:data:`~gpusizer.model.facts.PositionKind`).
        peft_default_targets: the modules PEFT adapts when ``target_modules`` is None, from
            ``peft/utils/constants.py`` ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``
            (peft 0.21) for this ``model_type``; None when PEFT has no default that works on
            the transformers v5 model.
        persistent_buffers: buffers transformers loads from the checkpoint that are not
            parameters (DeepSeek-V3's ``e_score_correction_bias``); empty for most families.
        mla: MLA dims, or None.
        moe: MoE dims, or None.
        notes: short facts worth showing next to the source (e.g. "the checkpoint's MTP layer is
            not loaded by transformers"), appended to ``ModelFacts.source_detail``.
        unloaded_checkpoint_layers: decoder layers stored in the checkpoint that transformers does
            not load (DeepSeek MTP): on disk, not on the GPU.
        modules: the linear layers by module path and role (LoRA targets).
        norm: ``"rms"`` (RMSNorm, transformers upcasts to fp32) or ``"layer"`` (nn.LayerNorm).
        norms_per_layer: hidden-wide norms per decoder layer (2; Gemma 2/3: 4; Falcon-7B: 1).
        qk_norm: per-head norms on q and k (Qwen3, Gemma 3).
        fused_gate_up_output: the MLP's gate and up come out of one matrix as one 2·I tensor
            that lives until their product (GLM-4 ``Glm4MLP``: ``gate_up_proj(x).chunk(2)``).
            False where the arithmetic predates it (Phi-3, whose code is the same).
        parallel_block: attention and MLP read the same norm output and the attention output
            waits for the MLP (Cohere 2 ``residual + attention + mlp``). False where the
            arithmetic predates it (Falcon).
        recurrent: the per-sequence states of the Mamba / linear-attention layers (one entry per
            kind of such layer), empty for attention-only models.
        vision: a vision-language model's image encoder and image-token rule, or None.
    """

    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    gated_mlp: bool
    tie_word_embeddings: bool
    layer_types: tuple[str, ...]
    sliding_window: int | None
    context_window_tokens: int | None
    params: tuple[ParamGroup, ...]
    positions: PositionKind
    peft_default_targets: tuple[str, ...] | None
    persistent_buffers: tuple[PersistentBuffer, ...] = ()
    mla: MlaDims | None = None
    moe: MoeDims | None = None
    notes: tuple[str, ...] = ()
    unloaded_checkpoint_layers: int = 0
    modules: tuple[LinearModule, ...] = ()
    norm: Literal["rms", "layer"] = "rms"
    norms_per_layer: int = 2
    qk_norm: bool = False
    fused_gate_up_output: bool = False
    parallel_block: bool = False
    recurrent: tuple[RecurrentState, ...] = ()
    vision: VisionTower | None = None

    @property
    def total_parameters(self) -> int:
        """Logical parameters of the whole model (what transformers instantiates)."""
        return sum(g.count for g in self.params)

    def parameters_by_role(self, *roles: str) -> int:
        """Sum of the groups whose role is in ``roles``."""
        return sum(g.count for g in self.params if g.role in roles)

    @property
    def full_attention_layers(self) -> int:
        """Layers whose KV cache grows with the whole sequence."""
        return sum(1 for t in self.layer_types if t not in (SLIDING, RECURRENT, NO_CACHE))

    @property
    def sliding_attention_layers(self) -> int:
        """Layers whose KV cache is capped at ``sliding_window`` tokens."""
        return sum(1 for t in self.layer_types if t == SLIDING)

    @property
    def cacheless_layers(self) -> int:
        """Layers that hold no keys or values: Mamba / linear-attention layers (their cache is
        :attr:`recurrent`) and layers without a token mixer (Nemotron-H MLP blocks)."""
        return sum(1 for t in self.layer_types if t in (RECURRENT, NO_CACHE))
