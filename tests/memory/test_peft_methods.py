"""PEFT methods' trainable counts against PEFT itself (issue 14, point 3).

Each model is a bundled registry config (real keys, re-typed with their source) cut to two
decoder layers, built on the meta device with ``AutoModelForCausalLM.from_config`` (no weights,
no GPU) and wrapped by ``peft.get_peft_model`` (peft 0.21.2); PEFT's count of parameters with
``requires_grad`` must equal gpusizer's arithmetic exactly, for every method.
"""

from __future__ import annotations

import pytest

from gpusizer.errors import SheetError
from gpusizer.memory.training.peft_methods import (PEFT_METHODS, Step, peft_adapters,
                                                   peft_config_kwargs)
from gpusizer.sheet import PEFT_METHOD_NAMES, parse_sheet

from .test_lora import FAMILIES, _facts, _two_layers

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

FIVE = ("llama", "qwen2", "mistral", "gemma2", "phi3")

# options a family needs because PEFT 0.21.2 has no default for its model_type
# (peft/utils/constants.py): phi3 is in none of the tables, mistral not in AdaLoRA's
_EXPLICIT = {
    ("phi3", "lora"): {"targets": ["qkv_proj", "o_proj"]},
    ("phi3", "*"): {"target_modules": ["qkv_proj", "down_proj"]},
    ("phi3", "ia3"): {"target_modules": ["qkv_proj", "down_proj"],
                      "feedforward_modules": ["down_proj"]},
    ("mistral", "adalora"): {"target_modules": ["q_proj", "v_proj"]},
}
_PROMPT = {"num_virtual_tokens": 20}


def training_sheet(method: str, family: str = "llama", **options):
    """A lora sheet with ``training.peft: method`` and the family's needed options."""
    training: dict = {"sequence_length": 512, "microbatch": 2, "peft": method}
    lora_family = method in ("lora", "dora", "rslora")
    if lora_family:
        explicit = _EXPLICIT.get((family, "lora"))
        if explicit:
            training["lora"] = explicit
    else:
        opts = dict(_PROMPT) if PEFT_METHODS[method].prompt else {}
        if not PEFT_METHODS[method].prompt:
            opts.update(_EXPLICIT.get((family, method), _EXPLICIT.get((family, "*"), {})))
        opts.update(options)
        training["peft_options"] = opts
    return parse_sheet({"model": {"id": "test/model"}, "task": "lora", "weights": "bf16",
                        "training": training})


def peft_count(cfg: dict, sheet, modules_to_save=None) -> int:
    """PEFT's trainable count for the sheet's method on the 2-layer meta-device model."""
    config = transformers.AutoConfig.for_model(**cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    name, kw = peft_config_kwargs(sheet.training)
    if modules_to_save:
        kw["modules_to_save"] = modules_to_save
    wrapped = peft.get_peft_model(model, getattr(peft, name)(task_type="CAUSAL_LM", **kw))
    return sum(p.numel() for p in wrapped.parameters() if p.requires_grad)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("family", FIVE)
@pytest.mark.parametrize("method", PEFT_METHOD_NAMES)
def test_method_count_equals_peft(method, family):
    cfg = _two_layers(FAMILIES[family])
    sheet = training_sheet(method, family)
    ours = peft_adapters(sheet.training, _facts(cfg)).parameters
    assert ours == peft_count(cfg, sheet)


def test_registry_has_every_sheet_method():
    assert tuple(PEFT_METHODS) == tuple(sorted(PEFT_METHOD_NAMES, key=list(PEFT_METHODS).index))
    assert set(PEFT_METHODS) == set(PEFT_METHOD_NAMES)
