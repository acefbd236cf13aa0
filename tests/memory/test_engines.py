"""The engines registry: each engine's own sheet keys, its rules, and no engine-name branch left
outside ``memory/engines`` (an engine is one module, a registry line and its sheet keys)."""

from __future__ import annotations

import ast
from fractions import Fraction
from pathlib import Path
from typing import get_args

import pytest

import gpusizer
from gpusizer.errors import SheetError
from gpusizer.memory.engines import ENGINES, TRAINING_ENGINE, Engine, engine_of
from gpusizer.memory.engines.transformers import TRANSFORMERS
from gpusizer.memory.engines.vllm import VLLM
from gpusizer.memory.engines.sglang import SGLANG
from gpusizer.memory.placement import inference_share
from gpusizer.sheet import Inference, parse_sheet

from .conftest import facts_of

SRC = Path(gpusizer.__file__).parent
BASE = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "inference", "weights": "bf16"}


def test_the_registry_holds_the_engines_the_sheet_accepts():
    assert tuple(ENGINES) == get_args(Inference.model_fields["engine"].annotation)
    assert ENGINES == {"transformers": TRANSFORMERS, "vllm": VLLM, "sglang": SGLANG}
    assert TRAINING_ENGINE is TRANSFORMERS


def test_each_engine_owns_its_sheet_keys():
    assert TRANSFORMERS.KEYS == {"cache"}
    assert SGLANG.KEYS == {"mem_fraction_static", "max_running_requests", "chunked_prefill_size"}
    assert VLLM.KEYS == {"gpu_memory_utilization", "max_num_batched_tokens", "max_num_seqs",
                         "block_size"}
    for engine in ENGINES.values():
        assert engine.KEYS <= set(Inference.model_fields), engine.name


@pytest.mark.parametrize("name", list(ENGINES))
def test_each_engine_has_every_member_of_the_protocol(name):
    members = set(Engine.__annotations__) | {n for n in vars(Engine) if not n.startswith("_")}
    missing = [m for m in sorted(members) if not hasattr(ENGINES[name], m)]
    assert not missing


@pytest.mark.parametrize(("engine", "key", "value", "fragment"), [
    ("transformers", "gpu_memory_utilization", 0.5, "applies to engine vllm only; this sheet "
                                                    "uses engine transformers"),
    ("transformers", "block_size", 32, "applies to engine vllm only"),
    ("vllm", "cache", "static", "vLLM's KV cache is always paged"),
    ("vllm", "logits", "all", "vLLM computes logits for the last position"),
])
def test_the_sheet_refuses_a_key_its_engine_does_not_read(engine, key, value, fragment):
    inf = {"engine": engine, "prompt_tokens": 10, "new_tokens": 5, key: value}
    with pytest.raises(SheetError, match=fragment) as exc:
        parse_sheet({**BASE, "inference": inf})
    assert str(exc.value).startswith(f"inference.{key}: ")


def test_an_engine_keeps_its_own_keys():
    s = parse_sheet({**BASE, "inference": {"engine": "vllm", "prompt_tokens": 10, "new_tokens": 5,
                                           "block_size": 32, "max_num_seqs": 8}})
    assert engine_of(s) is VLLM and s.inference.block_size == 32
    t = parse_sheet({**BASE, "inference": {"prompt_tokens": 10, "new_tokens": 5,
                                           "cache": "static"}})
    assert engine_of(t) is TRANSFORMERS and TRANSFORMERS.kv_static(t.inference)


def test_simulate_and_measure_refuse_by_the_engines_word():
    assert TRANSFORMERS.simulate_supported and TRANSFORMERS.measure_supported
    assert not VLLM.simulate_supported and "vLLM's pool is sized by estimate" in \
        VLLM.simulate_refusal
    assert not VLLM.measure_supported and VLLM.measure_refusal.startswith(
        "the harness runs transformers")


def test_tensor_parallel_placement_follows_the_engines_embedding_rule():
    f = facts_of("meta-llama/Meta-Llama-3.1-8B")
    embed = f.architecture.parameters_by_role("embedding")  # 128256 × 4096
    assert embed == 128256 * 4096
    tr = inference_share(f, strategy="tensor-parallel", gpus=2, concurrency=1,
                         rule=TRANSFORMERS.placement)
    # transformers replicates the embedding: (total − embed) / 2 + embed of the total
    assert tr.weight_fraction == (Fraction(f.architecture.total_parameters - embed, 2) + embed) \
        / f.architecture.total_parameters
    vl = inference_share(f, strategy="tensor-parallel", gpus=2, concurrency=1,
                         rule=VLLM.placement)
    assert vl.weight_fraction == Fraction(1, 2)  # vocab-parallel: everything split
    # device-map under vLLM is the sheet's refusal (no model facts needed)
    with pytest.raises(SheetError, match="device-map is accelerate's layer placement") as exc:
        parse_sheet({**BASE, "inference": {"engine": "vllm", "prompt_tokens": 10,
                                           "new_tokens": 5},
                     "placement": {"gpus": 2, "strategy": "device-map"}})
    assert str(exc.value).startswith("placement.strategy: device-map is")


def test_kv_layout_and_block_rounding_are_the_engines():
    f = facts_of("deepseek-ai/DeepSeek-V3")
    # vLLM caches the MLA latent (512 + 64) per layer; transformers per-head K (128+64) and V 128
    assert VLLM.kv_layout(f, dtype_bytes=2, tp=8).full_bytes_per_token == 61 * 576 * 2
    assert TRANSFORMERS.kv_layout(f, dtype_bytes=2, tp=1).full_bytes_per_token == \
        61 * 128 * (128 + 64 + 128) * 2
    inf = parse_sheet({**BASE, "inference": {"engine": "vllm", "prompt_tokens": 10,
                                             "new_tokens": 5}}).inference
    assert VLLM.kv_block_tokens(inf) == 16 and VLLM.attention_kernel("eager") == "flash"
    assert TRANSFORMERS.kv_block_tokens(inf) == 1 and TRANSFORMERS.attention_kernel("eager") \
        == "eager"


def _compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """Engine names used as a string in a comparison (``== "vllm"``, ``in ("vllm", …)``)."""
    names = set(ENGINES)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            consts = [side] if isinstance(side, ast.Constant) else (
                list(side.elts) if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [])
            out += [(node.lineno, c.value) for c in consts
                    if isinstance(c, ast.Constant) and c.value in names]
    return out


def test_no_module_outside_the_engines_branches_on_an_engine_name():
    branches, named = [], []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("memory/engines/"):
            continue
        tree = ast.parse(path.read_text())
        branches += [f"{rel}:{line} compares with {name!r}" for line, name in
                     _compared_names(tree)]
        if rel.startswith("formats/") or rel.startswith("stack/"):
            # a weight format's record says what each engine runs, keyed by the engine's name
            # (tests/formats/test_registry.py checks every key is an ENGINES name); the version
            # registry names vLLM and SGLang as libraries of the stack block (stack.vllm)
            continue
        named += [f"{rel}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value == "vllm"]
    assert not branches
    # "vllm" as a string: the sheet's Literal and its ENGINE_SHEET_RULES line, and the JSON key
    # of the pool's alias
    assert sorted(n.split(":")[0] for n in named) == ["report/json_report.py", "sheet.py",
                                                      "sheet.py"]


def test_the_grep_test_sees_a_branch():
    assert _compared_names(ast.parse('if engine == "vllm" or e in ("transformers", "x"): pass')) \
        == [(1, "vllm"), (1, "transformers")]
