"""OLMo 2 (``model_type: olmo2``; allenai/OLMo-2-1124-7B, -13B, OLMo-2-0325-32B).

Source: transformers 5.24 ``models/olmo2/modeling_olmo2.py`` and ``configuration_olmo2.py``:

- ``Olmo2Attention``: q/k/v/o with bias = ``attention_bias`` (default false), then RMSNorms over
  the **whole** projections, not per head: ``q_norm`` of heads·head_dim and ``k_norm`` of
  kv_heads·head_dim (``Olmo2RMSNorm(config.num_attention_heads * self.head_dim)``), before RoPE;
  head_dim = hidden / heads (no ``head_dim`` key in ``Olmo2Config``);
- ``Olmo2DecoderLayer``: no input norm; ``post_attention_layernorm`` on the attention output and
  ``post_feedforward_layernorm`` on the MLP output, each before its residual add (2 RMSNorms per
  layer); Llama's gated MLP (``gate_proj``, ``up_proj``, ``down_proj``, no bias);
- ``Olmo2Model``: ``embed_tokens``, final ``norm``; ``Olmo2ForCausalLM``: ``lm_head``, untied by
  default (``tie_word_embeddings: False``); every layer full attention, rotary positions.

Memory: the q/k/v linears read the layer input itself rather than a norm's output, and the two
norms upcast the attention and MLP outputs; the saved tensors per layer add up to the same
count as Llama's two pre-norms (one fp32 copy per norm, one 16-bit input per adapted reader), so
the memory side's Llama rule holds. PEFT 0.21 has no default LoRA targets for olmo2.
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
                   o_bias="attention_bias", qk_norm=True, qk_norm_width="projection",
                   peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of an OLMo 2 config (see module docstring).

    Raises:
        ModelError: a required key is missing, or hidden_size is not a multiple of the heads.
    """
    return describe_llama_like(cfg, STYLE)
