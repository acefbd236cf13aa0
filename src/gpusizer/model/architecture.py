"""What a family module returns: the architecture facts read from one config.json.

:func:`gpusizer.model.config.facts_from_config` adds where the facts came from and the stored
format to make a :class:`~gpusizer.model.facts.ModelFacts`; the fields mean the same as there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .facts import LinearModule, MlaDims, MoeDims, ParamGroup

__all__ = ["Architecture", "FULL", "SLIDING"]

FULL = "full_attention"
"""``layer_types`` value of a layer whose KV cache grows with the whole sequence."""
SLIDING = "sliding_attention"
"""``layer_types`` value of a layer whose KV cache is capped at ``sliding_window`` tokens."""


@dataclass(frozen=True)
class Architecture:
    """Shapes, attention layout and parameter groups of one model (see ModelFacts for meanings).

    Attributes:
        notes: short facts worth showing next to the source (e.g. "the checkpoint's MTP layer is
            not loaded by transformers"), appended to ``ModelFacts.source_detail``.
        unloaded_checkpoint_layers: decoder layers the checkpoint stores but transformers does
            not load (DeepSeek's MTP layers).
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
    mla: MlaDims | None = None
    moe: MoeDims | None = None
    notes: tuple[str, ...] = ()
    unloaded_checkpoint_layers: int = 0
    modules: tuple[LinearModule, ...] = ()
    norm: Literal["rms", "layer"] = "rms"
    norms_per_layer: int = 2
    qk_norm: bool = False
