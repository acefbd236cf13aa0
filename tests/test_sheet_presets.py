"""stack.framework presets (sheet_presets.py, data/framework_presets.yaml): documented defaults
fill unset keys before validation, explicit keys win, `auto` keeps every hash, each value is
cited, and what a stack leaves undocumented is said in a note."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpusizer.errors import SheetError
from gpusizer.sheet import FRAMEWORKS, load_sheet, parse_sheet, sheet_sha256
from gpusizer.sheet_presets import PRESET_KEYS, framework_notes, framework_presets

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BASE = {"model": {"id": "meta-llama/Meta-Llama-3.1-8B"}, "task": "qlora", "weights": "nf4",
        "training": {"sequence_length": 4096, "microbatch": 2}}


def _sheet(framework, **training):
    data = copy.deepcopy(BASE)
    data["training"].update(training)
    data["stack"] = {"framework": framework} if isinstance(framework, str) else framework
    return parse_sheet(data)


def test_every_framework_has_a_row_and_every_value_a_source():
    table = framework_presets()
    assert set(table) == set(FRAMEWORKS) - {"auto"}
    for name, row in table.items():
        assert row["project"]
        assert set(row["keys"]) == set(PRESET_KEYS), name
        for key, entry in row["keys"].items():
            assert ("value" in entry and entry["source"].strip()) or entry["unknown"].strip(), \
                (name, key)


@pytest.mark.parametrize("framework", sorted(set(FRAMEWORKS) - {"auto"}))
def test_every_preset_yields_a_valid_sheet(framework):
    for task, weights in (("qlora", "nf4"), ("lora", "bf16"), ("full", "bf16")):
        data = copy.deepcopy(BASE)
        data.update(task=task, weights=weights, stack={"framework": framework})
        parse_sheet(data)


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.yaml")), ids=lambda p: p.stem)
def test_framework_auto_keeps_the_hash(path):
    if "catalogs" in path.parts or path.name == "cases.yaml":
        pytest.skip("not a sheet")
    from gpusizer.yaml_reader import parse_yaml
    data = parse_yaml(path.read_text())
    before = sheet_sha256(load_sheet(path))
    data["stack"] = {**(data.get("stack") or {}), "framework": "auto"}
    assert sheet_sha256(parse_sheet(data)) == before


def test_defaults_fill_unset_keys_and_the_hash_covers_them():
    s = _sheet("torchtune")
    t = s.training
    assert (t.loss, t.packing, t.checkpoint_mode, t.prepare_kbit_training, s.attention,
            t.optimizer, t.optimizer_impl) == ("chunked", False, "full", False, "sdpa",
                                               "adamw", "fused")
    # the same sheet written out in full hashes the same: the hash covers the resolved keys
    explicit = copy.deepcopy(BASE)
    explicit["training"].update(loss="chunked", gradient_checkpointing=True,
                                prepare_kbit_training=False, optimizer_impl="fused")
    explicit["stack"] = {"framework": "torchtune"}
    assert sheet_sha256(parse_sheet(explicit)) == sheet_sha256(s)
    assert sheet_sha256(s) != sheet_sha256(_sheet("auto"))


def test_explicit_keys_win():
    s = _sheet("unsloth", loss="standard", gradient_checkpointing=False)
    assert s.training.loss == "standard" and s.training.checkpoint_mode == "none"
    assert not s.training.checkpointing.offload      # the group is the sheet's own
    note = framework_notes(s)[0]
    assert "the sheet sets training.loss standard (its default: fused-linear)" in note
    # an optimizer the stack does not default to keeps its own implementation
    assert _sheet("trl-sft", optimizer="paged-adamw-8bit").training.optimizer_impl == "foreach"


def test_unsloth_checkpointing_offloads_layer_inputs():
    t = _sheet("unsloth").training
    assert t.checkpoint_mode == "full" and t.checkpointing.offload


def test_trl_rules_follow_its_version():
    # chunked_nll became SFTConfig's default in 1.7.0 (#5846); prepare_model_for_kbit_training
    # left SFTTrainer in 0.27.0 (#4704)
    assert _sheet({"framework": "trl-sft"}).training.loss == "chunked"
    assert _sheet({"framework": "trl-sft", "trl": "1.6.0"}).training.loss == "standard"
    assert _sheet({"framework": "trl-sft", "trl": "1.6.0"}).training.prepare_kbit_training \
        is False
    assert _sheet({"framework": "trl-sft", "trl": "0.26.2"}).training.prepare_kbit_training \
        is True


def test_prepare_kbit_only_fills_qlora():
    data = copy.deepcopy(BASE)
    data.update(task="lora", weights="bf16", stack={"framework": "axolotl"})
    assert parse_sheet(data).training.prepare_kbit_training is None


def test_unknown_defaults_are_said_not_guessed():
    notes = framework_notes(_sheet("deepspeed"))
    assert "filled where the sheet left them unset: none" in notes[0]
    assert sum("no documented default for" in n for n in notes) == len(PRESET_KEYS)
    assert any(n.startswith("stack.framework unsloth: not sized") for n in
               framework_notes(_sheet("unsloth")))
    assert framework_notes(_sheet("auto")) == []


def test_a_contradiction_after_resolution_is_still_one_line():
    with pytest.raises(SheetError) as e:
        _sheet("trl-sft", checkpointing={"mode": "selective"})
    assert e.value.field == "training.checkpointing.modules"


def test_unsloth_readme_case_falls_by_the_loss_and_offload_and_says_what_is_left():
    """unslothai/unsloth README, "Context length benchmarks": Llama 3.1 8B QLoRA (r 32, all
    linear) fits 78,475 tokens in 24 GB (examples/validation/unsloth-readme-…yaml). As
    transformers + PEFT run it the full-vocabulary loss alone is 120 GB; with Unsloth's
    defaults (fused loss, offloaded checkpoints) it falls to a few tens of GB. It stays above
    24 GB: Unsloth's own Triton kernels (not sized) keep less, which the note says."""
    from gpusizer import api
    from gpusizer.yaml_reader import parse_yaml
    path = EXAMPLES / "validation" / "unsloth-readme-llama31-8b-qlora-24gb-maxctx.yaml"
    data = parse_yaml(path.read_text())
    plain = api.estimate(parse_sheet(data)).result.estimate
    data["training"].pop("gradient_checkpointing")
    data["stack"] = {"framework": "unsloth"}
    unsloth = api.estimate(parse_sheet(data)).result.estimate
    logits = {e: next(i for i in e.items if i.name == "logits").bytes for e in (plain, unsloth)}
    # standard: 12 × T × V fp32 at the start of backward, T = 78475, V = 128256
    assert logits[plain] == 12 * 78475 * 128256
    # Unsloth: 12 chunks of ⌈78475 / 12⌉ = 6540 tokens, (2 + 8) B per logit + grad_inputs
    assert logits[unsloth] == 2 * 78475 * 4096 + 10 * 6540 * 128256
    assert unsloth.training.activation_offload_bytes == 32 * 2 * 78475 * 4096
    assert unsloth.peak_bytes < plain.peak_bytes / 4
    assert unsloth.peak_bytes > 24 * 10**9
    assert any("not sized: Unsloth's own Triton kernels" in n for n in unsloth.note_texts)
