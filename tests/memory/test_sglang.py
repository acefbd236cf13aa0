"""SGLang's token pool (``engines.sglang``) against public SGLang start-up logs, line by line.

Logs: tests/data/engine_logs/sglang-*.log (first line: the URL). Tolerance: 5 % on the KV
figures (the logs print GB = 2^30 B with two decimals, and gpusizer declares the CUDA context
instead of reading it); the request count is exact. No public SGLang log with TP > 1 on a model
of the registry was found (the threads found are hybrid Mamba or MLA models on other cards).
"""

import re

import pytest

from gpusizer.memory.engines.sglang import sglang_max_running_requests
from gpusizer.memory.engines.versions import sglang_defaults

from ..conftest import cli_json

LOGS = "tests/data/engine_logs/"
SHEET = """\
model: {id: meta-llama/Meta-Llama-3.1-8B-Instruct}
task: inference
weights: bf16
inference: {engine: sglang, prompt_tokens: 126976, new_tokens: 4096, concurrency: 1}
stack: {sglang: "0.4.1"}
"""


def _figures(lines) -> dict:
    """The numbers SGLang logs, by name (avail mem at load begin/end, mem usage, #tokens, K
    size, max_total_num_tokens, max_running_requests)."""
    out = {}
    for line in lines:
        if "Load weight begin" in line:
            out["begin_gb"] = float(re.search(r"avail mem=([\d.]+) GB", line)[1])
        if "Load weight end" in line:
            out["end_gb"] = float(re.search(r"avail mem=([\d.]+) GB", line)[1])
            if "mem usage" in line:
                out["usage_gb"] = float(re.search(r"mem usage=([\d.]+) GB", line)[1])
        if "KV Cache is allocated" in line:
            out["k_gb"] = float(re.search(r"K size: ([\d.]+) GB", line)[1])
            if "#tokens" in line:
                out["tokens"] = int(re.search(r"#tokens: (\d+)", line)[1])
        if "max_total_num_tokens=" in line:
            out["tokens"] = int(re.search(r"max_total_num_tokens=(\d+)", line)[1])
            out["running"] = int(re.search(r"max_running_requests=(\d+)", line)[1])
    return out


def _log(name: str) -> list[str]:
    lines = open(LOGS + name).read().splitlines()
    assert lines[0].startswith("# https://")
    return lines[1:]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    path = tmp_path_factory.mktemp("sglang") / "sheet.yaml"
    path.write_text(SHEET)
    return cli_json("estimate", str(path), "--card", "H100 SXM")["memory"]["pool"]


def test_docs_log_line_by_line(pool):
    logged = _figures(_log("sglang-docs-send-request-llama31-8b-h100.log"))
    ours = _figures(pool["log_lines"])
    print("SGLang docs log (logged vs ours):", {k: (logged[k], ours.get(k)) for k in logged})
    # the log's own arithmetic (profile_max_num_token): rest = end − begin × (1 − 0.88)
    rest_gb = logged["end_gb"] - logged["begin_gb"] * (1 - 0.88)
    assert rest_gb * 2**30 // (2 * 32 * 8 * 128 * 2) == pytest.approx(logged["tokens"], rel=1e-3)
    assert ours["begin_gb"] == pytest.approx(logged["begin_gb"], rel=0.01)
    assert ours["end_gb"] == pytest.approx(logged["end_gb"], rel=0.01)
    assert ours["tokens"] == pytest.approx(logged["tokens"], rel=0.05)
    assert ours["k_gb"] == pytest.approx(logged["k_gb"], rel=0.05)
    assert ours["running"] == logged["running"] == 2049
    assert pool["settings"]["mem_fraction_static"] == 0.88   # the log's server_args, TP 1


def test_pr4760_log(pool):
    logged = _figures(_log("sglang-pr4760-llama31-8b.log"))
    ours = _figures(pool["log_lines"])
    print("SGLang PR 4760 (logged vs ours):", {k: (logged[k], ours.get(k)) for k in logged})
    assert ours["tokens"] == pytest.approx(logged["tokens"], rel=0.05)
    assert ours["k_gb"] == pytest.approx(logged["k_gb"], rel=0.05)
    assert ours["usage_gb"] == pytest.approx(logged["usage_gb"], rel=0.02)


def test_k_size_counts_one_page_more_than_the_tokens(pool):
    # memory_pool.py: each layer's K buffer holds size + page_size slots; Llama-3.1-8B: 32
    # layers × 8 KV heads × 128 × 2 B = 65536 B per token for K
    k_gb = (pool["kv_tokens"] + 1) * 65536 / 2**30
    assert f"K size: {k_gb:.2f} GB" in pool["log_lines"][2]


