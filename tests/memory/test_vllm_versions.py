"""vLLM's pool by release and GPU count (``engines.versions``), against public vLLM figures.

Cases: TP 1 and TP 2 from the llm-d benchmark's table of vLLM 0.11.0 start-up figures on H100
(llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @ 4f4d4494, columns
weights / activation / non-torch / CUDA graph / KV cache, GiB), TP 4 from a vLLM 0.10.1.1 log
(tests/data/engine_logs/vllm-dennislee-gptoss120b-4xa100-tp4.log). No usable public log with
TP 8 was found. Tolerance: 5 % on the KV figures (the logs round to 0.01 GiB).
"""

import pytest

from ..conftest import REPO_ROOT as REPO, cli_json

GiB = 2**30


def _pool(sheet: str, card: str) -> dict:
    doc = cli_json("estimate", f"examples/validation/{sheet}.yaml", "--card", card)
    return doc["memory"]["pool"]


@pytest.mark.parametrize("sheet, kv_gib", [
    ("llmd-h100-qwen3-06b-tp1-maxlen16000", 64.45),
    ("llmd-h100-llama31-8b-tp1-maxlen16000", 51.38),
    ("llmd-h100-qwen3-32b-tp1-maxlen16000", 4.45),
    ("llmd-h100-qwen3-32b-tp2-maxlen16000", 34.49),
])
def test_llmd_v0110_kv_bytes_tp1_tp2(sheet, kv_gib):
    v = _pool(sheet, "H100 SXM")
    print(f"{sheet}: KV {v['kv_cache_bytes'] / GiB:.2f} GiB vs {kv_gib} logged")
    assert v["kv_cache_bytes"] / GiB == pytest.approx(kv_gib, rel=0.05)
    assert v["starts"] is True


def test_v1_sampler_peak_is_the_logged_activation():
    # llm-d: Qwen3-0.6B activation 5.56 GiB with 1024 sequences; the sampler's 38 B per logit
    # (versions._V1_SAMPLER_BYTES) × 1024 × vocab 151936 = 5.51 GiB, plus the kept hidden states
    v = _pool("llmd-h100-qwen3-06b-tp1-maxlen16000", "H100 SXM")
    assert v["activation_bytes"] >= 38 * 1024 * 151936
    assert v["activation_bytes"] / GiB == pytest.approx(5.56, rel=0.03)


def test_tp2_non_torch_adds_nccl_and_custom_all_reduce():
    # llm-d logged non-torch 0.14 GiB at TP 1 and 0.54 GiB at TP 2 (Qwen3-32B, H100)
    one = _pool("llmd-h100-qwen3-32b-tp1-maxlen16000", "H100 SXM")
    two = _pool("llmd-h100-qwen3-32b-tp2-maxlen16000", "H100 SXM")
    assert one["non_torch_bytes"] == int(0.13 * GiB)
    assert two["non_torch_bytes"] / GiB == pytest.approx(0.54, abs=0.06)


def test_dennislee_tp4_hybrid_tokens_and_concurrency_as_logged():
    log = open("tests/data/engine_logs/vllm-dennislee-gptoss120b-4xa100-tp4.log").read()
    assert "GPU KV cache size: 2,640,144 tokens" in log and "284.25x" in log
    v = _pool("dennislee-vllmbench-gptoss120b-4xa100-tp4-maxlen16384", "A100 80GB")
    print(f"TP4: KV {v['kv_cache_bytes'] / GiB:.2f} GiB vs 45.32, tokens {v['kv_tokens']} vs "
          f"2640144, concurrency {v['max_concurrency']} vs 284.25")
    assert v["kv_cache_bytes"] / GiB == pytest.approx(45.32, rel=0.05)
    # two KV-cache groups (18 full + 18 sliding layers): tokens = blocks // 2 × 16
    assert v["kv_tokens"] == v["kv_blocks"] // 2 * 16
    assert v["kv_tokens"] == pytest.approx(2640144, rel=0.05)
    assert v["max_concurrency"] == pytest.approx(284.25, rel=0.05)


def test_v0_pinned_sheets_keep_v0_accounting():
    from gpusizer.memory.engines.versions import vllm_rules
    assert vllm_rules("0.6.4.post1").engine_core == "V0"
    assert vllm_rules("0.8.0").engine_core == "V1" and vllm_rules("auto").engine_core == "V1"
    v = _pool("vllm10517-llama31-8b-rtx3090", "NVIDIA GeForce RTX 3090")
    assert v["kv_cache_bytes"] / GiB == pytest.approx(3.81, rel=0.05)


