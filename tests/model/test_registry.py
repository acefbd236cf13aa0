"""The bundled registry: valid files, the same facts as the real configs, sourced stored bytes."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from gpusizer.model.config_reader import ConfigReader
from gpusizer.model.facts import ModelFacts
from gpusizer.model.families import FAMILIES
from gpusizer.model.registry import (facts_from_entry, find_entry, registry_entries,
                                     registry_fingerprint)

from .conftest import MODELS_DIR, facts_of, truth

SOURCE_FIELDS = {"model_id", "revision", "source", "source_detail", "stored_bytes",
                 "stored_bytes_source"}
"""ModelFacts fields that say where facts came from, which legitimately differ between the
registry and a config read from a folder."""

ENTRIES = registry_entries()


def _without_source(facts: ModelFacts) -> ModelFacts:
    return replace(facts, **{f: None for f in SOURCE_FIELDS if f != "source"}, source="")


def test_every_entry_loads_with_a_public_source() -> None:
    assert len(ENTRIES) >= 32
    for entry in ENTRIES:
        assert entry.source.startswith(f"https://huggingface.co/{entry.model_id}/")
        assert entry.revision == "main" and entry.seen and entry.read_from
        assert (entry.stored_bytes is None) == (entry.stored_bytes_source is None)
        facts = facts_from_entry(entry)
        assert facts.source == "registry" and entry.file in facts.source_detail


# Entries whose config is not in the shared test data, checked against a sibling with the same
# published shapes instead: DeepSeek-R1-Distill-Qwen-14B is distilled into Qwen2.5-14B's
# architecture (48 layers, hidden 5120, 40 heads, 8 KV heads, intermediate 13824, vocab 152064).
SAME_SHAPES = {"deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": "Qwen/Qwen2.5-14B"}
WITH_CONFIG = [e for e in ENTRIES if e.model_id not in SAME_SHAPES]


def test_sibling_entries_have_the_published_shapes() -> None:
    for model_id, sibling in SAME_SHAPES.items():
        entry = next(e for e in ENTRIES if e.model_id == model_id)
        facts = facts_from_entry(entry)
        arch = facts.architecture
        assert arch.total_parameters == 14_770_033_664  # truth.json Qwen/Qwen2.5-14B
        assert (arch.num_layers, arch.hidden_size, arch.num_attention_heads,
                arch.num_key_value_heads, arch.intermediate_size, arch.vocab_size) == \
            (48, 5120, 40, 8, 13824, 152064), sibling


@pytest.mark.parametrize("entry", WITH_CONFIG, ids=[e.model_id for e in WITH_CONFIG])
def test_entry_matches_its_real_config(entry) -> None:
    folder = MODELS_DIR / entry.model_id.replace("/", "--", 1)
    if not (folder / "config.json").is_file():
        pytest.skip(f"no real config for {entry.model_id} in the shared test data "
                    "(or the shared data is absent)")
    from_registry = facts_from_entry(entry)
    from_config = facts_of(entry.model_id)
    assert _without_source(from_registry) == _without_source(from_config)
    assert from_registry.quantization_config == from_config.quantization_config  # compare=False
    compared = {f.name for f in fields(ModelFacts)} - SOURCE_FIELDS
    assert "architecture" in compared and "unrecognised_keys" in compared


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.model_id for e in ENTRIES])
def test_entry_keeps_only_keys_the_sizing_reads(entry) -> None:
    reader = ConfigReader(entry.config, file=entry.file)
    FAMILIES[entry.config["model_type"]].describe(reader)
    extra = set(entry.config) - reader.used - {"model_type", "torch_dtype", "dtype",
                                               "quantization_config"}
    assert not extra, f"{entry.file} stores keys no family reads: {sorted(extra)}"


def test_stored_bytes_equal_truth() -> None:
    t = truth()
    checked = 0
    for entry in ENTRIES:
        known = t.get(entry.model_id, {}).get("safetensors_total_size_bytes")
        if known is not None:
            assert entry.stored_bytes == known, entry.model_id
            checked += 1
        elif entry.model_id in t:
            assert entry.stored_bytes is None, entry.model_id
    assert checked == 15  # every truth total except the GitHub-only jeevanchaps upload


# Old Llama-2 checkpoints store each layer's rotary inv_freq (head_dim / 2 = 64 values) as float32.
INV_FREQ_BYTES = {"meta-llama/Llama-2-7b-hf": 32 * 64 * 4, "meta-llama/Llama-2-70b-hf": 80 * 64 * 4}


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.stored_bytes],
                         ids=[e.model_id for e in ENTRIES if e.stored_bytes])
def test_stored_bytes_are_two_bytes_per_counted_parameter(entry) -> None:
    """A cross-check of our counts: 16-bit checkpoints hold 2 bytes per logical parameter, plus
    the float32 inv_freq buffers old Llama-2 checkpoints store."""
    facts = facts_from_entry(entry)
    assert facts.stored_format in ("bf16", "fp16")
    parameters = facts.architecture.total_parameters
    expected = 2 * parameters + INV_FREQ_BYTES.get(entry.model_id, 0)
    print(f"{entry.model_id}: 2 × {parameters:,} (+ buffers) = {expected:,} "
          f"vs stored {entry.stored_bytes:,}")
    assert entry.stored_bytes == expected


def test_aliases_and_case_insensitive_lookup() -> None:
    base = find_entry("meta-llama/Meta-Llama-3.1-8B")
    for alias in ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
                  "meta-llama/Meta-Llama-3.1-8B-Instruct", "META-LLAMA/llama-3.1-8b"):
        assert find_entry(alias) is base
    facts = facts_from_entry(base, model_id="meta-llama/Llama-3.1-8B-Instruct")
    assert facts.model_id == "meta-llama/Llama-3.1-8B-Instruct"
    assert "alias of meta-llama/Meta-Llama-3.1-8B" in facts.source_detail
    assert facts.architecture.total_parameters == 8_030_261_248
    for alias in ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct"):
        assert facts_from_entry(find_entry(alias)).architecture.total_parameters == 70_553_706_496
    assert find_entry("nobody/nothing") is None


def test_r1_distill_qwen_14b_has_qwen2_5_14b_shapes() -> None:
    facts = facts_from_entry(find_entry("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"))
    arch = facts.architecture
    assert (facts.model_type, arch.num_layers, arch.hidden_size, arch.num_key_value_heads,
            arch.context_window_tokens, facts.stored_format) == ("qwen2", 48, 5120, 8, 131072,
                                                                 "bf16")
    # Same shapes as Qwen2.5-14B, whose count is truth.json's 14,770,033,664.
    assert facts.architecture.total_parameters == 14_770_033_664


def test_covers_every_shared_model_with_a_hub_id() -> None:
    if not MODELS_DIR.is_dir():
        pytest.skip("shared test data absent")
    ids = {e.model_id for e in ENTRIES}
    for folder in MODELS_DIR.iterdir():
        if (folder / "config.json").is_file() and not folder.name.startswith("jeevanchaps"):
            assert folder.name.replace("--", "/", 1) in ids


def test_fingerprint() -> None:
    assert registry_fingerprint().startswith("sha256:") and len(registry_fingerprint()) == 71
