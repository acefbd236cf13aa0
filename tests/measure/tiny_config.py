"""The tiny model the CPU tests run: Meta-Llama-3.1-8B's config.json (the copy in
``../shared/data/models/meta-llama--Meta-Llama-3.1-8B``, from huggingface.co/meta-llama/
Meta-Llama-3.1-8B) scaled down — same family, GQA ratio (4 query heads per KV head), MLP ratio
(3.5), rope scaling and dtype; fewer layers, narrower, a small vocabulary. A copy is bundled in
``data/tiny-llama-3.1/config.json`` so the tests run without ../shared."""

from __future__ import annotations

SCALE = {"hidden_size": 64, "intermediate_size": 224, "num_attention_heads": 8,
         "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 512,
         "bos_token_id": 1, "eos_token_id": 2}


def scale_down(config: dict) -> dict:
    """The real config with :data:`SCALE` applied (every other key kept as published)."""
    return {**config, **SCALE}
