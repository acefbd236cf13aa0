"""Where the version rules change a figure or a criterion (arithmetic shown)."""

from __future__ import annotations

from gpusizer.memory.estimate import estimate_memory
from gpusizer.sheet import parse_sheet

from ..memory.conftest import facts_of

QWEN_MOE = "Qwen/Qwen3-30B-A3B"


def _qlora(transformers: str = "auto"):
    return parse_sheet({"model": {"id": QWEN_MOE}, "task": "qlora", "weights": "nf4",
                        "training": {"sequence_length": 1024, "microbatch": 1,
                                     "lora": {"targets": ["q_proj", "v_proj"]}},
                        "stack": {"transformers": transformers}})


def test_bnb_quantizes_moe_experts_under_transformers_4_only():
    facts = facts_of(QWEN_MOE)
    v5 = estimate_memory(_qlora(), facts)
    v4 = estimate_memory(_qlora("4.57.1"), facts)
    experts = facts.architecture.parameters_by_role("expert_linear")
    # 5.x keeps the stacked experts in bf16 (2 B), 4.x packs each expert's nn.Linear in nf4
    # (0.5 B; its absmax goes to quantization_metadata): the weights differ by 1.5 B each
    assert v5.item("weights").bytes - v4.item("weights").bytes == experts * 3 // 2
    assert v5.item("weights").bytes > 3 * v4.item("weights").bytes
    assert any(n.code == "stack_rule" for n in v4.notes)
    assert not any(n.code == "stack_rule" for n in v5.notes)


def test_legacy_tuple_cache_doubles_the_growth_transient():
    inf = {"prompt_tokens": 1024, "new_tokens": 64}
    facts = facts_of("meta-llama/Meta-Llama-3.1-8B")
    base = {"model": {"id": "test/model"}, "task": "inference", "weights": "bf16",
            "inference": inf}
    new = estimate_memory(parse_sheet(base), facts)
    old = estimate_memory(parse_sheet({**base, "stack": {"transformers": "4.35.2"}}), facts)
    kv = new.item("kv_cache").bytes
    # per-layer cache: one layer's K (or V) twice; legacy tuple: the previous cache, whole
    assert new.item("kv_cache_growth_transient").bytes == kv // 32 // 2
    assert old.item("kv_cache_growth_transient").bytes == kv


def test_trl_default_length_is_a_workload_condition():
    from gpusizer.decision.criteria import silent_truncation
    base = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "lora",
            "weights": "bf16", "training": {"sequence_length": 4096, "microbatch": 1}}
    assert silent_truncation(parse_sheet(base)) is None        # no TRL trainer named
    trl = parse_sheet({**base, "stack": {"framework": "trl-sft"}})
    reason, condition = silent_truncation(trl)
    assert "max_length=1024" in reason and "4096" in reason
    assert condition.startswith("set max_length=4096")
    old = parse_sheet({**base, "stack": {"framework": "trl-sft", "trl": "0.12.0"}})
    assert "max_seq_length=1024" in silent_truncation(old)[0]
    short = parse_sheet({**base, "training": {"sequence_length": 1024, "microbatch": 1},
                         "stack": {"framework": "trl-sft"}})
    assert silent_truncation(short) is None
