"""The families added for issue 13 point 3 against transformers itself, on 2-layer configs.

Each config is the library's own default for the ``model_type`` (``AutoConfig.for_model``) with
two layers and small widths (hidden 512, 8 heads of 64, 4 KV heads, MLP 1024, vocabulary 32 768:
a real model's vocabulary-to-width ratio, so the logits weigh as they do at full size). Checked:

- parameters: the family's groups sum to ``model.num_parameters()`` of the transformers module
  built on the meta device;
- LoRA: the trainable parameters of ``all-linear`` and of the family's PEFT default (or an explicit
  list where PEFT has none) equal ``peft.get_peft_model`` on that meta model;
- ``simulate`` (fake tensors through the model's own code): the weights item in every phase and
  the prefill KV cache to the byte, and every phase peak within 2 % (inference: 2 × 512-token
  prompts + 16 new tokens; LoRA: 2 × 256 tokens, rank 8).

Two differences come from the simulation, not the family, and are asserted exactly: the rotary
``inv_freq`` / ``original_inv_freq`` buffers (512 B each as the allocator books them), which no
estimate item names; and, for a tied ``lm_head``, ``from_config`` first allocating its own
V × h weight and then tying it, which the load phase sees (a checkpoint load does not).
"""

from __future__ import annotations

import json

import pytest

from gpusizer.memory.lora import lora_adapters
from gpusizer.model.config import facts_from_config
from gpusizer.model.families import FAMILIES
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import parse_sheet

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

HIDDEN, VOCAB = 512, 32768
TINY = dict(num_hidden_layers=2, hidden_size=HIDDEN, intermediate_size=1024,
            num_attention_heads=8, num_key_value_heads=4, vocab_size=VOCAB,
            max_position_embeddings=4096, bos_token_id=1, eos_token_id=2, pad_token_id=0)
PER_FAMILY = {
    "olmo2": {},
    "gpt_neox": {"num_key_value_heads": None},           # multi-head only
    "starcoder2": {"sliding_window": 64},                # a window on every layer
    "cohere2": {"sliding_window": 64, "layer_types": ["sliding_attention", "full_attention"]},
    "glm4": {"head_dim": 64},
    "phimoe": {"num_local_experts": 4, "attention_bias": True, "lm_head_bias": True},
    "glm4_moe": {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 256,
                 "head_dim": 64, "attention_bias": True, "use_qk_norm": True},
    # one chunked (RoPE) layer of 64 tokens and one full (NoPE) layer; layer 1 dense, 0 MoE
    "llama4_text": {"head_dim": 64, "num_local_experts": 4, "intermediate_size_mlp": 1024,
                    "no_rope_layers": [1, 0], "attention_chunk_size": 64, "moe_layers": [0]},
}
"""Keys beyond :data:`TINY` (None: leave the library's default)."""

ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]
LORA_TARGETS = {"phimoe": ATTENTION, "glm4_moe": ATTENTION, "llama4_text": ATTENTION}
"""PEFT's ``all-linear`` on PhiMoE adapts ``mlp.router`` (an ``nn.Linear`` subclass whose forward
returns a tuple), and the LoRA forward then fails (``'tuple' object has no attribute 'dtype'``);
on GLM-4.5 MoE, PEFT's adapters on the stacked experts cannot be moved to the fp32 router's
dtype under fake tensors (``Couldn't swap Linear.weight``). The simulated LoRA steps of both name
the attention projections; their LoRA counts are checked against PEFT on the meta model."""

WEIGHT_GAPS = {"glm4_moe": 2 * 4 * HIDDEN * 1 + 2 * 2 * (512 - 64 * 2)}
"""Simulated − estimated weight bytes the family states: GLM-4.5 MoE's router weight stays fp32
(``_keep_in_fp32_modules_strict``: 4 experts × 512 × 2 B more in its one MoE layer; the
arithmetic, like DeepSeek-V3's, counts it in the weight dtype), and its q/k norms of 64 values
(128 B) are booked as 512 B blocks by the allocator (2 layers × 2 norms)."""

MOE_PREFILL_GAP = 0.12
"""The MoE families' prefill peak, like Mixtral's, is above the estimate by the shared transformers MoE
working-memory rule (one expert's T·k/E tokens at a time), whereas the simulation runs
transformers' ``grouped_mm`` experts path (all T·k routed rows at once): a gap of the MoE rule in
``memory/working_memory.py``, not of the family. :func:`test_moe_prefill_gap_is_mixtral_s` shows
it is Mixtral's on the same shapes."""

