"""Tiny configs derived from the real ones in ``../shared/data/models`` (2 layers, small widths),
and a helper to run the simulator on them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the simulate extra (torch) is not installed")
pytest.importorskip("transformers", reason="the simulate extra (transformers) is not installed")
pytest.importorskip("peft", reason="the simulate extra (peft) is not installed")

FAMILY_CONFIGS = {
    "llama": "TinyLlama--TinyLlama-1.1B-Chat-v1.0",
    "mistral": "mistralai--Mistral-7B-v0.3",
    "mixtral": "mistralai--Mixtral-8x22B-v0.1",
    "qwen2": "Qwen--Qwen2.5-1.5B",
    "qwen3": "Qwen--Qwen3-0.6B",
    "qwen3_moe": "Qwen--Qwen3-30B-A3B",
    "gemma": "google--gemma-2b-it",
    "gemma2": "google--gemma-2-9b",
    "gemma3_text": "google--gemma-3-1b-it",
    "phi3": "microsoft--phi-4",
    "falcon": "tiiuae--falcon-7b-instruct",
    "gpt2": "openai-community--gpt2",
    "deepseek_v3": "deepseek-ai--DeepSeek-V3",
    "gpt_oss": "openai--gpt-oss-120b",
    "deepseek_v2": "deepseek-ai--DeepSeek-V3",
}
"""model reader family → the real config a tiny one is derived from."""

FAMILY_OVERRIDES = {
    "deepseek_v2": {"model_type": "deepseek_v2", "architectures": ["DeepseekV2ForCausalLM"],
                    "topk_method": "greedy"},
}
"""../shared has no DeepSeek-V2 config: V2's tiny config is V3's (same MLA + MoE keys) renamed,
with V2's greedy top-k routing."""


def real_config(shared: Path, folder: str) -> dict:
    return json.loads((shared / "data" / "models" / folder / "config.json").read_text())


def tiny_config(cfg: dict, *, layers: int = 2, hidden: int = 64, heads: int = 4,
                kv_heads: int = 2, head_dim: int = 16, intermediate: int = 128,
                vocab: int = 256) -> dict:
    """The real config with its widths shrunk; every key that shapes the model keeps its kind
    (MoE, MLA, sliding layers, biases, tied embeddings)."""
    c = {k: v for k, v in cfg.items() if k not in ("auto_map", "quantization_config")}
    c["torch_dtype"] = "bfloat16"
    c.pop("dtype", None)
    if c.get("model_type") == "gpt2":
        c.update(n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=vocab, n_positions=512,
                 n_inner=intermediate)
        return c
    c.update(num_hidden_layers=layers, hidden_size=hidden, intermediate_size=intermediate,
             num_attention_heads=heads, vocab_size=vocab)
    if "num_key_value_heads" in c:
        c["num_key_value_heads"] = min(kv_heads, c["num_key_value_heads"] or kv_heads)
    if c.get("multi_query"):
        c["num_kv_heads"] = 1
    elif "num_kv_heads" in c:
        c["num_kv_heads"] = kv_heads
    if "head_dim" in c:
        c["head_dim"] = head_dim
    for key in ("num_local_experts", "num_experts", "n_routed_experts"):
        if key in c:
            c[key] = 4
    for key in ("num_experts_per_tok", "experts_per_token"):
        if key in c:
            c[key] = 2
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        if isinstance(c.get(key), int):
            c[key] = 1
        elif isinstance(c.get(key), list):
            c[key] = [1]
    for key in ("moe_intermediate_size",):
        if key in c:
            c[key] = 32
    if c.get("model_type") == "deepseek_v3":
        # MLA expands K/V to every head: DeepSeek-V3 states num_key_value_heads = heads (128)
        c.update(num_key_value_heads=heads, first_k_dense_replace=1, n_group=1, topk_group=1,
                 kv_lora_rank=32,
                 q_lora_rank=48, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
                 num_nextn_predict_layers=0, n_shared_experts=1)
        c.pop("rope_scaling", None)
    if "sliding_window" in c and c["sliding_window"]:
        c["sliding_window"] = 32
    if isinstance(c.get("layer_types"), list):
        c["layer_types"] = (["sliding_attention", "full_attention"] * layers)[:layers]
    if c.get("model_type") == "gemma3_text":
        c["sliding_window_pattern"] = 2
        c.pop("layer_types", None)
    if c.get("model_type") == "qwen3_moe":
        c["decoder_sparse_step"] = 1
        c["mlp_only_layers"] = []
    if c.get("model_type") == "qwen2":
        c["max_window_layers"] = layers
    return c


@pytest.fixture
def write_model(tmp_path):
    """Write a config dict as ``<tmp>/model/config.json``; returns the folder."""
    def write(cfg: dict, name: str = "model") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
        return folder
    return write
