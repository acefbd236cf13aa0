"""Scales and buffers counted from matrix shapes (the truth cases are in test_families.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpusizer.errors import ModelError
from gpusizer.model.stored_elements import buffer_elements, scale_elements, stored_tensor_elements

from .conftest import facts_of


def test_sixteen_bit_checkpoint_stores_its_parameters() -> None:
    facts = facts_of("meta-llama/Meta-Llama-3.1-8B")
    assert scale_elements(facts) == 0 and buffer_elements(facts) == 0
    assert stored_tensor_elements(facts) == facts.architecture.total_parameters


def test_fp8_block_scales_round_up_partial_blocks() -> None:
    # DeepSeek-V3 kv_a_proj_with_mqa is 576 × 7168: ⌈576/128⌉ · ⌈7168/128⌉ = 5 · 56 = 280 scales.
    facts = facts_of("deepseek-ai/DeepSeek-V3")
    attention = next(g for g in facts.architecture.params if g.name == "attention")
    assert (61, 576, 7168) in attention.shapes
    one = replace(facts, architecture=replace(
        facts.architecture, params=(replace(attention, shapes=((1, 576, 7168),)),)))
    assert scale_elements(one) == 280


def test_unmodelled_format_is_an_error() -> None:
    facts = replace(facts_of("meta-llama/Meta-Llama-3.1-8B"), stored_format="gptq-int4")
    with pytest.raises(ModelError, match="gptq-int4"):
        scale_elements(facts)
