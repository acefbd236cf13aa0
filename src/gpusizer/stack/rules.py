"""The version rules of transformers, PEFT, bitsandbytes and TRL, each row citing its source.

Pinned versions (``auto``): transformers 5.24.0 and PEFT 0.21.2 are those CI installs and the
families' arithmetic was checked against; bitsandbytes 0.50.2, TRL 1.16.0 and DeepSpeed 0.19.8
are the newest releases on PyPI when these tables were written (2026-11); vLLM 0.11.0 and
SGLang 0.4.1 are the releases whose start-up logs the serving rules were checked against
(``memory/engines/versions.py``, which keeps the engines' own tables: the rows below record the
ranges they cover, so the sheet refuses a release neither knows).
"""

from __future__ import annotations

from .registry import Rule, RuleRow, register_library, register_rule, rule_value

__all__ = ["TRANSFORMERS_STACKED_IN_V4", "trl_max_length"]

_PYPI = "newest release on PyPI when the tables were written (2026-11)"
register_library("transformers", "5.24.0", "the version CI installs (constraints.txt)")
register_library("peft", "0.21.2", "the version CI installs (constraints.txt)")
register_library("bitsandbytes", "0.50.2", _PYPI)
register_library("trl", "1.16.0", _PYPI)
register_library("deepspeed", "0.19.8", _PYPI)
register_library("vllm", "0.11.0", "the release of the llm-d start-up logs the V1 rules were "
                 "checked against (memory/engines/versions.py VLLM_AUTO)")
register_library("sglang", "0.4.1", "the release of the SGLang start-up logs the pool rules "
                 "were checked against (memory/engines/versions.py SGLANG_AUTO)")

TRANSFORMERS_STACKED_IN_V4 = frozenset({"gpt_oss", "llama4", "llama4_text"})
"""MoE model types whose transformers 4.x code already stores the routed experts as stacked
parameters (``GptOssExperts.gate_up_proj``, 4.55; ``Llama4TextExperts.gate_up_proj``, 4.51):
the 4.x row of ``bnb_moe_experts`` does not apply to them."""

register_rule(Rule(
    "transformers", "bnb_moe_experts",
    "what bitsandbytes (load_in_4bit / load_in_8bit) quantizes in a MoE's routed experts",
    (RuleRow("4.30", "5.0", "per_expert_linear",
             "transformers 4.x models/<moe>/modeling_*.py: experts are an nn.ModuleList of MLPs "
             "of nn.Linear (e.g. qwen3_moe Qwen3MoeSparseMoeBlock at 753d611, cited in "
             "huggingface/peft#3232; huggingface/peft#3009), and integrations/bitsandbytes.py "
             "replace_with_bnb_linear swaps every nn.Linear: each expert is quantized"),
     RuleRow("5.0", "5.25", "stacked_kept_dense",
             "transformers 5.x models/qwen3_moe/modeling_qwen3_moe.py Qwen3MoeExperts: "
             "gate_up_proj / down_proj are 3-D nn.Parameter; bitsandbytes replaces nn.Linear "
             "only, so the stacked experts stay in the compute dtype "
             "(bitsandbytes-foundation/bitsandbytes#1849)")),
    "memory/estimate.py (weights of a bitsandbytes format under engine transformers)"))

register_rule(Rule(
    "transformers", "kv_cache",
    "how transformers' generate holds and grows the KV cache between decode steps",
    (RuleRow("4.30", "4.36", "legacy_tuple",
             "transformers 4.35 models/llama/modeling_llama.py LlamaAttention.forward: "
             "key_states = torch.cat([past_key_value[0], key_states]) and a new past_key_value "
             "tuple is returned; generate keeps the previous tuple in model_kwargs until the "
             "forward returns, so the old and the new cache of every layer coexist (2×)"),
     RuleRow("4.36", "5.25", "per_layer_cache",
             "transformers 4.36 cache_utils.py DynamicCache.update (5.x DynamicLayer.update): "
             "each layer's K and V are replaced by torch.cat in place, the old tensor freed "
             "before the next layer: one layer's K (or V) coexists twice")),
    "memory/estimate.py (kv_cache_growth_transient, allocator_fragmentation)"))

