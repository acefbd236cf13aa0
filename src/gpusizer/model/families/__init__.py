"""One module per config.json ``model_type``, registered in :data:`FAMILIES`.

Every family module exposes the same two names:

- ``IGNORED_KEYS``: config keys of that family known not to change memory (documented);
- ``describe(cfg: ConfigReader) -> Architecture``: shapes, attention layout, parameter groups,
  module roles, PEFT default targets, positions and persistent buffers.

See ``README.md`` in this folder to add a family.
"""

from __future__ import annotations

from types import ModuleType

from ...errors import UnknownArchitectureError, shown
from . import (cohere2, deepseek_v2, deepseek_v3, falcon, falcon_h1, gemma, gemma2, gemma3,
               gemma3_text, glm4, glm4_moe, gpt2, gpt_neox, gpt_oss, granitemoehybrid, jamba,
               llama, llama4_text, mamba2, mistral, mixtral, nemotron_h, olmo2, phi3, phimoe,
               qwen2, qwen2_5_vl, qwen3, qwen3_moe, qwen3_next, starcoder2)

__all__ = ["FAMILIES", "family_for"]

FAMILIES: dict[str, ModuleType] = {
    "llama": llama,
    "mistral": mistral,
    "mixtral": mixtral,
    "qwen2": qwen2,
    "qwen3": qwen3,
    "qwen3_moe": qwen3_moe,
    "gemma": gemma,
    "gemma2": gemma2,
    "gemma3_text": gemma3_text,
    "phi3": phi3,
    "falcon": falcon,
    "gpt2": gpt2,
    "deepseek_v2": deepseek_v2,
    "deepseek_v3": deepseek_v3,
    "gpt_oss": gpt_oss,
    "olmo2": olmo2,
    "gpt_neox": gpt_neox,
    "starcoder2": starcoder2,
    "cohere2": cohere2,
    "glm4": glm4,
    "glm4_moe": glm4_moe,
    "phimoe": phimoe,
    "llama4_text": llama4_text,
    "mamba2": mamba2,
    "jamba": jamba,
    "qwen3_next": qwen3_next,
    "nemotron_h": nemotron_h,
    "falcon_h1": falcon_h1,
    "granitemoehybrid": granitemoehybrid,
    "gemma3": gemma3,
    "qwen2_5_vl": qwen2_5_vl,
}
"""config.json ``model_type`` → family module."""


def family_for(model_type: object, *, file: str, has_auto_map: bool = False) -> ModuleType:
    """The family module for ``model_type``.

    Raises:
        UnknownArchitectureError: no family counts this ``model_type`` (remote code in
            ``auto_map`` is never executed, so it does not help).
    """
    module = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if module is not None:
        return module
    hint = (" auto_map ignored: gpusizer never runs remote code;" if has_auto_map
            else "")
    raise UnknownArchitectureError(
        f"{shown(model_type)} is unknown;{hint} known: {', '.join(sorted(FAMILIES))}; give "
        "model.parameters instead",
        field="model_type", value=model_type, file=file)
