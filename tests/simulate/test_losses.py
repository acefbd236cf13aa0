"""The simulated step runs the sheet's loss, checkpointing and packing as the stacks run them,
and agrees with the estimate's formulas (memory/training/loss.py, checkpointing.py); what it
cannot run it refuses by field."""

from __future__ import annotations

import pytest

from gpusizer.memory.estimate import estimate_memory
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import parse_sheet
from gpusizer.simulate.engine import simulate_memory
from gpusizer.simulate.errors import UnsupportedBySimulation

from .conftest import real_config, tiny_config


@pytest.fixture
def llama(shared_dir, write_model):
    """TinyLlama-1.1B's config with 4 layers, hidden 64, vocab 8192 (so the loss weighs)."""
    return write_model(tiny_config(real_config(shared_dir, "TinyLlama--TinyLlama-1.1B-Chat-v1.0"),
                                   layers=4, vocab=8192))


def _both(folder, task="lora", framework=None, **training):
    data = {"model": {"path": str(folder)}, "task": task, "weights": "bf16",
            "training": {"sequence_length": 256, "microbatch": 2, **training}}
    if framework:
        data["stack"] = {"framework": framework}
    sheet = parse_sheet(data)
    facts = resolve_facts(sheet)
    simulated = simulate_memory(sheet, facts).memory
    return ({p.name: p.peak_bytes for p in simulated.phases},
            {p.name: p.peak_bytes for p in estimate_memory(sheet, facts).phases}, simulated)


@pytest.mark.parametrize(("framework", "training"), [
    (None, {"loss": "chunked"}), ("litgpt", {"loss": "chunked"}),
    ("trl-sft", {"loss": "chunked"}),
    (None, {"gradient_checkpointing": True, "checkpointing": {"every": 2}}),
    (None, {"packing": True})])
@pytest.mark.parametrize("task", ["lora", "full"])
def test_simulated_phases_agree_with_the_estimate(llama, task, framework, training):
    simulated, estimated, _ = _both(llama, task, framework, **training)
    for phase in ("forward", "backward", "validation"):
        # within 3 %: the estimate's terms are the kernels' own tensors; the rest is the
        # simulator's small tensors (labels, masks, index vectors)
        assert abs(simulated[phase] - estimated[phase]) <= 0.03 * estimated[phase], phase


def test_chunked_loss_lowers_the_simulated_peak(llama):
    standard, _, _ = _both(llama)
    chunked, _, run = _both(llama, loss="chunked")
    assert chunked["forward"] < standard["forward"]
    assert any(n.startswith("loss chunked: torchtune") for n in run.note_texts)


@pytest.mark.parametrize(("training", "top", "field"), [
    ({"loss": "fused-linear"}, {}, "training.loss"),
    ({"checkpointing": {"mode": "selective", "modules": ["mlp"]}}, {},
     "training.checkpointing.mode"),
    ({"gradient_checkpointing": True, "checkpointing": {"offload": True}}, {},
     "training.checkpointing.offload"),
    ({"packing": True}, {"attention": "flash"}, "training.packing")])
def test_what_cannot_run_is_refused_by_field(llama, training, top, field):
    sheet = parse_sheet({"model": {"path": str(llama)}, "task": "lora", "weights": "bf16",
                         **top, "training": {"sequence_length": 64, "microbatch": 1,
                                             **training}})
    with pytest.raises(UnsupportedBySimulation) as e:
        simulate_memory(sheet, resolve_facts(sheet))
    assert e.value.field == field