register_rule(Rule(
    "peft", "all_linear_moe",
    "what LoraConfig(target_modules='all-linear') adapts in a MoE's routed experts and router",
    (RuleRow("0.8", "0.19", "nn_linear_only",
             "peft tuners/tuners_utils.py _maybe_include_all_linear_layers: every nn.Linear / "
             "Conv1D but the output layer, no router exclusion; under transformers 4.x that is "
             "each expert's linears and the router, under 5.x neither (3-D nn.Parameter experts "
             "and TopKRouter weight; huggingface/peft#3009)"),
     RuleRow("0.21", "0.22", "converted_experts_and_router",
             "peft 0.21 utils/transformers_weight_conversion.py: all-linear also carries a "
             "checkpoint's per-expert linears into target_parameters of the converted experts, "
             "and the router (huggingface/peft#3232; memory/lora.py, checked against "
             "get_peft_model)")),
    "memory/lora.py (all-linear on MoE models; 0.19-0.20 are not known: the conversion "
    "landed between them and is not dated to a release here)"))

register_rule(Rule(
    "bitsandbytes", "params4bit_blocksize",
    "values per absmax block of 4-bit weights (Params4bit blocksize default, CUDA)",
    (RuleRow("0.39", "0.51", "64",
             "bitsandbytes 0.39 (4-bit, QLoRA) to 0.50 nn/modules.py Params4bit: blocksize 64 "
             "by default on CUDA"),),
    "formats/bnb.py (BNB_BLOCK)"))

register_rule(Rule(
    "trl", "sft_max_length",
    "the SFT trainer's default maximum tokenized length: longer samples are truncated "
    "silently (key:default)",
    (RuleRow("0.8", "0.16", "max_seq_length:1024",
             "trl 0.8-0.15 trainer/sft_trainer.py: max_seq_length None → "
             "min(tokenizer.model_max_length, 1024) with a warning"),
     RuleRow("0.16", "0.20", "max_length:1024",
             "trl 0.16 trainer/sft_config.py: max_length = 1024, max_seq_length deprecated "
             "(removed in 0.20: huggingface/trl#3912)"),
     RuleRow("0.20", "1.17", "max_length:1024",
             "trl 1.13.0 trainer/sft_config.py: max_length defaults to 1024 (sequences longer "
             "are truncated)")),
    "decision/criteria.py (workload: a training sequence_length above the default with "
    "stack.framework trl-sft)"))


register_rule(Rule(
    "vllm", "engine_core",
    "which vLLM engine core sizes the KV pool at start (its profile run and accounting)",
    (RuleRow("0.4", "0.8", "V0",
             "vLLM V0 worker/worker.py determine_num_available_blocks (0.6.4 logs: "
             "vllm-project/vllm#10517, #13061)"),
     RuleRow("0.8", "0.12", "V1",
             "vLLM V1, the default engine from 0.8.0: v1/worker/gpu_worker.py "
             "determine_available_memory, gpu_model_runner.py profile_run / _dummy_sampler_run "
             "(checked on 0.10.1 and 0.11.0 logs; later releases are not checked)")),
    "memory/engines/versions.py (VLLM_RULES) and memory/engines/vllm_pool.py"))

register_rule(Rule(
    "sglang", "mem_fraction_static_default",
    "SGLang's default mem_fraction_static for the card and TP size",
    (RuleRow("0.4", "0.5.4", "by_tp_size",
             "SGLang 0.4.x srt/server_args.py ServerArgs.__post_init__: 0.88 on one GPU, 0.87 "
             "from TP 2, 0.85 from 4, 0.81 from 8, 0.79 from 16"),
     RuleRow("0.5.4", "0.6", "reserved_memory",
             "SGLang >= 0.5.4 srt/server_args.py _handle_gpu_memory_settings: (GPU memory − "
             "reserved memory) / GPU memory (sgl-project/sglang#10975)")),
    "memory/engines/versions.py (sglang_defaults) and memory/engines/sglang.py"))

register_rule(Rule(
    "deepspeed", "zero2_estimator",
    "DeepSpeed's estimate_zero2_model_states_mem_needs formula (a labelled reference only)",
    (RuleRow("0.10", "0.14.3", "4P+16P/G",
             "DeepSpeed before 0.14.3 runtime/zero/stage_1_and_2.py: gpu_mem = 4 × params + "
             "16 × params / GPUs (the docs' printed tables)"),
     RuleRow("0.14.3", "0.20", "2P+18P/G",
             "DeepSpeed 0.14.3 (PR #5099, commit f4cb866) to 0.19.x: gpu_mem = 2 × params + "
             "18 × params / GPUs")),
    "memory/training/deepspeed_reference.py"))


def trl_max_length(version: str) -> tuple[str, int]:
    """TRL's SFT key and default maximum length for ``version`` (``auto``: the pinned one):
    ``("max_length", 1024)``.

    Raises:
        registry.UnknownVersion: a TRL version no row covers.
    """
    key, default = rule_value("trl", "sft_max_length", version).split(":")
    return key, int(default)
