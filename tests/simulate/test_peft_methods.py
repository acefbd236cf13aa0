"""``simulate`` runs every PEFT method through PEFT itself (issue 14, point 3): its trainable
count equals the estimate's arithmetic, and the simulated adapter bytes are those tensors."""

from __future__ import annotations

import pytest

from gpusizer.errors import GpusizerError
from gpusizer.memory.training.peft_methods import PEFT_METHODS, peft_adapters
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import PEFT_METHOD_NAMES, parse_sheet
from gpusizer.simulate.engine import simulate_memory

from .conftest import real_config, tiny_config


@pytest.fixture
def tiny_llama(shared_dir, tmp_path_factory):
    """TinyLlama-1.1B's config cut to 2 layers, hidden 64, 4 heads, 2 KV heads of 16, MLP 128,
    vocab 256 (conftest ``tiny_config``)."""
    import json
    folder = tmp_path_factory.mktemp("peft") / "model"
    folder.mkdir()
    cfg = tiny_config(real_config(shared_dir, "TinyLlama--TinyLlama-1.1B-Chat-v1.0"))
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def _sheet(folder, method, **training):
    options = {"num_virtual_tokens": 4} if PEFT_METHODS[method].prompt else {}
    if method == "boft":
        options = {"boft_block_size": 4}
    tr = {"sequence_length": 32, "microbatch": 1, "peft": method,
          **({"peft_options": options} if options else {}), **training}
    return parse_sheet({"model": {"path": str(folder)}, "task": "lora", "weights": "bf16",
                        "training": tr})


CANNOT = ("loha", "lokr")
"""Methods whose PEFT forward takes a data-dependent branch (simulate/build.py)."""


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("method", [m for m in PEFT_METHOD_NAMES if m not in CANNOT])
def test_simulate_runs_every_method_through_peft(tiny_llama, method):
    sheet = _sheet(tiny_llama, method)
    facts = resolve_facts(sheet)
    result = simulate_memory(sheet, facts)
    ours = peft_adapters(sheet.training, facts).parameters
    if method == "adalora":
        # AdaLoRA's ranknum (one element per adapted module, q and v of 2 layers) is made
        # with requires_grad=False; PEFT's move to the base layer's device re-wraps it as a
        # trainable Parameter (ParameterDict), which a GPU run and the meta-device count do;
        # simulate has one device and skips that move
        ours -= 2 * 2
    assert result.trainable_parameters == ours
    assert any("through PEFT" in n for n in result.notes)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("method", CANNOT)
def test_simulate_says_where_it_cannot(tiny_llama, method):
    sheet = _sheet(tiny_llama, method)
    with pytest.raises(GpusizerError) as e:
        simulate_memory(sheet, resolve_facts(sheet))
    assert e.value.field == "training.peft" and "torch.rand(1)" in str(e.value)
    sheet = _sheet(tiny_llama, "lora", modules_to_save=["lm_head"])
    with pytest.raises(GpusizerError) as e:
        simulate_memory(sheet, resolve_facts(sheet))
    assert e.value.field == "training.modules_to_save"
