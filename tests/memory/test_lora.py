"""LoRA trainable parameters against PEFT itself (issue: adaptation memory, point 1).

Each model is built from a bundled registry config (real keys, re-typed with their source) cut to
two decoder layers, on the meta device (no weights, no GPU), wrapped with ``peft.get_peft_model``;
PEFT's count of parameters with ``requires_grad`` must equal gpusizer's arithmetic exactly.
"""

from __future__ import annotations

import pytest

from gpusizer.errors import SheetError
from gpusizer.memory.lora import lora_adapters
from gpusizer.model.config import facts_from_config
from gpusizer.model.registry import find_entry

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

# one registry model per family the model reader supports
FAMILIES = {
    "llama": "meta-llama/Meta-Llama-3.1-8B", "mistral": "mistralai/Mistral-7B-v0.3",
    "mixtral": "mistralai/Mixtral-8x22B-v0.1", "qwen2": "Qwen/Qwen2.5-7B",
    "qwen3": "Qwen/Qwen3-8B", "qwen3_moe": "Qwen/Qwen3-30B-A3B", "gemma": "google/gemma-2b-it",
    "gemma2": "google/gemma-2-9b", "gemma3_text": "google/gemma-3-1b-it",
    "phi3": "microsoft/phi-4", "falcon": "tiiuae/falcon-7b-instruct",
    "gpt2": "openai-community/gpt2", "deepseek_v3": "deepseek-ai/DeepSeek-V3",
    "gpt_oss": "openai/gpt-oss-120b",
}


def _two_layers(model_id: str) -> dict:
    cfg = dict(find_entry(model_id).config)
    cfg.pop("quantization_config", None)
    for key in ("num_hidden_layers", "n_layer"):
        if key in cfg:
            cfg[key] = 2
    if "layer_types" in cfg:
        cfg["layer_types"] = cfg["layer_types"][:2]
    if "first_k_dense_replace" in cfg:
        cfg["first_k_dense_replace"] = 1   # one dense and one MoE layer
    return cfg


def _peft_count(cfg: dict, **lora_kw) -> int:
    config = transformers.AutoConfig.for_model(**cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    wrapped = peft.get_peft_model(model, peft.LoraConfig(**lora_kw))
    return sum(p.numel() for p in wrapped.parameters() if p.requires_grad)


def _facts(cfg: dict):
    return facts_from_config(cfg, model_id=None, revision=None, source="path",
                             source_detail="registry config cut to 2 layers")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_all_linear_matches_peft(family):
    cfg = _two_layers(FAMILIES[family])
    ours = lora_adapters(_facts(cfg), 8, "all-linear").parameters
    assert ours == _peft_count(cfg, r=8, target_modules="all-linear")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_families_declare_peft_default_targets(family):
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as table
    declared = _facts(_two_layers(FAMILIES[family])).architecture.peft_default_targets
    # mixtral: PEFT lists it, but get_peft_model refuses transformers v5's Mixtral (see below)
    expected = None if family == "mixtral" else table.get(family)
    assert declared == (tuple(expected) if expected is not None else None)


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma2", "falcon", "gpt2"])
def test_peft_default_targets_match(family):
    cfg = _two_layers(FAMILIES[family])
    ours = lora_adapters(_facts(cfg), 16, "default").parameters
    assert ours == _peft_count(cfg, r=16)


@pytest.mark.parametrize("family", ["mixtral", "qwen3_moe", "deepseek_v3", "gpt_oss"])
def test_stacked_experts_one_adapter_per_expert(family):
    cfg = _two_layers(FAMILIES[family])
    facts = _facts(cfg)
    experts = [m.path for m in facts.architecture.modules if m.experts]
    ours = lora_adapters(facts, 4, experts).parameters
    assert ours == _peft_count(cfg, r=4, target_modules=[], target_parameters=experts)


def test_llama_q_v_by_hand():
    facts = _facts(_two_layers("meta-llama/Meta-Llama-3.1-8B"))
    # q_proj 4096 → 4096, v_proj 4096 → 1024: 2 layers × 8 × ((4096 + 4096) + (4096 + 1024))
    assert lora_adapters(facts, 8, ["q_proj", "v_proj"]).parameters == 2 * 8 * (8192 + 5120)


def test_unknown_target_names_the_field_and_lists_modules():
    facts = _facts(_two_layers("meta-llama/Meta-Llama-3.1-8B"))
    with pytest.raises(SheetError) as e:
        lora_adapters(facts, 8, ["query"])
    assert e.value.field == "training.lora.targets" and "self_attn.q_proj" in str(e.value)


def test_bare_down_proj_does_not_reach_stacked_experts():
    facts = _facts(_two_layers("mistralai/Mixtral-8x22B-v0.1"))
    with pytest.raises(SheetError):
        lora_adapters(facts, 8, ["down_proj"])   # Mixtral v5 has no nn.Linear down_proj


@pytest.mark.parametrize("family", ["phi3", "mixtral"])
def test_family_without_peft_default_asks_for_targets(family):
    cfg = _two_layers(FAMILIES[family])
    with pytest.raises(SheetError, match="no default LoRA targets"):
        lora_adapters(_facts(cfg), 8, "default")
    with pytest.raises(ValueError):   # PEFT refuses too
        _peft_count(cfg, r=8)
