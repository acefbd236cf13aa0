"""Vision-language models: the vision tower's parameters and the tokens a request's images add.

- Gemma 3 (``Gemma3ForConditionalGeneration``) on a small config of the library's defaults: the
  family's groups sum to the meta model's ``num_parameters()``, with and without SigLIP's
  attention-pooling head;
- the image tokens: Gemma 3's fixed count, and Qwen2.5-VL's ``smart_resize`` rule worked out by
  hand (a 640 × 480 photo → 644 × 476 → 23 × 17 = 391 tokens);
- the KV cache of a request with images holds their tokens too (arithmetic shown).
"""

from __future__ import annotations

import json

import pytest

from gpusizer.errors import SheetError
from gpusizer.memory.estimate import estimate_memory
from gpusizer.memory.vision import smart_resize, tokens_per_image
from gpusizer.model.config import facts_from_config
from gpusizer.model.facts import VisionTower
from gpusizer.pipeline import resolve_facts
from gpusizer.sheet import parse_sheet

TEXT = dict(num_hidden_layers=2, hidden_size=256, intermediate_size=512, num_attention_heads=4,
            num_key_value_heads=2, head_dim=64, vocab_size=1000)
VISION = dict(num_hidden_layers=2, hidden_size=128, intermediate_size=256, num_attention_heads=4,
              image_size=224, patch_size=14)


def _gemma3(**vision):
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model("gemma3", text_config=TEXT,
                                               vision_config={**VISION, **vision},
                                               mm_tokens_per_image=16)
    d = config.to_dict()
    d.pop("dtype", None)
    d.update(model_type="gemma3", torch_dtype="bfloat16")
    return config, d


@pytest.mark.parametrize("head", [True, False])
def test_gemma3_parameters_equal_the_meta_model(head):
    torch = pytest.importorskip("torch")
    import transformers
    config, d = _gemma3(vision_use_head=head)
    facts = facts_from_config(d, model_id=None, revision=None, source="path", source_detail="t")
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert facts.architecture.total_parameters == model.num_parameters()
    assert facts.architecture.vision.tokens_per_image == 16
    assert not facts.unrecognised_keys


@pytest.mark.parametrize("size, resized", [
    # round(480 / 28) × 28 = 476, round(640 / 28) × 28 = 644; 306 544 px within the bounds
    ((480, 640), (476, 644)),
    # 28 × 28 = 784 px < 56 × 56: β = √(3136 / 784) = 2, ⌈28 · 2 / 28⌉ × 28 = 56 per side
    ((28, 28), (56, 56)),
    # 4004 × 2996 > 28 · 28 · 1280 = 1 003 520 px: β = √(4000 · 3000 / 1 003 520) = 3.458,
    # ⌊4000 / β / 28⌋ = 41 → 1148, ⌊3000 / β / 28⌋ = 30 → 840
    ((4000, 3000), (1148, 840)),
])
def test_smart_resize_by_hand(size, resized):
    """transformers' own ``smart_resize`` needs torchvision or PIL (absent here): the expected
    sides are worked out in the comments from its formula."""
    assert smart_resize(*size, factor=28, min_pixels=56 * 56, max_pixels=28 * 28 * 1280) == \
        resized


def test_qwen_grid_tokens_of_a_photo():
    qwen = VisionTower(0, "grid")        # Qwen2.5-VL: patch 14, merge 2, default pixel bounds
    # 640 × 480: round(480 / 28) = 17 → 476, round(640 / 28) = 23 → 644; 17 × 23 tokens
    assert tokens_per_image(qwen, width=640, height=480) == 17 * 23
    # 3840 × 2160 (4K) exceeds max_pixels 28·28·1280: β = √(3840 · 2160 / 1 003 520) = 2.875,
    # ⌊3840 / β / 28⌋ = 47 → 1316, ⌊2160 / β / 28⌋ = 26 → 728: 47 × 26 tokens
    assert tokens_per_image(qwen, width=3840, height=2160) == 47 * 26


def test_images_add_their_tokens_to_the_kv_cache(tmp_path):
    _, d = _gemma3(vision_use_head=False)
    (tmp_path / "config.json").write_text(json.dumps(d))

    def kv(images):
        sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference",
                             "weights": "bf16", "inference": {
                                 "prompt_tokens": 100, "new_tokens": 20, "concurrency": 1,
                                 "images": images}})
        return estimate_memory(sheet, resolve_facts(sheet)).item("kv_cache").bytes

    none = kv({"per_request": 0})
    two = kv({"per_request": 2, "width": 640, "height": 480})
    # Gemma 3 text: both layers slide (window 4096 > 152 tokens) or are full: K and V of 2 KV
    # heads × 64 in bf16 per layer and token, 2 layers
    per_token = 2 * 2 * 2 * 64 * 2
    assert none == 120 * per_token
    assert two == (120 + 2 * 16) * per_token