INFERENCE = {"inference": {"prompt_tokens": 512, "new_tokens": 16, "concurrency": 2}}
ROTARY_BUFFERS = 2 * 512


def _config(model_type: str) -> tuple[object, dict]:
    kw = {k: v for k, v in {**TINY, **PER_FAMILY[model_type]}.items() if v is not None}
    config = transformers.AutoConfig.for_model(model_type, **kw)
    d = config.to_dict()
    d.pop("dtype", None)
    d.update(model_type=model_type, torch_dtype="bfloat16")
    return config, d


def _facts(d: dict):
    return facts_from_config(d, model_id=None, revision=None, source="path",
                             source_detail="library default config, 2 layers")


def _meta_model(config):
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


def _simulate(folder, task: str, block: dict):
    from gpusizer.simulate.engine import simulate_memory
    sheet = parse_sheet({"model": {"path": str(folder)}, "task": task, "weights": "bf16", **block})
    return simulate_memory(sheet, resolve_facts(sheet))


def test_every_family_runs_under_simulate_here_or_in_tests_simulate():
    from tests.memory.test_vision import VISION_FAMILIES
    from tests.model.test_state_space_families import CONFIGS as STATE_SPACE
    from tests.simulate.conftest import FAMILY_CONFIGS
    assert set(PER_FAMILY) <= set(FAMILIES)
    assert set(FAMILIES) <= (set(PER_FAMILY) | set(FAMILY_CONFIGS) | set(STATE_SPACE)
                             | set(VISION_FAMILIES))


@pytest.mark.parametrize("family", sorted(PER_FAMILY))
def test_parameters_equal_the_meta_model(family):
    config, d = _config(family)
    assert _facts(d).architecture.total_parameters == _meta_model(config).num_parameters()


@pytest.mark.parametrize("family", sorted(PER_FAMILY))
def test_lora_parameters_equal_peft(family):
    config, d = _config(family)
    facts = _facts(d)
    default = facts.architecture.peft_default_targets
    # all-linear on Llama 4 adapts its nn.Linear router too, whose LoRA forward then fails, as
    # on PhiMoE (see LORA_TARGETS): both are checked on attention lists only
    targets = [LORA_TARGETS.get(family, "all-linear"),
               list(default) if default else ["q_proj", "o_proj"] if family != "gpt_neox"
               else ["dense"]]
    for target in targets:
        wrapped = peft.get_peft_model(_meta_model(config),
                                      peft.LoraConfig(r=8, target_modules=target))
        theirs = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
        assert lora_adapters(facts, 8, target).parameters == theirs, target


def test_peft_defaults_are_peft_s_own():
    from peft.utils.constants import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as table
    for family in PER_FAMILY:
        declared = _facts(_config(family)[1]).architecture.peft_default_targets
        assert declared == (tuple(table[family]) if family in table else None), family


NOT_SIMULATED = {"llama4_text"}
"""simulate sets ``_experts_implementation = "grouped_mm"`` on every MoE config, which
``Llama4ForCausalLM`` refuses (``does not support setting experts implementation``): Llama 4's
KV cache is checked against transformers' own cache instead (:func:`test_llama4_kv_cache`)."""


