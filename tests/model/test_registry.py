"""The bundled registry: valid files, the same facts as the real configs, sourced stored bytes."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from gpusizer.model.facts import ModelFacts
from gpusizer.model.registry import (close_matches, facts_from_entry, find_entry,
                                     registry_entries, registry_fingerprint)

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


# Entries for which no public copy of the whole config.json was found: the published keys only.
PARTIAL = {"deepseek-ai/DeepSeek-R1-Distill-Qwen-14B": "facts stated in the model-stage issue",
           "lmsys/vicuna-7b-v1.5": "a LLaVA log printing a config initialised from it"}


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.model_id for e in ENTRIES])
def test_entry_keeps_the_whole_config(entry) -> None:
    """Every entry keeps the whole config.json (so simulate works offline): the shared test
    data's real copy byte for byte as parsed JSON where there is one, and at least the
    ``architectures`` key transformers builds the model from otherwise."""
    assert entry.config_complete == (entry.model_id not in PARTIAL), entry.model_id
    folder = MODELS_DIR / entry.model_id.replace("/", "--", 1)
    if (folder / "config.json").is_file():
        assert entry.config == json.loads((folder / "config.json").read_text())
    if entry.config_complete:
        assert entry.config["architectures"] and entry.config["model_type"]


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
INV_FREQ_BYTES = {"meta-llama/Llama-2-7b-hf": 32 * 64 * 4, "meta-llama/Llama-2-70b-hf": 80 * 64 * 4,
                  "meta-llama/Llama-2-7b-chat-hf": 32 * 64 * 4,
                  "meta-llama/Llama-2-70b-chat-hf": 80 * 64 * 4}


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
    for alias in ("meta-llama/Llama-3.1-8B", "META-LLAMA/llama-3.1-8b"):
        assert find_entry(alias) is base
    instruct = find_entry("meta-llama/Llama-3.1-8B-Instruct")
    assert instruct is not base and find_entry("meta-llama/Meta-Llama-3.1-8B-Instruct") is instruct
    facts = facts_from_entry(instruct, model_id="meta-llama/Meta-Llama-3.1-8B-Instruct")
    assert facts.model_id == "meta-llama/Meta-Llama-3.1-8B-Instruct"
    assert "alias of meta-llama/Llama-3.1-8B-Instruct" in facts.source_detail
    # the Instruct config differs from the base only in eos_token_id: same shapes, same count
    assert {k for k in base.config if base.config[k] != instruct.config.get(k)} == {
        "eos_token_id", "transformers_version"}
    assert facts.architecture.total_parameters == 8_030_261_248
    for alias in ("meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
                  "meta-llama/Meta-Llama-3.1-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"):
        assert facts_from_entry(find_entry(alias)).architecture.total_parameters == 70_553_706_496
    assert find_entry("nobody/nothing") is None


EVERYDAY_IDS = (
    # the 14 of issue 13 that were unknown offline, as far as a public config.json was found
    "Qwen/Qwen2.5-7B-Instruct", "google/gemma-2-9b-it", "mistralai/Mistral-7B-Instruct-v0.3",
    "meta-llama/Llama-3.3-70B-Instruct", "deepseek-ai/DeepSeek-R1",
    # and the other everyday ids a new user tries first
    "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-3B-Instruct",
    "Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "Qwen/Qwen3-30B-A3B",
    "Qwen/Qwen3-235B-A22B", "Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-30B-A3B-FP8",
    "microsoft/Phi-3.5-mini-instruct", "microsoft/phi-4", "mistralai/Mixtral-8x7B-v0.1",
    "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-20b", "openai/gpt-oss-120b",
    "meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-3B", "meta-llama/Llama-2-7b-chat-hf",
    "meta-llama/Llama-2-13b-chat-hf", "meta-llama/Llama-2-70b-chat-hf", "google/gemma-2-2b-it",
    "google/gemma-2b", "mistralai/Mistral-Nemo-Base-2407", "Qwen/Qwen2.5-72B-Instruct",
)


@pytest.mark.parametrize("model_id", EVERYDAY_IDS)
def test_everyday_ids_resolve_offline(model_id: str) -> None:
    from gpusizer.model.resolve import resolve_model

    facts = resolve_model(model_id=model_id, revision=None, path=None)
    assert facts.source == "registry" and facts.architecture.total_parameters > 0


def test_published_counts_of_new_entries() -> None:
    """Counts of entries added without a shared copy, against published figures: the same
    shapes as an entry whose count truth.json holds, or the model card's parameter count."""
    count = {e.model_id: facts_from_entry(e).architecture.total_parameters for e in ENTRIES}
    assert count["Qwen/Qwen2.5-7B-Instruct"] == count["Qwen/Qwen2.5-7B"] == 7_615_616_512
    assert count["Qwen/Qwen2.5-32B-Instruct"] == count["Qwen/Qwen2.5-32B"] == 32_763_876_352
    assert count["google/gemma-2-9b-it"] == count["google/gemma-2-9b"] == 9_241_705_984
    assert count["mistralai/Mistral-7B-Instruct-v0.3"] == 7_248_023_552  # as Mistral-7B-v0.3
    assert count["deepseek-ai/DeepSeek-R1"] == count["deepseek-ai/DeepSeek-V3"]
    assert count["Qwen/Qwen3-32B-FP8"] == count["Qwen/Qwen3-32B"] == 32_762_123_264
    assert count["Qwen/Qwen3-30B-A3B-FP8"] == count["Qwen/Qwen3-30B-A3B"] == 30_532_122_624
    # derived entries (same architecture as a sibling), against truth.json's sources that name them
    assert count["meta-llama/Llama-3.2-1B"] == 1_235_814_400  # llmfit 'meta-llama/Llama-3.2-1B'
    assert count["meta-llama/Llama-2-13b-chat-hf"] == 13_015_864_320  # model_size_dict
    for entry in ENTRIES:
        if entry.read_from.startswith("same config.json as "):
            assert "except" in entry.read_from or "not checked" in entry.read_from, entry.file
    # quantized repos store their declared format
    assert facts_from_entry(find_entry("Qwen/Qwen3-32B-FP8")).stored_format == "fp8"


