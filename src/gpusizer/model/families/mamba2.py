"""Mamba-2 (``model_type: mamba2``; mistralai/Mamba-Codestral-7B-v0.1, state-spaces/mamba2-*).

Source: transformers 5.24 ``models/mamba2/modeling_mamba2.py`` and ``configuration_mamba2.py``:

- ``Mamba2Model``: ``embeddings`` (V × hidden), ``num_hidden_layers`` blocks of one RMSNorm
  (``norm``) and one ``Mamba2Mixer`` (``mixer``: see ``state_space.mamba2_mixer``), ``norm_f``;
  no attention, no MLP, no position embedding;
- ``Mamba2Config``: ``num_heads`` 128, ``head_dim`` 64, ``state_size`` 128, ``n_groups`` 8,
  ``expand`` 2 (``hidden_size × expand`` must equal ``num_heads × head_dim``), ``conv_kernel``
  4, ``use_bias`` false, ``use_conv_bias`` true, ``tie_word_embeddings`` false; every layer's
  cache is a ``linear_attention`` state (``layer_types``).

PEFT 0.21 has no default LoRA targets for mamba2.
"""

from __future__ import annotations

from ..architecture import Architecture
from ..config_reader import ConfigReader
from .state_space import HybridSpec, describe_hybrid, mamba2_mixer

__all__ = ["IGNORED_KEYS", "describe"]

IGNORED_KEYS: frozenset[str] = frozenset({
    "time_step_rank", "time_step_min", "time_step_max", "time_step_floor", "time_step_limit",
    "residual_in_fp32", "rescale_prenorm_residual", "layer_norm_epsilon", "norm_before_gate",
})
"""Keys of this family known not to change memory (beyond the common list in ``config.py``):
the time-step initialisation and limits, residual and norm switches."""


def describe(cfg: ConfigReader) -> Architecture:
    """Shapes, layer kinds and parameter groups of a Mamba-2 config (see module docstring).

    Raises:
        ModelError: a required key is missing, or heads × head_dim is not hidden × expand.
    """
    hidden, layers = cfg.require_int("hidden_size"), cfg.require_int("num_hidden_layers")
    vocab = cfg.require_int("vocab_size")
    heads, head_dim = cfg.optional_int("num_heads", 128), cfg.optional_int("head_dim", 64)
    expand = cfg.optional_int("expand", 2)
    if heads * head_dim != hidden * expand:
        raise cfg.error("num_heads", f"× head_dim ({heads} × {head_dim}) must equal hidden_size "
                        f"× expand ({hidden} × {expand})", heads)
    mixer = mamba2_mixer(hidden, heads=heads, head_dim=head_dim,
                         groups=cfg.optional_int("n_groups", 8),
                         d_state=cfg.optional_int("state_size", 128),
                         conv_kernel=cfg.optional_int("conv_kernel", 4),
                         bias=cfg.flag("use_bias", False),
                         conv_bias=cfg.flag("use_conv_bias", True),
                         chunk=cfg.optional_int("chunk_size", 256))
    tie = cfg.flag("tie_word_embeddings", False)
    spec = HybridSpec(hidden_size=hidden, vocab_size=vocab, mixers=("mixer",) * layers,
                      ffn=("",) * layers, attention=(), mixer=mixer, final_norm_elements=hidden,
                      tie_word_embeddings=tie, layer_norm_elements=hidden, mixer_prefix="mixer")
    return describe_hybrid(spec, num_attention_heads=heads, num_key_value_heads=heads,
                           head_dim=head_dim, intermediate_size=0, context_window_tokens=None,
                           peft_default_targets=None, positions="none")
