"""Mamba-2, Jamba and Qwen3-Next (state-space / linear-attention hybrids) against transformers.

Each config is the library's default for the ``model_type`` (``AutoConfig.for_model``) with 2–4
layers and small widths. Checked:

- parameters: the family's groups sum to ``model.num_parameters()`` of the meta model;
- LoRA ``all-linear`` (where PEFT accepts it) equals ``peft.get_peft_model``;
- KV cache and recurrent states: after a real bf16 forward on the CPU (a prompt, then one decode
  step), the bytes transformers' own ``DynamicCache`` holds — keys/values of the attention layers,
  ``conv_states`` and ``recurrent_states`` of the mixer layers — equal the estimate's items;
- ``simulate``: the ``recurrent_state`` item at decode equals the estimate's to the byte, and the
  weights are the parameters in bf16, each tensor booked in 512-byte allocator blocks (the few
  hundred bytes the estimate does not book for the mixers' tiny ``A_log`` / ``D`` / ``dt_bias``).
"""

from __future__ import annotations

import json

import pytest

from gpusizer.memory.kv_cache import kv_bytes, kv_layout
from gpusizer.memory.lora import lora_adapters
from gpusizer.memory.recurrent_state import recurrent_state_bytes
from gpusizer.model.config import facts_from_config
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import parse_sheet

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

CONFIGS = {
    "mamba2": dict(num_hidden_layers=2, hidden_size=256, num_heads=8, head_dim=64,
                   vocab_size=1000, n_groups=2, state_size=16),
    # attention on layers 1 and 3, MoE (4 experts) on layers 1 and 3, Mamba-1 on 0 and 2
    "jamba": dict(num_hidden_layers=4, attn_layer_period=2, attn_layer_offset=1,
                  hidden_size=256, num_attention_heads=8, num_key_value_heads=4,
                  intermediate_size=512, num_experts=4, vocab_size=1000),
    # layer 0 gated delta-net with a dense MLP, layer 1 full attention with the MoE block
    "qwen3_next": dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=8,
                       num_key_value_heads=4, head_dim=32, intermediate_size=512,
                       moe_intermediate_size=128, shared_expert_intermediate_size=128,
                       num_experts=4, num_experts_per_tok=2, vocab_size=1000,
                       linear_num_value_heads=8, linear_num_key_heads=4, linear_key_head_dim=32,
                       linear_value_head_dim=32, mlp_only_layers=[0],
                       layer_types=["linear_attention", "full_attention"]),
    # Mamba-2 + MoE (4 experts, non-gated) + attention + relu² MLP, one layer each
    "nemotron_h": dict(layers_block_type=["linear_attention", "moe", "full_attention", "mlp"],
                       hidden_size=256, num_attention_heads=8, num_key_value_heads=4,
                       head_dim=32, intermediate_size=512, mamba_num_heads=8, mamba_head_dim=64,
                       n_groups=2, ssm_state_size=16, n_routed_experts=4, num_experts_per_tok=2,
                       moe_intermediate_size=128, moe_shared_expert_intermediate_size=128,
                       vocab_size=1000),
    # attention and Mamba-2 side by side in both layers
    "falcon_h1": dict(num_hidden_layers=2, hidden_size=256, num_attention_heads=8,
                      num_key_value_heads=4, intermediate_size=512, mamba_d_ssm=512,
                      mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=16, vocab_size=1000),
    # a Mamba-2 layer and an attention layer, each with 4 experts and the shared MLP
    "granitemoehybrid": dict(num_hidden_layers=2, layer_types=["mamba", "attention"],
                             hidden_size=256, num_attention_heads=8, num_key_value_heads=4,
                             intermediate_size=512, shared_intermediate_size=256,
                             mamba_n_heads=8, mamba_n_groups=2, mamba_d_state=16,
                             vocab_size=1000, num_local_experts=4,
                             position_embedding_type="rope"),
}
PROMPT, SEQS = 64, 2


def _config(model_type: str):
    config = transformers.AutoConfig.for_model(model_type, **CONFIGS[model_type])
    d = config.to_dict()
    d.pop("dtype", None)
    d.update(model_type=model_type, torch_dtype="bfloat16")
    return config, d


def _facts(d: dict):
    return facts_from_config(d, model_id=None, revision=None, source="path",
                             source_detail="library default config, small")


