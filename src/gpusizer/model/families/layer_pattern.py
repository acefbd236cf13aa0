"""Which decoder layers use full attention and which a sliding window (the KV cache's shape).

Each rule reproduces how a transformers config class fills ``layer_types`` when config.json does
not list them, and every rule honours an explicit ``layer_types`` list first. Returns the per-layer
types and the window (None when no layer slides).
"""

from __future__ import annotations

from ..architecture import FULL, SLIDING
from ..config_reader import ConfigReader

__all__ = ["full_only", "uniform_window", "qwen_window", "periodic", "attention_every",
           "listed_mixers"]

Layout = tuple[tuple[str, ...], int | None]


def full_only(num_layers: int) -> Layout:
    """Every layer full attention (Llama, Gemma, DeepSeek, Falcon, GPT-2)."""
    return (FULL,) * num_layers, None


def uniform_window(cfg: ConfigReader, num_layers: int) -> Layout:
    """``sliding_window`` (null = none) applies to every layer.

    Source: transformers ``models/mistral/modeling_mistral.py`` (``sliding_window`` passed to
    every layer's attention); same in ``mixtral`` and ``phi3``.
    """
    listed = _listed(cfg, num_layers)
    window = cfg.optional_nullable_int("sliding_window", None)
    if listed is not None:
        return listed, _window_if_used(cfg, listed, window)
    if window is None:
        return full_only(num_layers)
    return (SLIDING,) * num_layers, window


def qwen_window(cfg: ConfigReader, num_layers: int) -> Layout:
    """Layers ``i >= max_window_layers`` slide, only when ``use_sliding_window`` is true.

    Source: transformers ``models/qwen2/configuration_qwen2.py`` (``sliding_window`` is kept only
    if ``use_sliding_window``; ``layer_types`` default); same in ``qwen3`` and ``qwen3_moe``.
    Defaults: use_sliding_window false, sliding_window 4096, max_window_layers 28.
    """
    use = cfg.flag("use_sliding_window", False)
    window = cfg.optional_nullable_int("sliding_window", 4096)
    first = cfg.optional_int("max_window_layers", 28, minimum=0)
    if not use:
        window = None
    listed = _listed(cfg, num_layers)
    if listed is not None:
        return listed, _window_if_used(cfg, listed, window)
    if window is None:
        return full_only(num_layers)
    types = tuple(SLIDING if i >= first else FULL for i in range(num_layers))
    return types, (window if SLIDING in types else None)


def periodic(cfg: ConfigReader, num_layers: int, *, period: int, window_default: int | None,
             period_key: str | None = None) -> Layout:
    """Every ``period``-th layer (1-based) is full, the others slide.

    Source: transformers ``models/gemma2/configuration_gemma2.py`` (period 2: layer 0 slides,
    layer 1 is full), ``models/gemma3/configuration_gemma3.py`` (``sliding_window_pattern``,
    default 6), ``models/gpt_oss/configuration_gpt_oss.py`` (period 2).
    """
    window = cfg.optional_nullable_int("sliding_window", window_default)
    if period_key is not None:
        period = cfg.optional_int(period_key, period)
    listed = _listed(cfg, num_layers)
    if listed is not None:
        return listed, _window_if_used(cfg, listed, window)
    types = tuple(SLIDING if (i + 1) % period else FULL for i in range(num_layers))
    if window is None and SLIDING in types:
        raise cfg.error("sliding_window", "null, but the layer pattern has sliding layers")
    return types, (window if SLIDING in types else None)


def attention_every(cfg: ConfigReader, num_layers: int, *, period_key: str, offset_key: str,
                    period: int, offset: int) -> tuple[str, ...]:
    """Per layer ``"attention"`` where ``i % period == offset``, else ``"mixer"`` (a Mamba layer).

    Source: transformers 5.24 ``models/jamba/configuration_jamba.py`` ``layers_block_type``
    (``attn_layer_period`` 8, ``attn_layer_offset`` 4: one attention layer in eight).

    Raises:
        ModelError: the offset is not below the period.
    """
    period = cfg.optional_int(period_key, period)
    offset = cfg.optional_int(offset_key, offset, minimum=0)
    if offset >= period:
        raise cfg.error(offset_key, f"must be below {period_key} ({period})", offset)
    return tuple("attention" if i % period == offset else "mixer" for i in range(num_layers))


def listed_mixers(cfg: ConfigReader, num_layers: int, *, names: dict[str, str],
                  key: str = "layer_types", interval_key: str | None = None,
                  interval: int = 4) -> tuple[str, ...]:
    """Per layer ``"attention"``, ``"mixer"`` or ``""`` from a listed pattern, each listed name
    mapped through ``names`` (e.g. ``{"full_attention": "attention", "linear_attention":
    "mixer"}``); without the list, every ``interval``-th layer (1-based) is attention.

    Source: transformers 5.24 ``models/qwen3_next/configuration_qwen3_next.py`` (``layer_types``
    default: ``linear_attention`` unless ``(i + 1) % full_attention_interval == 0``, interval 4).

    Raises:
        ModelError: the list's length is not the layer count, or it names an unknown kind.
    """
    listed = cfg.str_list(key)
    if listed is None:
        if interval_key is not None:
            interval = cfg.optional_int(interval_key, interval)
        return tuple("attention" if (i + 1) % interval == 0 else "mixer"
                     for i in range(num_layers))
    if len(listed) != num_layers:
        raise cfg.error(key, f"lists {len(listed)} layers but the model has {num_layers}",
                        list(listed))
    unknown = sorted(set(listed) - set(names))
    if unknown:
        raise cfg.error(key, f"unsupported layer type(s) {unknown}; known: {sorted(names)}",
                        list(listed))
    return tuple(names[t] for t in listed)


def _listed(cfg: ConfigReader, num_layers: int) -> tuple[str, ...] | None:
    types = cfg.str_list("layer_types")
    if types is None:
        return None
    if len(types) != num_layers:
        raise cfg.error("layer_types", f"lists {len(types)} layers but num_hidden_layers is "
                        f"{num_layers}", types)
    unknown = sorted(set(types) - {FULL, SLIDING})
    if unknown:
        raise cfg.error("layer_types", f"unsupported layer type(s) {unknown}; gpusizer sizes "
                        f"{FULL!r} and {SLIDING!r} layers", types)
    return types


def _window_if_used(cfg: ConfigReader, types: tuple[str, ...], window: int | None) -> int | None:
    if SLIDING not in types:
        return None
    if window is None:
        raise cfg.error("sliding_window", "null or disabled, but layer_types has sliding layers")
    return window
