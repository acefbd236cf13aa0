"""Cohere 2 (``model_type: cohere2``; CohereForAI/c4ai-command-r7b-12-2024, command-a-03-2025).

Source: transformers 5.24 ``models/cohere2/modeling_cohere2.py`` and
``configuration_cohere2.py``:

- ``Cohere2Attention``: q/k/v/o with bias = ``attention_bias`` (default false); head_dim is
  always hidden / heads (``Cohere2Config.__post_init__`` sets it); rotary only on sliding layers
  (the full layers use no positions), no parameter either way;
- ``Cohere2DecoderLayer``: a **parallel** block with one norm: ``input_layernorm`` feeds both the
  attention and the gated MLP, and ``residual + attention + mlp`` is the output;
- ``Cohere2LayerNorm``: a LayerNorm **without bias** (one weight of hidden), computed in fp32
  like an RMSNorm (the memory side's ``rms`` rule: an fp32 copy of its input);
- ``Cohere2Model``: ``embed_tokens``, final ``norm`` (same LayerNorm); ``lm_head`` tied by
  default; ``logit_scale`` multiplies the logits (no shape);
- ``layer_types``: when config.json does not list them, layer i slides unless
  ``(i + 1) % sliding_window_pattern == 0`` (default pattern 4), window ``sliding_window``
  (default 4096).

PEFT 0.21 has no default LoRA targets for cohere2.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import periodic
from .llama_like import LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({"logit_scale"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
the logit multiplier."""


def _layers(cfg: ConfigReader, num_layers: int) -> tuple[tuple[str, ...], int | None]:
    return periodic(cfg, num_layers, period=4, window_default=4096,
                    period_key="sliding_window_pattern")


STYLE = LlamaStyle(layers=_layers, tie_default=True, qkv_bias="attention_bias",
                   o_bias="attention_bias", norms_per_layer=1, parallel_block=True,
                   peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a Cohere 2 config (see module docstring).

    Raises:
        ModelError: a required key is missing, hidden_size is not a multiple of the heads, or
            ``head_dim`` disagrees with hidden / heads.
    """
    arch = describe_llama_like(cfg, STYLE)
    derived = arch.hidden_size // arch.num_attention_heads
    if arch.head_dim != derived or arch.hidden_size % arch.num_attention_heads:
        raise cfg.error("head_dim", f"{arch.head_dim}, but Cohere2Config sets hidden_size / "
                        f"num_attention_heads = {derived}", arch.head_dim)
    return arch