@pytest.mark.parametrize("family", sorted(set(PER_FAMILY) - NOT_SIMULATED))
def test_estimate_equals_simulate(family, tmp_path):
    config, d = _config(family)
    (tmp_path / "config.json").write_text(json.dumps(d))
    arch = _facts(d).architecture
    tied_copy = 2 * VOCAB * HIDDEN if arch.tie_word_embeddings else 0
    lora = {"training": {"sequence_length": 256, "microbatch": 2,
                         "lora": {"rank": 8, "targets": LORA_TARGETS.get(family, "all-linear")}}}
    results = {}
    for task, block in (("inference", INFERENCE), ("lora", lora)):
        r = results[task] = _simulate(tmp_path, task, block)
        weights = {i["phase"]: i for i in r.comparison["items"] if i["item"] == "weights"}
        assert weights and all(i["difference_bytes"] == WEIGHT_GAPS.get(family, 0)
                               for i in weights.values())
        for p in r.comparison["phases"]:
            if p["simulated_peak_bytes"] is None:   # export: not simulated
                continue
            diff = p["difference_bytes"]
            if p["phase"] == "load" and family in WEIGHT_GAPS:
                assert diff == ROTARY_BUFFERS + WEIGHT_GAPS[family] + 512, p  # + fp32 bias buffer
            elif p["phase"] == "load" and tied_copy:
                # the load peak is the moment both V × h copies exist, before any adapter
                w = weights["load"]["simulated_bytes"]
                assert p["simulated_peak_bytes"] == w + ROTARY_BUFFERS + tied_copy, p
            elif p["phase"] == "load":
                assert diff == ROTARY_BUFFERS, p
            elif arch.moe and (task, p["phase"]) == ("inference", "prefill"):
                assert 0 < diff <= MOE_PREFILL_GAP * p["simulated_peak_bytes"], p
            else:
                assert abs(diff) <= 0.02 * p["simulated_peak_bytes"], (task, p)
    kv = next(i for i in results["inference"].comparison["items"]
              if i["item"] == "kv_cache" and i["phase"] == "prefill")
    layers, window = arch.full_attention_layers, arch.sliding_window
    per_token_layer = 2 * arch.num_key_value_heads * arch.head_dim * 2   # K, V in bf16
    # transformers' prefill keeps the whole prompt in sliding layers too (a view until decode)
    assert kv["estimate_bytes"] == 2 * 512 * per_token_layer * arch.num_layers
    if family == "cohere2":
        # the simulation books Cohere 2's prefill cache as temporaries at the phase peak (layer
        # 0's parallel block, before the cache is named); the phase peaks agree (above)
        assert kv["simulated_bytes"] == 0 and layers == 1 and window == 64
    else:
        assert kv["difference_bytes"] == 0


def test_moe_prefill_gap_is_mixtral_s(tmp_path):
    """The PhiMoE prefill gap is the MoE rule's: Mixtral (same shapes, no biases) shows it within
    1 %, so the family adds nothing to it."""
    gaps = {}
    for family in ("phimoe", "mixtral"):
        kw = {k: v for k, v in {**TINY, **PER_FAMILY["phimoe"]}.items() if v is not None}
        if family == "mixtral":
            kw = {k: v for k, v in kw.items() if not k.endswith("bias")}
        d = transformers.AutoConfig.for_model(family, **kw).to_dict()
        d.pop("dtype", None)
        d.update(model_type=family, torch_dtype="bfloat16")
        folder = tmp_path / family
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(d))
        phases = {p["phase"]: p for p in _simulate(folder, "inference",
                                                   INFERENCE).comparison["phases"]}
        gaps[family] = phases["prefill"]["difference_bytes"]
    assert gaps["phimoe"] == pytest.approx(gaps["mixtral"], rel=0.01)


def test_llama4_kv_cache_is_transformers_own():
    """Llama 4's chunked layers are cached as sliding windows of ``attention_chunk_size``: after a
    100-token prompt, transformers' ``DynamicCache`` holds, in the chunked layer, the last 63
    tokens (``DynamicSlidingWindowLayer`` keeps window − 1), and the whole prompt in the full one;
    the estimate's decode rule caps the chunked layer at the 64-token window."""
    from gpusizer.memory.kv_cache import kv_layout
    config, d = _config("llama4_text")
    config.vocab_size = d["vocab_size"] = 2048          # a real forward: keep it small
    config.bos_token_id = config.eos_token_id = config.pad_token_id = 0
    facts = _facts(d)
    arch = facts.architecture
    assert arch.layer_types == ("sliding_attention", "full_attention")
    assert arch.sliding_window == 64
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    cache = transformers.DynamicCache(config=config)
    with torch.no_grad():
        model(input_ids=torch.zeros((1, 100), dtype=torch.long), cache=cache, use_cache=True)
    held = [sum(t.numel() * t.element_size() for t in (layer.keys, layer.values))
            for layer in cache.layers]
    per_token = 2 * arch.num_key_value_heads * arch.head_dim * 2      # K and V, bf16
    assert held == [63 * per_token, 100 * per_token]
    layout = kv_layout(facts, dtype_bytes=2)
    assert layout.tokens_bytes(100) == 64 * per_token + 100 * per_token
