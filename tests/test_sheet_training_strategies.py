"""training.loss, training.packing and training.checkpointing (CONTRACT.md ⟨new⟩): defaults keep
every hash; a contradiction with gradient_checkpointing is a one-line error."""

from __future__ import annotations

import copy
import json

import pytest

from gpusizer.errors import SheetError
from gpusizer.sheet import canonical_json, parse_sheet, sheet_sha256

BASE = {"model": {"id": "x"}, "task": "lora",
        "training": {"sequence_length": 128, "microbatch": 1}}


def _sheet(**training):
    data = copy.deepcopy(BASE)
    data["training"].update(training)
    return parse_sheet(data)


def test_defaults_are_left_out_of_the_hash():
    plain = _sheet()
    written = _sheet(loss="standard", packing=False, checkpointing={})
    assert sheet_sha256(written) == sheet_sha256(plain)
    assert "checkpointing" not in json.loads(canonical_json(plain))["training"]
    assert sheet_sha256(_sheet(loss="chunked")) != sheet_sha256(plain)


def test_gradient_checkpointing_true_is_mode_full():
    assert _sheet(gradient_checkpointing=True).training.checkpoint_mode == "full"
    assert _sheet(checkpointing={"mode": "full"}).training.checkpoint_mode == "full"
    assert _sheet(gradient_checkpointing=True, checkpointing={"mode": "full"}) \
        .training.checkpoint_mode == "full"
    assert _sheet().training.checkpoint_mode == "none"


@pytest.mark.parametrize(("training", "field"), [
    ({"gradient_checkpointing": True, "checkpointing": {"mode": "selective",
                                                        "modules": ["mlp"]}},
     "training.checkpointing.mode"),
    ({"gradient_checkpointing": False, "checkpointing": {"mode": "full"}},
     "training.checkpointing.mode"),
    ({"checkpointing": {"mode": "selective"}}, "training.checkpointing.modules"),
    ({"checkpointing": {"mode": "full", "modules": ["mlp"]}}, "training.checkpointing.modules"),
    ({"checkpointing": {"every": 2}}, "training.checkpointing.every"),
    ({"checkpointing": {"mode": "selective", "modules": ["embeddings"]}},
     "training.checkpointing.modules.0"),
    ({"loss": "fused"}, "training.loss"),
    ({"packing": "yes"}, "training.packing"),
])
def test_bad_values_are_one_line_errors(training, field):
    with pytest.raises(SheetError) as e:
        _sheet(**training)
    assert "\n" not in str(e.value)
    assert e.value.field == field


def test_offload_without_checkpointing_is_allowed():
    t = _sheet(checkpointing={"offload": True}).training
    assert t.checkpoint_mode == "none" and t.checkpointing.offload
