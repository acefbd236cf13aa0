"""GLM-4 (``model_type: glm4``; THUDM/GLM-4-9B-0414, GLM-4-32B-0414, GLM-Z1).

Source: transformers 5.24 ``models/glm4/modeling_glm4.py`` and ``configuration_glm4.py``:

- ``Glm4Attention``: q/k/v with bias = ``attention_bias`` (default **true**), ``o_proj``
  without bias; ``head_dim`` default 128; partial rotary (``partial_rotary_factor`` 0.5 by
  default: half of each head is rotated, no parameter);
- ``Glm4MLP``: fused ``gate_up_proj`` (hidden → 2·intermediate) and ``down_proj``, no bias;
- ``Glm4DecoderLayer``: four RMSNorms: ``input_layernorm``, ``post_self_attn_layernorm`` (on the
  attention output), ``post_attention_layernorm`` (before the MLP), ``post_mlp_layernorm`` (on
  the MLP output), like Gemma 2's sandwich norms;
- untied by default; every layer full attention.

PEFT 0.21 has no default LoRA targets for glm4.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import full_only
from .llama_like import LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset()
"""Keys of this family known not to change memory (beyond the common list in ``config.py``)."""

STYLE = LlamaStyle(layers=lambda cfg, n: full_only(n), qkv_bias="attention_bias",
                   attention_bias_default=True, norms_per_layer=4, fused_gate_up=True,
                   head_dim_default=128, peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a GLM-4 config (see module docstring)."""
    return describe_llama_like(cfg, STYLE)
