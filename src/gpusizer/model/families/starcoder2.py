"""StarCoder2 (``model_type: starcoder2``; bigcode/starcoder2-3b, -7b, -15b).

Source: transformers 5.24 ``models/starcoder2/modeling_starcoder2.py`` and
``configuration_starcoder2.py``:

- ``Starcoder2Attention``: q/k/v/o with bias = ``use_bias`` (default true), GQA, head_dim =
  hidden / heads;
- ``Starcoder2MLP``: a plain two-matrix MLP ``c_fc`` (hidden → intermediate) and ``c_proj``
  (back), bias = ``use_bias``, ``gelu_pytorch_tanh`` (not gated);
- ``Starcoder2DecoderLayer``: ``input_layernorm`` and ``post_attention_layernorm`` are
  ``nn.LayerNorm`` (weight and bias); final ``norm`` likewise;
- ``lm_head`` tied by default (``tie_word_embeddings: True``); a non-null ``sliding_window``
  (default null) applies to every layer, and the cache then keeps a window per layer
  (``cache_utils.get_layer_types_and_kwargs``). Dropouts change no shape.

PEFT 0.21 has no default LoRA targets for starcoder2.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .layer_pattern import uniform_window
from .llama_like import LlamaStyle, describe_llama_like

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({"residual_dropout", "embedding_dropout",
                                          "norm_epsilon"})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
two dropouts and the LayerNorm epsilon."""

STYLE = LlamaStyle(layers=uniform_window, tie_default=True, qkv_bias="attention_bias",
                   o_bias="attention_bias", bias_key="use_bias", attention_bias_default=True,
                   mlp_bias=True, mlp_bias_key="use_bias", norm="layer", gated_mlp=False,
                   mlp_names=("c_fc", "c_proj"), peft_default_targets=None)


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layout and parameter groups of a StarCoder2 config (see module docstring).

    Raises:
        ModelError: a required key is missing, or hidden_size is not a multiple of the heads.
    """
    return describe_llama_like(cfg, STYLE)