def test_command_line_states_the_sized_arguments():
    v = _pool("llmd-h100-qwen3-32b-tp2-maxlen16000", "H100 SXM")
    assert v["command"] == ("vllm serve Qwen/Qwen3-32B --max-model-len 16000 --max-num-seqs 1024 "
                            "--max-num-batched-tokens 8192 --gpu-memory-utilization 0.9 "
                            "--tensor-parallel-size 2 --block-size 128 --kv-cache-dtype auto")


def test_refusal_quotes_vllm_v1_words():
    # llm-d: Qwen3-32B on one H100 at max_model_len 32000 FAILED (vLLM 0.11.0)
    doc = cli_json("estimate", "examples/validation/llmd-h100-qwen3-32b-tp1-maxlen32000.yaml",
                   "--card", "H100 SXM")
    assert doc["fit"]["state"] == "exclude"
    assert "To serve at least one request with the models's max seq len (32000)" in \
        doc["fit"]["reason"]


def test_refusal_quotes_vllm_v0_words():
    doc = cli_json("estimate", "examples/validation/vllm10517-llama31-8b-rtx3090-maxlen29000.yaml",
                   "--card", "NVIDIA GeForce RTX 3090")
    # the log: "The model's max seq len (29000) is larger than the maximum number of tokens
    # that can be stored in KV cache (23648)" (ours: 24400, +3.2 %)
    assert "The model's max seq len (29000) is larger than the maximum number of tokens" in \
        doc["fit"]["reason"]


def test_max_num_batched_tokens_below_max_num_seqs_is_refused_as_vllm_does():
    from gpusizer.errors import SheetError
    from gpusizer.sheet import parse_sheet
    with pytest.raises(SheetError, match=r"max_num_batched_tokens \(128\) must be greater than "
                                         r"or equal to max_num_seqs \(256\)"):
        parse_sheet({"model": {"parameters": 7_000_000_000}, "task": "inference",
                     "weights": "bf16", "inference": {"engine": "vllm", "prompt_tokens": 8,
                                                      "new_tokens": 8,
                                                      "max_num_batched_tokens": 128}})


def test_kv_cache_dtype_versions_and_sizes(tmp_path):
    from gpusizer.memory.engines.versions import VLLM_KV_CACHE_DTYPES
    assert VLLM_KV_CACHE_DTYPES == {"fp8": "0.4.2", "fp8_e4m3": "0.5.3", "fp8_e5m2": "0.5.3"}
    sheet = tmp_path / "s.yaml"
    base = ("model: {id: meta-llama/Meta-Llama-3.1-8B}\ntask: inference\nweights: bf16\n"
            "inference: {engine: vllm, prompt_tokens: 1000, new_tokens: 24, "
            "kv_cache_dtype: %s}\nstack: {vllm: \"%s\"}\n")
    sheet.write_text(base % ("fp8_e5m2", "0.4.2"))
    doc = cli_json("estimate", str(sheet), "--card", "H100 SXM")
    # one byte per value: 16 tokens × 32 layers × 2 × 8 KV heads × 128 × 1 B
    assert doc["memory"]["pool"]["block_bytes"] == 16 * 32 * 2 * 8 * 128
    assert any("list it from 0.5.3 on, not in 0.4.2" in n for n in doc["memory"]["notes"])
    assert doc["memory"]["pool"]["command"].endswith("--kv-cache-dtype fp8_e5m2")


def test_v0_default_batched_tokens_is_the_whole_context(tmp_path):
    """vLLM V0 without chunked prefill profiles max(max_model_len, 2048) tokens
    (SchedulerConfig, 0.6.x): vllm#10517's sheet without max_num_batched_tokens gives the same
    pool as with the 20000 its log implies; above 32 768 tokens V0 turns chunked prefill on
    (512 per step)."""
    import yaml

    from gpusizer.memory.engines.versions import batched_tokens
    from gpusizer.sheet import parse_sheet
    src = REPO / "examples" / "validation" / "vllm10517-llama31-8b-rtx3090.yaml"
    body = yaml.safe_load(src.read_text())
    stated = parse_sheet(body).inference
    del body["inference"]["max_num_batched_tokens"]
    default = parse_sheet(body)
    assert batched_tokens(default.inference, "0.6.4.post1") == (
        20000, "vLLM V0's default without chunked prefill: max(max_model_len 20000, 2048)")
    assert batched_tokens(stated, "0.6.4.post1")[0] == 20000
    assert batched_tokens(default.inference, "0.11.0")[0] == 8192       # V1: the sheet's default
    long = default.inference.model_copy(update={"prompt_tokens": 40000})
    assert batched_tokens(long, "0.6.4.post1")[0] == 512
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(body))
    with_default = cli_json("estimate", str(path), "--card", "RTX 3090")["memory"]["pool"]
    with_stated = cli_json("estimate", str(src), "--card", "RTX 3090")["memory"]["pool"]
    assert with_default["kv_tokens"] == with_stated["kv_tokens"]