def test_command_line(pool):
    assert pool["command"] == (
        "python -m sglang.launch_server --model-path meta-llama/Meta-Llama-3.1-8B-Instruct "
        "--context-length 131072 --mem-fraction-static 0.88 --tp-size 1 --kv-cache-dtype auto")


def test_default_mem_fraction_static_by_version():
    # 0.4.x: by TP size; chunked prefill 8192 at >= 25 000 MB (the docs log: 0.88, 8192)
    d = sglang_defaults("0.4.1", gpu_mib=81559, tp=1)
    assert (d.mem_fraction_static, d.chunked_prefill_size) == (0.88, 8192)
    assert sglang_defaults("0.4.1", gpu_mib=24564, tp=2).mem_fraction_static == 0.87
    assert sglang_defaults("0.4.1", gpu_mib=24564, tp=2).chunked_prefill_size == 2048
    assert sglang_defaults("0.4.1", gpu_mib=81559, tp=8).mem_fraction_static == 0.81
    # >= 0.5.4, H100 (81559 MiB), TP 1: reserved = 512 + 8192 × 1.5 + 256 × 2 + 1/8 × 1024
    # = 13440 MiB (above the 10 GiB floor); round((81559 − 13440) / 81559, 3) = 0.835
    assert sglang_defaults("0.5.4", gpu_mib=81559, tp=1).mem_fraction_static == 0.835
    # RTX 4090 (24564 MiB), TP 2: 512 + 2048 × 1.5 + 24 × 2 + 2/8 × 1024 = 3888 MiB → 0.842
    assert sglang_defaults("0.5.4", gpu_mib=24564, tp=2).mem_fraction_static == 0.842


def test_max_running_requests_default():
    # the docs log: 444500 tokens, context 131072 → min(222250, min(max(1736, 2048), 4096) + 1)
    assert sglang_max_running_requests(444500, 131072) == 2049


def test_sheet_refuses_vllm_keys_and_bare_fp8():
    from gpusizer.errors import SheetError
    from gpusizer.sheet import parse_sheet
    base = {"model": {"parameters": 7_000_000_000}, "task": "inference", "weights": "bf16"}
    inf = {"engine": "sglang", "prompt_tokens": 10, "new_tokens": 10}
    with pytest.raises(SheetError, match="engine vllm only"):
        parse_sheet({**base, "inference": {**inf, "gpu_memory_utilization": 0.8}})
    with pytest.raises(SheetError, match="fp8_e4m3"):
        parse_sheet({**base, "inference": {**inf, "kv_cache_dtype": "fp8"}})
    with pytest.raises(SheetError, match="engine sglang only"):
        parse_sheet({**base, "inference": {"prompt_tokens": 10, "new_tokens": 10,
                                           "mem_fraction_static": 0.8}})
    ok = parse_sheet({**base, "inference": {**inf, "kv_cache_dtype": "fp8_e5m2",
                                            "mem_fraction_static": 0.9}})
    assert ok.inference.mem_fraction_static == 0.9


def test_page_one_lists_each_offers_command(tmp_path):
    from gpusizer.report.page_one import command_lines
    path = tmp_path / "sheet.yaml"
    path.write_text(SHEET)
    doc = cli_json("plan", str(path))
    lines = command_lines(doc["offers"])
    assert lines and all("python -m sglang.launch_server" in line for line in lines)
    assert {o["id"] for o in doc["offers"] if o["pool"]} == \
        {i.strip() for line in lines for i in line.split(": ")[0].split(",")}


def test_tp2_defaults_and_cell(tmp_path):
    # TP 2 on H100: SGLang 0.4.x's default 0.87; each rank caches 4 of the 8 KV heads, so a
    # token is 32 layers × 2 (K, V) × 4 heads × 128 × 2 B = 65536 B; the tokens are
    # (free at start × 0.87 − weights per rank) // 65536
    path = tmp_path / "tp2.yaml"
    path.write_text(SHEET + "placement: {gpus: 2, strategy: tensor-parallel}\n")
    v = cli_json("estimate", str(path), "--card", "H100 SXM")["memory"]["pool"]
    s = v["settings"]
    assert s["mem_fraction_static"] == 0.87
    assert v["block_bytes"] == 32 * 2 * 4 * 128 * 2
    assert v["kv_tokens"] == (int(s["free_at_start_bytes"] * 0.87) - v["weights_bytes"]) // 65536
    assert "--tp-size 2" in v["command"] and "--mem-fraction-static 0.87" in v["command"]
    # the NCCL buffers and vLLM-derived custom all-reduce buffers are taken before loading
    assert v["non_torch_bytes"] > 500 * 2**20