def test_images_for_a_text_model_are_refused(tmp_path):
    from tests.model.test_state_space_families import _config
    _, d = _config("mamba2")
    (tmp_path / "config.json").write_text(json.dumps(d))
    sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference", "weights": "bf16",
                         "inference": {"prompt_tokens": 10, "new_tokens": 2,
                                       "images": {"per_request": 1, "width": 8, "height": 8}}})
    with pytest.raises(SheetError, match="no vision tower"):
        estimate_memory(sheet, resolve_facts(sheet))


QWEN_TEXT = dict(num_hidden_layers=2, hidden_size=256, intermediate_size=512, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=1000, bos_token_id=1, eos_token_id=2,
                 rope_parameters={"rope_type": "default", "mrope_section": [8, 12, 12],
                                  "rope_theta": 1e6})
QWEN_VISION = dict(depth=2, hidden_size=128, intermediate_size=256, num_heads=4,
                   out_hidden_size=256, fullatt_block_indexes=[1])


def _qwen2_5_vl(hub_layout: bool):
    """The config, and its config.json: nested ``text_config`` (transformers v5's own dump) or
    the text keys at the top level (how the Hub's Qwen2.5-VL config.json states them)."""
    transformers = pytest.importorskip("transformers")
    config = transformers.AutoConfig.for_model("qwen2_5_vl", text_config=QWEN_TEXT,
                                               vision_config=QWEN_VISION)
    d = config.to_dict()
    d.pop("dtype", None)
    if hub_layout:
        text = d.pop("text_config")
        text.pop("model_type", None)
        d = {**text, **d}
    d.update(model_type="qwen2_5_vl", torch_dtype="bfloat16")
    return config, d


@pytest.mark.parametrize("hub_layout", [False, True])
def test_qwen2_5_vl_parameters_equal_the_meta_model(hub_layout):
    torch = pytest.importorskip("torch")
    import transformers
    config, d = _qwen2_5_vl(hub_layout)
    facts = facts_from_config(d, model_id=None, revision=None, source="path", source_detail="t")
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config)
    assert facts.architecture.total_parameters == model.num_parameters()
    assert facts.architecture.vision.rule == "grid"


def test_qwen2_5_vl_photo_tokens_in_the_kv_cache(tmp_path):
    _, d = _qwen2_5_vl(hub_layout=True)
    (tmp_path / "config.json").write_text(json.dumps(d))
    sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference", "weights": "bf16",
                         "inference": {"prompt_tokens": 100, "new_tokens": 20,
                                       "images": {"per_request": 2, "width": 640,
                                                  "height": 480}}})
    kv = estimate_memory(sheet, resolve_facts(sheet)).item("kv_cache")
    # 2 layers × K, V × 2 KV heads × head_dim 64 × 2 B per token; 2 photos of 17 × 23 tokens
    assert kv.bytes == (120 + 2 * 391) * 2 * 2 * 2 * 64 * 2
    assert "391 tokens per image" in kv.formula


VISION_FAMILIES = {"gemma3": lambda: _gemma3(vision_use_head=False),
                   "qwen2_5_vl": lambda: _qwen2_5_vl(hub_layout=True)}
"""The vision-language families, with the configs these tests check them on."""


@pytest.mark.parametrize("family", sorted(VISION_FAMILIES))
def test_simulate_weights_are_the_towers_too(family, tmp_path):
    """simulate builds the whole image-text-to-text model: its weights item is every parameter
    (text and vision) in bf16, booked in 512-byte blocks, and the estimate's is 2 B each."""
    torch = pytest.importorskip("torch")
    import transformers

    from gpusizer.simulate.engine import simulate_memory
    config, d = VISION_FAMILIES[family]()
    (tmp_path / "config.json").write_text(json.dumps(d))
    sheet = parse_sheet({"model": {"path": str(tmp_path)}, "task": "inference", "weights": "bf16",
                         "inference": {"prompt_tokens": 32, "new_tokens": 4}})
    r = simulate_memory(sheet, resolve_facts(sheet))
    with torch.device("meta"):
        model = transformers.AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    params = list(model.parameters())
    booked = sum(-(-p.numel() * p.element_size() // 512) * 512 for p in params)
    w = next(i for i in r.comparison["items"] if i["item"] == "weights" and i["phase"] == "load")
    assert w["simulated_bytes"] == booked
    assert w["estimate_bytes"] == 2 * sum(p.numel() for p in params)
