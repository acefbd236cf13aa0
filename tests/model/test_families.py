"""Parameter counts and layouts of every family, against truth.json and hand-derived figures.

``truth.json``'s ``param_count`` is either the logical count (KerasHub learnable weights, or an HF
``safetensors.total`` that happens to equal it) or the Hub's ``safetensors.total``, which counts
what the checkpoint stores. Where those differ, :data:`STORED_DEFINITIONS` states the definition,
and the test rebuilds the stored count from our groups plus the documented extra tensors.
"""

from __future__ import annotations

from gpusizer.model.config import facts_from_config

from math import ceil

import pytest

from gpusizer.model.facts import ModelFacts
from gpusizer.model.stored_elements import buffer_elements, scale_elements, stored_tensor_elements

from .conftest import config_of, facts_of, group, shared_model_ids, truth

TOLERANCE = 0.001  # the bar: within 0.1 % of the published count


def _deepseek_mtp_elements(facts: ModelFacts, config: dict) -> int:
    """Elements of DeepSeek-V3's MTP layer(s) as the checkpoint stores them (layer 61).

    One MTP module = a full MoE decoder layer (attention, norms, routed + shared experts, router,
    its e_score_correction_bias buffer and fp8 block scales) + ``eh_proj`` (2·d → d, bf16) +
    ``enorm``, ``hnorm``, ``shared_head.norm`` (d each) + its own ``embed_tokens`` and
    ``shared_head.head`` (V·d each). Source: deepseek-ai/DeepSeek-V3 ``README_WEIGHTS.md`` (MTP
    module: 11.5B unique parameters; embed_tokens and shared_head share values with the main
    model, yet the exact match with truth shows the checkpoint stores them again); transformers
    skips ``model.layers.61.*`` on load (``_keys_to_ignore_on_load_unexpected``).
    """
    arch = facts.architecture
    d, v, n, moe = arch.hidden_size, arch.vocab_size, arch.num_layers, arch.moe
    block = facts.quantization_config["weight_block_size"][0]  # 128: square fp8 blocks

    def scales(*names: str) -> int:
        return sum(k * ceil(r / block) * ceil(c / block) for g in facts.architecture.params
                   if g.name in names for k, r, c in g.shapes)

    attention = (group(facts, "attention") + group(facts, "norms") - d) // n  # with its norms
    moe_block = sum(group(facts, g) for g in ("experts", "shared_experts", "router"))
    layer = (attention + moe_block // moe.moe_layers + moe.num_experts  # + correction buffer
             + scales("attention") // n + scales("experts", "shared_experts") // moe.moe_layers)
    module = layer + 2 * d * d + 3 * d + 2 * v * d
    return config["num_nextn_predict_layers"] * module


def _untied_lm_head(facts: ModelFacts, config: dict) -> int:
    arch = facts.architecture
    return arch.total_parameters + arch.vocab_size * arch.hidden_size


STORED_DEFINITIONS = {
    "deepseek-ai/DeepSeek-V3": (
        "HF safetensors.total: parameters + fp8 128x128 weight_scale_inv + router "
        "e_score_correction_bias buffers + the MTP layer 61 (not loaded by transformers)",
        lambda f, c: stored_tensor_elements(f) + _deepseek_mtp_elements(f, c)),
    "openai/gpt-oss-120b": (
        "HF safetensors.total: logical parameters + one mxfp4 E8M0 scale per 32 expert weights",
        lambda f, c: stored_tensor_elements(f)),
    "tiiuae/falcon-7b-instruct": (
        "HF safetensors.total: the checkpoint stores lm_head.weight although transformers ties it "
        "to word_embeddings (FalconConfig keeps PretrainedConfig's tie_word_embeddings=True)",
        _untied_lm_head),
    "Qwen/Qwen3-0.6B": (
        "HF safetensors.total: the checkpoint stores lm_head.weight although config.json ties it",
        _untied_lm_head),
    "Qwen/Qwen3-1.7B": (
        "HF safetensors.total: the checkpoint stores lm_head.weight although config.json ties it",
        _untied_lm_head),
}

LOGICAL_COUNTS = {
    # d = 7168, V = 129280, L = 61 (3 dense, 58 MoE), 128 heads, q_lora 1536, kv_lora 512,
    # nope 128, rope 64, v 128; experts 256 × 2048 + 1 shared, dense MLP 18432.
    # embed + lm_head      2·V·d                                         =   1,853,358,080
    # attention per layer  7168·1536 + 1536·24576 + 7168·576 + 512·32768
    #                      + 16384·7168 = 187,105,280; norms 2·7168 + 1536 + 512 = 16,384
    #                      × 61                                          =  11,414,421,504
    # dense MLP            3 · (3·7168·18432)                            =   1,189,085,184
    # MoE per layer        256·3·7168·2048 + 3·7168·2048 + 256·7168 = 11,320,164,352
    #                      × 58                                          = 656,569,532,416
    # final norm                                                         =           7,168
    "deepseek-ai/DeepSeek-V3": 671_026_404_352,
    # d = 2880, V = 201088, L = 36, 64 heads × 64, 8 KV heads, 128 experts × 2880.
    # embed + lm_head 2·V·d = 1,158,266,880; final norm 2,880; per layer:
    #   attention (2880·4096 + 4096) + 2·(2880·512 + 512) + (4096·2880 + 2880) + 64 sinks
    #   = 26,550,144; norms 5,760; router 128·2880 + 128 = 368,768;
    #   experts 128·(2880·5760 + 5760 + 2880·2880 + 2880) = 3,186,155,520 → 3,213,080,192 × 36
    #   = 115,670,886,912. Total 116,829,156,672 (= truth.json's note).
    "openai/gpt-oss-120b": 116_829_156_672,
    # d = 4544, V = 65024, L = 32, 71 heads × 64, multi-query (1 KV head), parallel attention.
    # embed V·d = 295,469,056; per layer qkv 4544·(4544 + 128) = 21,229,568, dense 4544² =
    # 20,647,936, MLP 2·4544·18176 = 165,183,488, one LayerNorm 2·4544 = 9,088 → 207,070,080
    # × 32 = 6,626,242,560; ln_f 9,088; lm_head tied. Total 6,921,720,704.
    "tiiuae/falcon-7b-instruct": 6_921_720_704,
    # Qwen3 (tied): V·d + 28 · (attention + q/k norms + 2 norms + MLP) + final norm, see
    # test_qwen3_small_models_arithmetic.
    "Qwen/Qwen3-0.6B": 596_049_920,
    "Qwen/Qwen3-1.7B": 1_720_574_976,
}


def _truth_cases() -> list:
    ids = set(shared_model_ids())
    if not ids:
        return [pytest.param(None, marks=pytest.mark.skip(reason="shared test data absent"))]
    return [m for m in sorted(truth()) if m in ids and truth()[m]["param_count"] is not None]


@pytest.mark.parametrize("model_id", _truth_cases())
def test_param_count_matches_truth(model_id: str) -> None:
    expected = truth()[model_id]["param_count"]
    facts = facts_of(model_id)
    count = facts.architecture.total_parameters
    if model_id in STORED_DEFINITIONS:
        definition, stored = STORED_DEFINITIONS[model_id]
        count = stored(facts, config_of(model_id))
        print(f"{model_id}: logical {facts.architecture.total_parameters:,}; {definition}: "
              f"{count:,}")
    print(f"{model_id}: {count:,} vs truth {expected:,}")
    assert abs(count - expected) <= TOLERANCE * expected
    assert count == expected  # every figure reproduces exactly, not merely within 0.1 %


@pytest.mark.parametrize("model_id", sorted(LOGICAL_COUNTS))
def test_logical_count_of_stored_definitions(model_id: str) -> None:
    facts = facts_of(model_id)
    print(f"{model_id}: logical {facts.architecture.total_parameters:,}")
    assert facts.architecture.total_parameters == LOGICAL_COUNTS[model_id]


def test_qwen3_small_models_arithmetic() -> None:
    """Qwen3 per layer: q (heads·128 × d), k and v (8·128 × d), o, q/k norms 2·128, 2 norms 2·d,
    gated MLP 3·d·I; 28 layers, V = 151936, lm_head tied."""
    def qwen3(d: int, heads: int, inter: int) -> int:
        q, kv = heads * 128, 8 * 128
        per_layer = 2 * q * d + 2 * kv * d + 2 * 128 + 2 * d + 3 * d * inter
        return 151936 * d + 28 * per_layer + d
    # 0.6B: 155,582,464 + 28 · 15,730,944 + 1,024
    assert qwen3(1024, 16, 3072) == LOGICAL_COUNTS["Qwen/Qwen3-0.6B"]
    # 1.7B: 311,164,928 + 28 · 50,331,648 + 2,048
    assert qwen3(2048, 16, 6144) == LOGICAL_COUNTS["Qwen/Qwen3-1.7B"]


def test_deepseek_v3_stored_pieces() -> None:
    facts = facts_of("deepseek-ai/DeepSeek-V3")
    assert buffer_elements(facts) == 58 * 256  # e_score_correction_bias, float32 buffers
    assert scale_elements(facts) == 40_838_232  # Σ ⌈rows/128⌉·⌈cols/128⌉ over fp8 matrices


def test_gpt_oss_mxfp4_scales() -> None:
    # per layer: 128 experts · (5760 · 2880/32 + 2880 · 2880/32) = 99,532,800; × 36 layers.
    assert scale_elements(facts_of("openai/gpt-oss-120b")) == 3_583_180_800


def test_hf_totals_that_count_buffers() -> None:
    """other_truth: HF safetensors.total of old checkpoints that store non-persistent buffers."""
    t = truth()
    gpt2 = facts_of("openai-community/gpt2")
    # GPT-2 stores each layer's causal-mask buffer attn.bias (1·1·1024·1024): 12 layers.
    assert gpt2.architecture.total_parameters + 12 * 1024 * 1024 == \
        t["openai-community/gpt2"]["other_truth"]["hf_safetensors_param_total"]
    llama2 = facts_of("meta-llama/Llama-2-7b-hf")
    # Llama-2 stores rotary inv_freq (head_dim/2 = 64 floats) in each of 32 layers.
    assert llama2.architecture.total_parameters + 32 * 64 == \
        t["meta-llama/Llama-2-7b-hf"]["other_truth"]["hf_safetensors_param_total"]


def test_falcon_bin_index_is_two_bytes_per_stored_element() -> None:
    t = truth()["tiiuae/falcon-7b-instruct"]
    assert 2 * t["param_count"] == t["other_truth"]["pytorch_bin_index_total_size_bytes"]


def test_mixtral_8x22b_hand_count() -> None:
    # d = 6144, V = 32000, L = 56, 48 heads × 128, 8 KV heads, 8 experts × 16384.
    # attention 2·6144·6144 + 2·6144·1024 = 88,080,384; experts 8·3·6144·16384 = 2,415,919,104;
    # router 8·6144 = 49,152; norms 12,288 → 2,504,061,184 × 56 = 140,227,426,304;
    # embed + lm_head 2·32000·6144 = 393,216,000; final norm 6,144.
    facts = facts_of("mistralai/Mixtral-8x22B-v0.1")
    assert facts.architecture.total_parameters == 140_620_634_112
    moe = facts.architecture.moe
    assert (moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size,
            moe.num_shared_experts, moe.moe_layers) == (8, 2, 16384, 0, 56)
    assert facts.architecture.intermediate_size == 0  # no dense MLP layer


def test_qwen3_moe_dims() -> None:
    facts = facts_of("Qwen/Qwen3-30B-A3B")
    moe = facts.architecture.moe
    assert (moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size,
            moe.num_shared_experts, moe.moe_layers) == (128, 8, 768, 0, 48)
    assert facts.architecture.intermediate_size == 0
    assert group(facts, "experts") == 48 * 128 * 3 * 2048 * 768
    assert group(facts, "router") == 48 * 128 * 2048


def test_qwen3_moe_config_saved_by_transformers_5_names_experts_num_local_experts() -> None:
    # transformers 5.x saves Qwen3MoeConfig's num_experts as num_local_experts (attribute_map):
    # the same 128 experts whichever name the config.json uses
    from tests.model.conftest import config_of
    config = dict(config_of("Qwen/Qwen3-30B-A3B"))
    config["num_local_experts"] = config.pop("num_experts")
    facts = facts_from_config(config, model_id="Qwen/Qwen3-30B-A3B", revision="main",
                              source="path", source_detail="saved by transformers 5.24")
    assert facts.architecture.moe.num_experts == 128
    assert group(facts, "router") == 48 * 128 * 2048


def test_qwen3_moe_sparse_step_and_mlp_only_layers() -> None:
    # decoder_sparse_step 2 → layers 1, 3, … 47 are MoE (24); mlp_only_layers [1] removes one.
    facts = facts_of("Qwen/Qwen3-30B-A3B", decoder_sparse_step=2, mlp_only_layers=[1])
    assert facts.architecture.moe.moe_layers == 23
    assert facts.architecture.intermediate_size == 6144
    assert group(facts, "mlp") == 25 * 3 * 2048 * 6144


def test_deepseek_v3_mla_and_moe_dims() -> None:
    facts = facts_of("deepseek-ai/DeepSeek-V3")
    m = facts.architecture.mla
    assert (m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim,
            m.q_lora_rank) == (512, 64, 128, 128, 1536)
    assert facts.architecture.head_dim == 192 and facts.architecture.num_key_value_heads == 128
    moe = facts.architecture.moe
    assert (moe.num_experts, moe.experts_per_token, moe.expert_intermediate_size,
            moe.num_shared_experts, moe.moe_layers) == (256, 8, 2048, 1, 58)
    assert facts.architecture.intermediate_size == 18432
    assert "not loaded by transformers" in facts.source_detail


def test_deepseek_v2_lite_direct_q_projection() -> None:
    """DeepSeek-V2-Lite shapes (q_lora_rank null); hand count of one MoE layer's attention."""
    config = {
        "model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
        "num_attention_heads": 16, "num_key_value_heads": 16, "vocab_size": 102400,
        "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64,
        "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
        "moe_layer_freq": 1, "q_lora_rank": None, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "tie_word_embeddings": False,
        "max_position_embeddings": 163840, "torch_dtype": "bfloat16"}
    from gpusizer.model.config import facts_from_config
    facts = facts_from_config(config, model_id="x", revision=None, source="path",
                              source_detail="synthetic V2-Lite")
    # q_proj 2048·16·192 + kv_a 2048·576 + kv_b 512·16·256 + o 16·128·2048 = 13,762,560 per layer
    assert group(facts, "attention") == 27 * 13_762_560
    # norms: 2·2048 + kv_a_layernorm 512 per layer (no q_a_layernorm), + final 2048
    assert group(facts, "norms") == 27 * (2 * 2048 + 512) + 2048
    assert group(facts, "shared_experts") == 26 * 3 * 2048 * 2816
    assert facts.architecture.mla.q_lora_rank is None and facts.architecture.moe.moe_layers == 26


def test_moe_layer_freq_other_than_one_is_refused() -> None:
    from gpusizer.errors import ModelError
    with pytest.raises(ModelError, match="moe_layer_freq"):
        facts_of("deepseek-ai/DeepSeek-V3", moe_layer_freq=2)


def test_tied_and_untied_lm_head() -> None:
    tied = facts_of("meta-llama/Llama-3.2-1B-Instruct")
    assert tied.architecture.tie_word_embeddings and group(tied, "lm_head") == 0
    untied = facts_of("meta-llama/Llama-3.2-1B-Instruct", tie_word_embeddings=False)
    assert group(untied, "lm_head") == 128256 * 2048
    assert (untied.architecture.total_parameters - tied.architecture.total_parameters
            == 128256 * 2048)
    gemma = facts_of("google/gemma-2-9b")  # no tie_word_embeddings key: Gemma2Config ties
    assert gemma.architecture.tie_word_embeddings and group(gemma, "lm_head") == 0


def test_biases_and_norms_by_family() -> None:
    llama = facts_of("meta-llama/Meta-Llama-3.1-8B")
    assert not [g for g in llama.architecture.params if g.role == "bias"]
    qwen2 = facts_of("Qwen/Qwen2.5-7B")  # q, k, v biases: 3584 + 2·512 per layer
    assert group(qwen2, "attention_bias") == 28 * (3584 + 2 * 4 * 128)
    qwen3 = facts_of("Qwen/Qwen3-8B")  # 2 RMSNorms + q/k norms of head_dim per layer
    assert group(qwen3, "norms") == 36 * (2 * 4096 + 2 * 128) + 4096
    gemma2 = facts_of("google/gemma-2-9b")  # 4 RMSNorms per layer
    assert group(gemma2, "norms") == 42 * 4 * 3584 + 3584
    gemma3 = facts_of("google/gemma-3-1b-it")  # 4 RMSNorms + q/k norms
    assert group(gemma3, "norms") == 26 * (4 * 1152 + 2 * 256) + 1152
    phi4 = facts_of("microsoft/phi-4")  # fused qkv_proj and gate_up_proj: 2 + 2 matrices
    assert next(g for g in phi4.architecture.params if g.name == "attention").matrices == 2 * 40
    assert next(g for g in phi4.architecture.params if g.name == "mlp").matrices == 2 * 40


def test_gpt_oss_roles() -> None:
    facts = facts_of("openai/gpt-oss-120b")
    roles = {g.name: g.role for g in facts.architecture.params}
    assert roles["experts"] == "expert_linear" and roles["experts_bias"] == "bias"
    assert roles["router"] == "router" and roles["router_bias"] == "bias"
    assert roles["attention_sinks"] == "other" and roles["attention_bias"] == "bias"
    assert group(facts, "attention_sinks") == 36 * 64
    experts = next(g for g in facts.architecture.params if g.name == "experts")
    assert experts.largest_matrix == 128 * 5760 * 2880  # stacked gate_up_proj of one layer


def test_gpt2_learned_positions_and_conv1d() -> None:
    facts = facts_of("openai-community/gpt2")
    assert group(facts, "position_embeddings") == 1024 * 768
    assert group(facts, "attention_bias") == 12 * (3 * 768 + 768)
    assert group(facts, "mlp_bias") == 12 * (3072 + 768)
    assert not facts.architecture.gated_mlp and facts.architecture.context_window_tokens == 1024


def test_falcon_variants() -> None:
    base = config_of("tiiuae/falcon-7b-instruct")
    from gpusizer.model.config import facts_from_config

    def count(**over: object) -> int:
        return facts_from_config({**base, **over}, model_id="x", revision=None, source="path",
                                 source_detail="synthetic falcon").architecture.total_parameters

    # Falcon-40B shapes: new_decoder_architecture, 8 KV heads, ln_attn + ln_mlp.
    # per layer qkv 8192·(128 + 16)·64 = 75,497,472; dense 67,108,864; MLP 2·8192·32768 =
    # 536,870,912; 2 LayerNorms 32,768 → 679,510,016 × 60 = 40,770,600,960;
    # embed 65024·8192 = 532,676,608; ln_f 16,384.
    assert count(hidden_size=8192, num_attention_heads=128, num_kv_heads=8, num_hidden_layers=60,
                 new_decoder_architecture=True) == 41_303_293_952
    # Falcon-RW-1B shapes: no multi-query, sequential attention (2 LayerNorms), biases, ALiBi.
    # per layer qkv 3·2048² + 6144, dense 2048² + 2048, MLP 2·2048·8192 + 8192 + 2048,
    # 2 LayerNorms 8,192 → 50,380,800 × 24 = 1,209,139,200; embed 50304·2048 = 103,022,592;
    # ln_f 4,096.
    assert count(hidden_size=2048, num_attention_heads=32, num_hidden_layers=24,
                 vocab_size=50304, multi_query=False, parallel_attn=False, bias=True,
                 alibi=True) == 1_311_625_216


def test_layer_types_gemma2_alternate_from_a_sliding_layer() -> None:
    facts = facts_of("google/gemma-2-9b")
    assert facts.architecture.layer_types[:2] == ("sliding_attention", "full_attention")
    arch = facts.architecture
    assert (arch.full_attention_layers, arch.sliding_attention_layers) == (21, 21)
    assert facts.architecture.sliding_window == 4096


def test_layer_types_gemma3_every_sixth_layer_full() -> None:
    facts = facts_of("google/gemma-3-1b-it")
    layer_types = facts.architecture.layer_types
    assert [i for i, t in enumerate(layer_types) if t == "full_attention"] == [5, 11, 17, 23]
    assert facts.architecture.sliding_window == 512


def test_layer_types_mistral_window_on_every_layer() -> None:
    v03 = facts_of("mistralai/Mistral-7B-v0.3").architecture  # sliding_window null
    assert v03.sliding_attention_layers == 0 and v03.sliding_window is None
    v01 = facts_of("mistralai/Mistral-7B-v0.3", sliding_window=4096).architecture  # v0.1's
    assert v01.sliding_attention_layers == 32 and v01.sliding_window == 4096


def test_layer_types_gpt_oss_from_config_and_default() -> None:
    listed = facts_of("openai/gpt-oss-120b").architecture
    assert listed.layer_types[:2] == ("sliding_attention", "full_attention")
    assert listed.sliding_attention_layers == 18 and listed.sliding_window == 128
    config = {k: v for k, v in config_of("openai/gpt-oss-120b").items() if k != "layer_types"}
    from gpusizer.model.config import facts_from_config
    default = facts_from_config(config, model_id="x", revision=None, source="path",
                                source_detail="gpt-oss without layer_types")
    assert default.architecture.layer_types == listed.layer_types


def test_layer_types_qwen2_window_only_when_enabled() -> None:
    off = facts_of("Qwen/Qwen2.5-7B").architecture  # window 131072, use_sliding_window false
    assert off.sliding_attention_layers == 0 and off.sliding_window is None
    on = facts_of("Qwen/Qwen2.5-7B", use_sliding_window=True, sliding_window=4096,
                  max_window_layers=20)
    assert on.architecture.layer_types.index("sliding_attention") == 20
    assert on.architecture.sliding_attention_layers == 8 and on.architecture.sliding_window == 4096


def test_layer_types_wrong_length_is_an_error() -> None:
    from gpusizer.errors import ModelError
    with pytest.raises(ModelError, match="layer_types.*lists 2 layers"):
        facts_of("openai/gpt-oss-120b", layer_types=["full_attention"] * 2)


def test_group_shapes_add_up_to_counts() -> None:
    for model_id in shared_model_ids():
        for g in facts_of(model_id).architecture.params:
            if g.shapes:
                assert sum(k * r * c for k, r, c in g.shapes) == g.count, (model_id, g.name)
                assert sum(k for k, _, _ in g.shapes) == g.matrices
                assert sum(k * r for k, r, _ in g.shapes) == g.rows


# -- what memory/ reads instead of names: module roles, positions, buffers ---------------------

ROLES = {
    "meta-llama/Meta-Llama-3.1-8B": {
        "self_attn.q_proj": "attention_in", "self_attn.k_proj": "attention_in",
        "self_attn.v_proj": "attention_in", "self_attn.o_proj": "attention_out",
        "mlp.gate_proj": "mlp_in", "mlp.up_proj": "mlp_in", "mlp.down_proj": "mlp_out",
        "lm_head": "lm_head"},
    "microsoft/phi-4": {
        "self_attn.qkv_proj": "attention_in", "self_attn.o_proj": "attention_out",
        "mlp.gate_up_proj": "mlp_in", "mlp.down_proj": "mlp_out", "lm_head": "lm_head"},
    "tiiuae/falcon-7b-instruct": {
        "self_attention.query_key_value": "attention_in", "self_attention.dense": "attention_out",
        "mlp.dense_h_to_4h": "mlp_in", "mlp.dense_4h_to_h": "mlp_out", "lm_head": "lm_head"},
    "openai-community/gpt2": {
        "attn.c_attn": "attention_in", "attn.c_proj": "attention_out", "mlp.c_fc": "mlp_in",
        "mlp.c_proj": "mlp_out", "lm_head": "lm_head"},
    "deepseek-ai/DeepSeek-V3": {
        "self_attn.q_a_proj": "attention_in", "self_attn.q_b_proj": "attention_latent",
        "self_attn.kv_a_proj_with_mqa": "attention_in", "self_attn.kv_b_proj": "attention_latent",
        "self_attn.o_proj": "attention_out", "mlp.gate_proj": "mlp_in", "mlp.up_proj": "mlp_in",
        "mlp.down_proj": "mlp_out", "mlp.experts.gate_up_proj": "expert",
        "mlp.experts.down_proj": "expert", "mlp.shared_experts.gate_proj": "shared_expert_in",
        "mlp.shared_experts.up_proj": "shared_expert_in",
        "mlp.shared_experts.down_proj": "shared_expert_out", "mlp.gate": "router",
        "lm_head": "lm_head"},
    "openai/gpt-oss-120b": {
        "self_attn.q_proj": "attention_in", "self_attn.k_proj": "attention_in",
        "self_attn.v_proj": "attention_in", "self_attn.o_proj": "attention_out",
        "mlp.experts.gate_up_proj": "expert", "mlp.experts.down_proj": "expert",
        "mlp.router": "router", "lm_head": "lm_head"},
}


@pytest.mark.parametrize("model_id", sorted(ROLES))
def test_families_declare_the_role_of_every_linear(model_id: str) -> None:
    modules = facts_of(model_id).architecture.modules
    assert {m.path: m.role for m in modules} == ROLES[model_id]


def test_every_family_declares_known_roles() -> None:
    from gpusizer.model.facts import MODULE_ROLES
    for model_id in shared_model_ids():
        roles = {m.role for m in facts_of(model_id).architecture.modules}
        assert roles <= MODULE_ROLES and {"attention_in", "attention_out", "lm_head"} <= roles


def test_converted_experts_keep_the_checkpoint_names() -> None:
    # transformers v5 stacks the per-expert tensors; PEFT maps targets by the checkpoint's names
    # (peft/utils/transformers_weight_conversion.py _MOE_TARGET_MODULE_MAPPING)
    def sources(model_id: str) -> dict[str, tuple[str, ...]]:
        return {m.path: m.converted_from for m in facts_of(model_id).architecture.modules
                if m.role == "expert"}
    assert sources("mistralai/Mixtral-8x22B-v0.1") == {
        "mlp.experts.gate_up_proj": ("w1", "w3"), "mlp.experts.down_proj": ("w2",)}
    assert sources("Qwen/Qwen3-30B-A3B") == {
        "mlp.experts.gate_up_proj": ("gate_proj", "up_proj"),
        "mlp.experts.down_proj": ("down_proj",)}
    assert sources("openai/gpt-oss-120b") == {   # stored stacked: nothing to convert
        "mlp.experts.gate_up_proj": (), "mlp.experts.down_proj": ()}


def test_positions_by_family() -> None:
    assert facts_of("openai-community/gpt2").architecture.positions == "learned"  # wpe
    assert facts_of("meta-llama/Meta-Llama-3.1-8B").architecture.positions == "rope"
    assert facts_of("deepseek-ai/DeepSeek-V3").architecture.positions == "rope"
    # Falcon: rotary unless alibi (modeling_falcon.py: FalconRotaryEmbedding only without alibi)
    assert facts_of("tiiuae/falcon-7b-instruct").architecture.positions == "rope"
    assert facts_of("tiiuae/falcon-7b-instruct", alibi=True).architecture.positions == "alibi"


def test_persistent_buffers_by_family() -> None:
    from gpusizer.model.facts import PersistentBuffer
    # DeepSeek-V3: e_score_correction_bias, one fp32 value per routed expert and MoE layer
    # (256 experts × (61 − 3 dense) layers)
    assert facts_of("deepseek-ai/DeepSeek-V3").architecture.persistent_buffers == (
        PersistentBuffer("mlp.gate.e_score_correction_bias", 256 * 58, "float32"),)
    for model_id in shared_model_ids():
        if model_id != "deepseek-ai/DeepSeek-V3":
            assert facts_of(model_id).architecture.persistent_buffers == (), model_id