def test_pinned_revision_resolves_with_a_note() -> None:
    entry = find_entry("Qwen/Qwen3-8B")
    facts = facts_from_entry(entry, revision="0123abc")
    assert facts.revision == "0123abc" and facts.source == "registry"
    assert "revision 0123abc NOT checked" in facts.source_detail
    r1 = find_entry("deepseek-ai/DeepSeek-R1")
    checked = facts_from_entry(r1, revision="56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad")
    assert "revision 56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad checked" in checked.source_detail
    other = facts_from_entry(r1, revision="f" * 40)
    assert "NOT checked" in other.source_detail and r1.commit in other.source_detail
    assert facts_from_entry(entry, revision="main").source_detail == \
        facts_from_entry(entry).source_detail


def test_close_matches() -> None:
    assert close_matches("Qwen/Qwen2.5-7B-instruct-AWQ")[0] == "Qwen/Qwen2.5-7B-Instruct"
    assert "google/gemma-2-9b-it" in close_matches("google/gemma-2-9b-instruct")
    assert "meta-llama/Llama-3.3-70B-Instruct" in close_matches("llama-3.3-70b-instruct")
    assert close_matches("zzzz/qqqq") == []


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


def test_entry_config_is_a_fresh_copy() -> None:
    """transformers edits nested config values in place (AutoConfig.for_model standardises
    rope_scaling); the cached entries must not change (simulate, then estimate, in a process)."""
    entry = find_entry("deepseek-ai/DeepSeek-V3")
    edited = entry.config
    edited["rope_scaling"]["factor"] = 0
    assert find_entry("deepseek-ai/DeepSeek-V3").config["rope_scaling"]["factor"] == 40