def _meta_model(config):
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_parameters_equal_the_meta_model(family):
    config, d = _config(family)
    assert _facts(d).architecture.total_parameters == _meta_model(config).num_parameters()


def test_mamba2_parameters_by_hand():
    """Per layer: in_proj 256 → 2·512 + 2·2·16 + 8 = 1096 rows; conv over 512 + 64 = 576
    channels × 4 (+ 576 bias); dt_bias, A_log, D of 8 heads; gated norm 512; out_proj 512 → 256;
    block norm 256. Plus embeddings and lm_head 1000 × 256 each and norm_f 256."""
    per_layer = 1096 * 256 + 576 * 4 + 576 + 3 * 8 + 512 + 256 * 512 + 256
    arch = _facts(_config("mamba2")[1]).architecture
    assert arch.total_parameters == 2 * per_layer + 2 * 1000 * 256 + 256
    (state,) = arch.recurrent
    assert (state.layers, state.conv_channels, state.conv_kernel, state.state_elements) == \
        (2, 576, 4, 8 * 64 * 16)
    assert arch.full_attention_layers == 0 and arch.positions == "none"


@pytest.mark.parametrize("family", ["jamba", "qwen3_next", "granitemoehybrid"])
def test_lora_all_linear_equals_peft(family):
    """PEFT refuses ``all-linear`` on Mamba-2, Nemotron-H and Falcon-H1 (``out_proj`` and
    ``conv1d`` are incompatible with Mamba-based models in peft 0.21), so only the others are
    checked."""
    config, d = _config(family)
    wrapped = peft.get_peft_model(_meta_model(config),
                                  peft.LoraConfig(r=8, target_modules="all-linear"))
    theirs = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    assert lora_adapters(_facts(d), 8, "all-linear").parameters == theirs


def _held(cache) -> tuple[int, int]:
    """(key/value bytes, conv + recurrent state bytes) transformers' cache holds."""
    kv = state = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                kv += t.numel() * t.element_size()
        for name in ("conv_states", "recurrent_states"):
            for t in (getattr(layer, name, None) or {}).values():
                if isinstance(t, torch.Tensor):
                    state += t.numel() * t.element_size()
    return kv, state


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_cache_is_transformers_own(family):
    config, d = _config(family)
    config.bos_token_id = config.eos_token_id = config.pad_token_id = 0
    facts = _facts(d)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    cache = transformers.DynamicCache(config=config)
    with torch.no_grad():
        model(input_ids=torch.ones((SEQS, PROMPT), dtype=torch.long), cache=cache,
              use_cache=True)
        model(input_ids=torch.ones((SEQS, 1), dtype=torch.long), cache=cache, use_cache=True)
    kv, state = _held(cache)
    layout = kv_layout(facts, dtype_bytes=2)
    assert kv == kv_bytes(layout, tokens=PROMPT + 1, sequences=SEQS)
    assert state == recurrent_state_bytes(facts, dtype_bytes=2, sequences=SEQS).total_bytes
    if family == "mamba2":
        # no attention: conv 2 × 576 × 4 × 2 B + SSM 2 × 8 × 64 × 16 × 4 B (fp32), two layers
        assert kv == 0 and state == 2 * (2 * 576 * 4 * 2 + 2 * 8 * 64 * 16 * 4)


def _allocator_bytes(nbytes: int) -> int:
    return -(-nbytes // 512) * 512


@pytest.mark.parametrize("family", sorted(CONFIGS))
def test_simulate_states_and_weights(family, tmp_path):
    from gpusizer.simulate.engine import simulate_memory
    config, d = _config(family)
    (tmp_path / "config.json").write_text(json.dumps(d))
    sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference",
                         "weights": "bf16", "inference": {"prompt_tokens": PROMPT,
                                                          "new_tokens": 4,
                                                          "concurrency": SEQS}})
    r = simulate_memory(sheet, resolve_facts(sheet))
    items = {(i["item"], i["phase"]): i for i in r.comparison["items"]}
    state = items[("recurrent_state", "decode")]
    assert state["difference_bytes"] == 0 and state["simulated_bytes"] > 0
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    params = list(model.parameters())
    booked = sum(_allocator_bytes(p.numel() * p.element_size()) for p in params)
    # Nemotron-H keeps its router in fp32 (_keep_in_fp32_modules_strict); the arithmetic, as for
    # DeepSeek-V3 and GLM-4.5, counts it in the weight dtype: 4 experts × 256 × 2 B less
    kept_fp32 = sum(p.numel() for p in params if p.dtype == torch.float32)
    assert kept_fp32 == (4 * 256 if family == "nemotron_h" else 0)
    for phase in ("load", "prefill", "decode"):
        w = items[("weights", phase)]
        assert w["simulated_bytes"] == booked
        assert w["estimate_bytes"] == 2 * sum(p.numel() for p in params)


