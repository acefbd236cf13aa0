"""What PEFT and transformers decide by ``model_type`` for the PEFT methods beyond LoRA.

PEFT 0.21.2 keys its default targets by ``model_type`` (``peft/utils/constants.py``); LoRA's
table is declared by each family (``Architecture.peft_default_targets``), the tables of IA3
(targets and feedforward modules) and AdaLoRA are here, with the two facts of transformers'
model code PEFT's methods depend on: which families build their linears as ``Conv1D`` and whose
config.json names no ``num_key_value_heads``. Only the model types gpusizer has a family for are
listed; the memory stage reads them through :func:`peft_default_targets` and the two predicates,
never by name (``tests/memory/test_family_knowledge.py``).
"""

from __future__ import annotations

__all__ = ["peft_default_targets", "builds_conv1d", "config_names_kv_heads"]

_IA3_TARGETS = {
    "gpt2": ("c_attn", "mlp.c_proj"), "gpt_neox": ("query_key_value", "dense_4h_to_h"),
    "falcon": ("query_key_value", "dense_4h_to_h"), "llama": ("k_proj", "v_proj", "down_proj"),
    "mistral": ("k_proj", "v_proj", "down_proj"), "mixtral": ("k_proj", "v_proj", "w2"),
    "gemma": ("q_proj", "v_proj", "down_proj"), "gemma2": ("q_proj", "v_proj", "down_proj"),
    "gemma3_text": ("q_proj", "v_proj", "down_proj"), "qwen2": ("q_proj", "v_proj", "down_proj"),
    "qwen3": ("q_proj", "v_proj", "down_proj"), "llama4": ("q_proj", "v_proj", "down_proj"),
}
"""``TRANSFORMERS_MODELS_TO_IA3_TARGET_MODULES_MAPPING`` (PEFT 0.21.2)."""
_IA3_FEEDFORWARD = {
    "gpt2": ("mlp.c_proj",), "gpt_neox": ("dense_4h_to_h",), "falcon": ("dense_4h_to_h",),
    "llama": ("down_proj",), "mistral": ("down_proj",), "mixtral": ("w2",),
    "gemma": ("down_proj",), "gemma2": ("down_proj",), "gemma3_text": ("down_proj",),
    "qwen2": ("down_proj",), "qwen3": ("down_proj",), "llama4": ("down_proj",),
}
"""``TRANSFORMERS_MODELS_TO_IA3_FEEDFORWARD_MODULES_MAPPING`` (PEFT 0.21.2)."""
_ADALORA_TARGETS = {
    "gpt2": ("c_attn",), "gpt_neox": ("query_key_value",), "llama": ("q_proj", "v_proj"),
    "gemma": ("q_proj", "v_proj"), "gemma2": ("q_proj", "v_proj"),
    "gemma3_text": ("q_proj", "v_proj"), "qwen2": ("q_proj", "v_proj"),
    "qwen3": ("q_proj", "v_proj"), "llama4": ("q_proj", "v_proj"),
}
"""``TRANSFORMERS_MODELS_TO_ADALORA_TARGET_MODULES_MAPPING`` (PEFT 0.21.2; no mistral entry)."""
_TABLES = {"ia3": _IA3_TARGETS, "ia3_feedforward": _IA3_FEEDFORWARD,
           "adalora": _ADALORA_TARGETS}

_CONV1D = frozenset({"gpt2"})
"""transformers builds these families' linears as ``Conv1D`` (``modeling_gpt2.py``)."""
_NO_KV_HEADS_KEY = frozenset({"falcon", "gpt2", "gpt_neox"})
"""config.json names no ``num_key_value_heads``: Falcon says ``num_kv_heads``
(``configuration_falcon.py``); GPT-2 and GPT-NeoX are multi-head."""


def peft_default_targets(model_type: str, table: str) -> tuple[str, ...] | None:
    """PEFT's default list for ``model_type`` in ``table`` (``ia3``, ``ia3_feedforward``,
    ``adalora``), or None where PEFT has none."""
    return _TABLES[table].get(model_type)


def builds_conv1d(model_type: str) -> bool:
    """transformers' code for ``model_type`` builds its linears as ``Conv1D``."""
    return model_type in _CONV1D


def config_names_kv_heads(model_type: str) -> bool:
    """config.json of ``model_type`` has a ``num_key_value_heads`` key (PEFT's prefix tuning
    reads it, ``peft/utils/other.py`` ``_prepare_prompt_learning_config``)."""
    return model_type not in _NO_KV_HEADS_KEY
