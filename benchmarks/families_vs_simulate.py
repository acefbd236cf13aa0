"""The families added for issue 13 point 3 at full size: ``estimate`` against ``simulate``, per phase.

For each family one published model's dimensions (re-typed from its Hub ``config.json``, source
named; keys the dimensions do not name keep the transformers 5.24 config class default) runs
under simulate's fake tensors (the model's own transformers code, no weights) and under the
arithmetic; printed per phase: simulated peak, estimated peak, difference (bytes and %), and the
weights and KV-cache items. Two sheets: inference (1 × 1920-token prompt + 128 new tokens, within
Pythia's 2048) and a LoRA step (rank 16, 1 × 2048 tokens, ``all-linear``; PhiMoE and GLM-4.5
MoE: the attention projections, see ``tests/model/test_families_vs_simulate.py``). A family
whose run fails prints the error and the others still run.

Run: ``python benchmarks/families_vs_simulate.py [--only TYPE ...]`` (minutes on two CPU cores;
needs the simulate extra). No network, no remote code.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

MODELS: dict[str, tuple[str, dict]] = {
    "olmo2": ("allenai/OLMo-2-1124-7B", dict(
        vocab_size=100352, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
        rms_norm_eps=1e-6, tie_word_embeddings=False, pad_token_id=100277,
        eos_token_id=100257)),
    "gpt_neox": ("EleutherAI/pythia-6.9b", dict(
        vocab_size=50432, hidden_size=4096, intermediate_size=16384, num_hidden_layers=32,
        num_attention_heads=32, max_position_embeddings=2048, rotary_pct=0.25,
        use_parallel_residual=True, tie_word_embeddings=False, bos_token_id=0,
        eos_token_id=0)),
    "starcoder2": ("bigcode/starcoder2-7b", dict(
        vocab_size=49152, hidden_size=4608, intermediate_size=18432, num_hidden_layers=32,
        num_attention_heads=36, num_key_value_heads=4, max_position_embeddings=16384,
        sliding_window=4096, use_bias=True, bos_token_id=0, eos_token_id=0)),
    "cohere2": ("CohereForAI/c4ai-command-r7b-12-2024", dict(
        vocab_size=256000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=132096,
        sliding_window=4096, sliding_window_pattern=4, logit_scale=0.25)),
    "glm4": ("THUDM/GLM-4-9B-0414", dict(
        vocab_size=151552, hidden_size=4096, intermediate_size=13696, num_hidden_layers=40,
        num_attention_heads=32, num_key_value_heads=2, head_dim=128, attention_bias=True,
        max_position_embeddings=32768, tie_word_embeddings=False)),
    "phimoe": ("microsoft/Phi-3.5-MoE-instruct", dict(
        vocab_size=32064, hidden_size=4096, intermediate_size=6400, num_hidden_layers=32,
        num_attention_heads=32, num_key_value_heads=8, num_local_experts=16,
        num_experts_per_tok=2, attention_bias=True, lm_head_bias=True,
        max_position_embeddings=131072, sliding_window=131072, tie_word_embeddings=False)),
    "glm4_moe": ("zai-org/GLM-4.5-Air", dict(
        vocab_size=151552, hidden_size=4096, intermediate_size=10944, num_hidden_layers=46,
        num_attention_heads=96, num_key_value_heads=8, head_dim=128, attention_bias=True,
        moe_intermediate_size=1408, n_routed_experts=128, n_shared_experts=1,
        num_experts_per_tok=8, first_k_dense_replace=1, use_qk_norm=False,
        max_position_embeddings=131072, num_nextn_predict_layers=1,
        tie_word_embeddings=False)),
    "llama4_text": ("meta-llama/Llama-4-Scout-17B-16E (text_config)", dict(
        vocab_size=202048, hidden_size=5120, intermediate_size=8192,
        intermediate_size_mlp=16384, num_hidden_layers=48, num_attention_heads=40,
        num_key_value_heads=8, head_dim=128, num_local_experts=16, num_experts_per_tok=1,
        interleave_moe_layer_step=1, attention_chunk_size=8192,
        max_position_embeddings=10485760)),
    # the state-space / linear-attention hybrids: transformers 5.24's own config class defaults,
    # which its docstring (@auto_docstring checkpoint) says are "similar to" the model named
    "mamba2": ("transformers Mamba2Config defaults (~ state-spaces/mamba2-2.8b)", {}),
    "jamba": ("transformers JambaConfig defaults (~ ai21labs/Jamba-v0.1)", {}),
    "qwen3_next": ("transformers Qwen3NextConfig defaults (~ Qwen/Qwen3-Next-80B-A3B-Instruct)",
                   {}),
    "falcon_h1": ("transformers FalconH1Config defaults (~ tiiuae/Falcon-H1-1.5B-Deep-Instruct)",
                  {}),
    "nemotron_h": ("transformers NemotronHConfig defaults (~ nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B"
                   "-BF16)", {}),
}
"""model_type → (the published model, its dimensions as its config.json states them; for the
hybrids, the config class defaults, labelled as such)."""

LORA_TARGETS = {"phimoe": ["q_proj", "k_proj", "v_proj", "o_proj"],
                "glm4_moe": ["q_proj", "k_proj", "v_proj", "o_proj"],
                # PEFT 0.21 refuses out_proj and conv1d on Mamba-based models
                "mamba2": ["in_proj"], "falcon_h1": ["q_proj", "v_proj", "in_proj"],
                "nemotron_h": ["q_proj", "k_proj", "v_proj", "o_proj", "in_proj"]}


def full_config(model_type: str) -> dict:
    """The published dimensions over the transformers config class defaults, as a dict."""
    from transformers import AutoConfig

    _, dims = MODELS[model_type]
    d = AutoConfig.for_model(model_type, **dims).to_dict()
    d.pop("dtype", None)
    d.update(model_type=model_type, torch_dtype="bfloat16")
    return d


def compare(model_type: str) -> Iterator[str]:
    """Lines of estimate vs simulate for both sheets of one family, as they come."""
    from gpusizer.model.config import facts_from_config
    from gpusizer.pipeline import resolve_facts
    from gpusizer.sheet import parse_sheet
    from gpusizer.simulate.engine import simulate_memory

    model_id, _ = MODELS[model_type]
    cfg = full_config(model_type)
    facts = facts_from_config(cfg, model_id=model_id, revision=None, source="path",
                              source_detail="benchmark")
    yield f"## {model_type} ({model_id}): {facts.architecture.total_parameters:,} parameters"
    sheets = {
        "inference": {"inference": {"prompt_tokens": 1920, "new_tokens": 128,
                                    "concurrency": 1}},
        "lora": {"training": {"sequence_length": 2048, "microbatch": 1, "lora": {
            "rank": 16, "targets": LORA_TARGETS.get(model_type, "all-linear")}}},
    }
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(cfg))
        for task, block in sheets.items():
            sheet = parse_sheet({"model": {"path": tmp}, "task": task, "weights": "bf16",
                                 **block})
            start = time.perf_counter()
            r = simulate_memory(sheet, resolve_facts(sheet))
            yield f"{task} ({time.perf_counter() - start:.0f} s)"
            for p in r.comparison["phases"]:
                s, e, diff = (p["simulated_peak_bytes"], p["estimate_peak_bytes"],
                              p["difference_bytes"])
                if s is None:
                    continue
                yield (f"  {p['phase']:15} simulated {s:>15,} estimated {e:>15,} "
                       f"difference {diff:>+13,} ({100 * diff / s:+.2f} %)")
            for i in r.comparison["items"]:
                shown = ("weights", "kv_cache", "recurrent_state")
                if i["item"] in shown and i["phase"] in ("load", "prefill", "decode", "forward"):
                    yield (f"    {i['item']:8} {i['phase']:8} simulated "
                           f"{i['simulated_bytes']:>15,} estimated {i['estimate_bytes']:>15,} "
                           f"difference {i['difference_bytes']:+,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=sorted(MODELS), help="model types")
    args = parser.parse_args()
    for model_type in args.only:
        try:
            for line in compare(model_type):
                print(line, flush=True)
        except Exception as exc:  # noqa: BLE001 - a benchmark reports and goes on
            print(f"  simulate failed: {type(exc).__name__}: {str(exc).splitlines()[0]}",
                  flush=True)


if __name__ == "__main__":
    main()