def _estimate_state(family: str, tmp_path, engine: str):
    from gpusizer.memory.estimate import estimate_memory
    _, d = _config(family)
    (tmp_path / "config.json").write_text(json.dumps(d))
    sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference",
                         "weights": "bf16", "inference": {"prompt_tokens": PROMPT,
                                                          "new_tokens": 4,
                                                          "concurrency": SEQS,
                                                          "engine": engine}})
    return estimate_memory(sheet, resolve_facts(sheet)).item("recurrent_state")


def test_vllm_keeps_conv_kernel_minus_one_columns(tmp_path):
    """Mamba-2 under vLLM: MambaSpec pages of conv (4 − 1) × 576 and SSM 8 × 64 × 16 in bf16
    (``mamba_ssm_cache_dtype`` auto = the model dtype), per layer and request; transformers: the
    whole kernel width and an fp32 SSM state."""
    per_layer = 3 * 576 * 2 + 8 * 64 * 16 * 2
    assert _estimate_state("mamba2", tmp_path, "vllm").bytes == 2 * SEQS * per_layer
    hf = _estimate_state("mamba2", tmp_path, "transformers").bytes
    assert hf == 2 * SEQS * (4 * 576 * 2 + 8 * 64 * 16 * 4)


def test_vllm_nemotron_h_ssm_state_in_fp32(tmp_path):
    """Nemotron-H's config says ``mamba_ssm_cache_dtype: float32`` (the config class default):
    vLLM keeps its one Mamba layer's SSM state in fp32."""
    per_layer = 3 * 576 * 2 + 8 * 64 * 16 * 4
    assert _estimate_state("nemotron_h", tmp_path, "vllm").bytes == SEQS * per_layer


def test_mamba2_kernel_working_memory_by_hand():
    """The SSD kernel's working set of one Mamba-2 layer, 2 sequences × 512 tokens in bf16:
    per token 2·256 (residual, norm) + in_proj 1096 + conv 576 + 2 × 512 (scan output, gated
    norm) = 3208 values × 2 B; 2 × ⌈512 / 256⌉ = 4 chunks, each dt and dA_cumsum 2·8·256·4 B,
    fp32 states and their bf16 copy 8·64·16·(4 + 2) B, CB 2·256²·4 B. One decode token: the step
    kernels update the state in place (per token terms only)."""
    from gpusizer.memory.recurrent_state import mixer_working_bytes
    facts = _facts(_config("mamba2")[1])
    size, words = mixer_working_bytes(facts, batch=2, q_tokens=512, dtype_bytes=2)
    assert size == 1024 * 3208 * 2 + 4 * (2 * 8 * 256 * 4 + 8192 * 6 + 2 * 256 * 256 * 4)
    assert "SSD kernel" in words
    assert mixer_working_bytes(facts, batch=2, q_tokens=1, dtype_bytes=2)[0] == 2 * 3208 * 2


@pytest.mark.parametrize(("family", "kv_layers"), [("jamba", 2), ("qwen3_next", 1),
                                                   ("nemotron_h", 1), ("falcon_h1", 2)])
def test_kv_growth_is_one_attention_layers_share(family, kv_layers, tmp_path):
    """transformers grows one layer's K and V at a time: half of one KV-holding layer's cache
    (Jamba: 2 attention layers of 4; Qwen3-Next: 1 of 2; Nemotron-H: 1 of 4 blocks; Falcon-H1:
    attention beside Mamba in both layers)."""
    from gpusizer.memory.estimate import estimate_memory
    _, d = _config(family)
    (tmp_path / "config.json").write_text(json.dumps(d))
    sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference",
                         "weights": "bf16", "inference": {"prompt_tokens": PROMPT,
                                                          "new_tokens": 4, "concurrency": SEQS}})
    est = estimate_memory(sheet, resolve_facts(sheet))
    kv = est.item("kv_cache").bytes
    assert est.item("kv_cache_growth_transient").bytes == kv // kv_layers // 2
