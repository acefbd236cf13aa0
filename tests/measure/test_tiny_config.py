"""The bundled tiny config is Meta-Llama-3.1-8B's config scaled down, nothing else."""

from __future__ import annotations

import json

from .conftest import TINY
from .tiny_config import SCALE, scale_down


def test_bundled_tiny_config_is_the_real_config_scaled_down(shared_dir):
    real = json.loads((shared_dir / "data/models/meta-llama--Meta-Llama-3.1-8B/config.json")
                      .read_text())
    bundled = json.loads((TINY / "config.json").read_text())
    assert bundled == scale_down(real)
    assert bundled["rope_scaling"]["rope_type"] == "llama3" and bundled["model_type"] == "llama"
    # GQA ratio and MLP ratio kept from the real model
    assert real["num_attention_heads"] // real["num_key_value_heads"] == \
        SCALE["num_attention_heads"] // SCALE["num_key_value_heads"] == 4
    assert real["intermediate_size"] / real["hidden_size"] == \
        SCALE["intermediate_size"] / SCALE["hidden_size"] == 3.5
