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


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("family", ["llama", "gemma2"])   # gemma2 ties lm_head to embed_tokens
@pytest.mark.parametrize("saved", [["lm_head"], ["embed_tokens", "lm_head"], ["o_proj"]])
@pytest.mark.parametrize("method", ["lora", "prompt"])
def test_modules_to_save_equals_peft(method, family, saved):
    cfg = _two_layers(FAMILIES[family])
    sheet = training_sheet(method, family)
    from gpusizer.memory.training.trainable import saved_modules
    facts = _facts(cfg)
    adapters = peft_adapters(sheet.training, facts)
    ours = adapters.parameters + saved_modules(saved, facts, adapters).parameters
    assert ours == peft_count(cfg, sheet, modules_to_save=saved)


def test_modules_to_save_by_hand_and_refusals():
    from gpusizer.memory.training.trainable import saved_modules
    facts = _facts(_two_layers("meta-llama/Meta-Llama-3.1-8B"))
    adapters = peft_adapters(training_sheet("lora").training, facts)
    # lm_head 128256 × 4096 (Llama 3.1 config: vocab_size, hidden_size)
    assert saved_modules(["lm_head"], facts, adapters).parameters == 128256 * 4096
    with pytest.raises(SheetError, match="adapted by peft lora too"):
        saved_modules(["q_proj"], facts, adapters)     # LoRA's default targets q_proj, v_proj
    with pytest.raises(SheetError) as e:
        saved_modules(["wte"], facts, adapters)
    assert e.value.field == "training.modules_to_save" and "embed_tokens" in str(e.value)


def test_counts_by_hand_llama():
    """Llama 3.1 8B shapes: q 4096 → 4096, v 4096 → 1024, down 14336 → 4096; two layers."""
    facts = _facts(_two_layers("meta-llama/Meta-Llama-3.1-8B"))

    def count(method, **options):
        return peft_adapters(training_sheet(method, **options).training, facts).parameters
    # IA3 on k, v (out 1024 each) and down (feedforward: in 14336)
    assert count("ia3") == 2 * (1024 + 1024 + 14336)
    # VeRA r 256 on q, v: λ_b (out) + λ_d (r)
    assert count("vera") == 2 * ((4096 + 256) + (1024 + 256))
    # OFT block 32 on q, v (in 4096): 128 blocks × 32·31/2
    assert count("oft") == 2 * 2 * 128 * 496
    # LoKr r 8: q 4096 = 64·64 both sides: w1 64×64, w2 64×8 + 8×64; v out 1024 = 32·32
    assert count("lokr") == 2 * ((64 * 64 + 2 * 64 * 8) + (32 * 64 + 32 * 8 + 8 * 64))
    # prefix tuning, GQA: token_dim = head_dim 128 × 8 KV heads; 20 × 2 layers × 2 × 1024
    assert count("prefix") == 20 * 2 * 2 * 1024
    # prompt tuning: 20 × hidden 4096
    assert count("prompt") == 20 * 4096


def _step(tokens=4096, batch=2, c=2, a=4, amp=True, checkpointing=False, base_bytes=2):
    return Step(tokens, batch, c, a, amp, checkpointing, base_bytes)


def test_added_memory_by_hand_llama():
    facts = _facts(_two_layers("meta-llama/Meta-Llama-3.1-8B"))

    def added(method, step=None, **options):
        adapters = peft_adapters(training_sheet(method, **options).training, facts)
        return PEFT_METHODS[method].added(adapters, facts, step or _step())
    T = 4096
    # DoRA on q (out 4096), v (out 1024): base_result + lora_result, 2 × T × out × 2 B, 2
    # layers; + q's weight-norm recomputation: eye 4096² × 4 + BA 4096² × (4 + 2 × 2)
    dora = added("dora")
    assert dora.activations_bytes == 2 * 2 * T * (4096 + 1024) * 2 + 4096 * 4096 * (4 + 8)
    # IA3 (amp): k, v outputs kept (T × 1024 × 2 B each) with their scaling vectors (1024 × 4 B);
    # down (feedforward) keeps the fp32 copy of its input T × 14336 × 4 B and a 14336 × 4 B
    # vector; 2 layers
    assert added("ia3").activations_bytes == 2 * (2 * (T * 1024 * 2 + 1024 * 4)
                                                  + T * 14336 * 4 + 14336 * 4)
    # LoHa: delta q 4096², v 1024 × 4096, × 2 B (LoHa passes its input as it is)
    assert added("loha").activations_bytes == 2 * (4096 + 1024) * 4096 * 2
    # ... one layer's only under gradient checkpointing
    assert added("loha", _step(checkpointing=True)).activations_bytes == \
        (4096 + 1024) * 4096 * 2
    # VeRA r 256: T × (256 + out) × 2 B kept, + (amp) the copies of A and B slices
    # 256 × (in + out) × 2 B per module
    vera = added("vera")
    assert vera.activations_bytes == 2 * (T * ((256 + 4096) + (256 + 1024)) * 2
                                          + 256 * ((4096 + 4096) + (4096 + 1024)) * 2)
    assert vera.buffer_bytes == 256 * (4096 + 4096) * 2
    # AdaLoRA init_r 12: rank allocator 3 × (q 12 × (4096 + 4096 + 1) + v 12 × (4096 + 1024 + 1))
    # × 2 layers × 4 B
    assert added("adalora").state_bytes == 3 * 2 * 12 * ((8192 + 1) + (5120 + 1)) * 4
    # prefix, 20 tokens: K, V over 20 positions, 2 × b 2 × 20 × 8 KV heads × 128 × 2 B × 2 layers
    assert added("prefix").activations_bytes == 2 * 2 * 20 * 8 * 128 * 2 * 2
    # BOFT with several butterfly factors (PEFT's CUDA extension): not derived, so unknown
    # with its reason (never 0)
    boft = added("boft", boft_n_butterfly_factor=2)
    assert boft.activations_bytes is None and "butterfly" in boft.unknown_reason


def test_options_are_checked():
    facts = _facts(_two_layers("meta-llama/Meta-Llama-3.1-8B"))
    with pytest.raises(SheetError) as e:
        peft_adapters(training_sheet("loha", lora_alpha=16).training, facts)
    assert e.value.field == "training.peft_options.lora_alpha" and "r, target_modules" in str(
        e.value)
    sheet = parse_sheet({"model": {"id": "test/model"}, "task": "lora", "weights": "bf16",
                         "training": {"sequence_length": 8, "microbatch": 1, "peft": "prompt"}})
    with pytest.raises(SheetError, match="num_virtual_tokens"):
        peft_adapters(sheet.training, facts)
    with pytest.raises(SheetError) as e:
        peft_adapters(training_sheet("oft", r=8, oft_block_size=32).training, facts)
    assert e.value.field == "training.peft_options.r"
    # AdaLoRA: PEFT 0.21 has no default targets for mistral (peft/utils/constants.py)
    mistral = _facts(_two_layers("mistralai/Mistral-7B-v0.3"))
    with pytest.raises(SheetError, match="no default"):
        peft_adapters(training_sheet("adalora").training, mistral)


def test_sheet_refuses_peft_keys_that_cannot_apply():
    base = {"model": {"id": "test/model"}, "weights": "bf16"}
    with pytest.raises(SheetError, match="not full"):
        parse_sheet({**base, "task": "full", "training": {"sequence_length": 8, "microbatch": 1,
                                                          "peft": "ia3"}})
    with pytest.raises(SheetError, match="cannot merge"):
        parse_sheet({**base, "task": "lora", "training": {
            "sequence_length": 8, "microbatch": 1, "peft": "prefix", "export": "merged",
            "peft_options": {"num_virtual_tokens": 4}}})
    with pytest.raises(SheetError) as e:
        parse_sheet({**base, "task": "lora", "training": {
            "sequence_length": 8, "microbatch": 1, "peft": "vera", "lora": {"rank": 4}}})
    assert e.value.field == "training.lora"


def test_default_peft_keys_leave_the_hash():
    from gpusizer.sheet import sheet_sha256
    base = {"model": {"id": "test/model"}, "task": "lora", "weights": "bf16",
            "training": {"sequence_length": 8, "microbatch": 1}}
    explicit = {**base, "training": {**base["training"], "peft": "lora"}}
    other = {**base, "training": {**base["training"], "peft": "dora"}}
    assert sheet_sha256(parse_sheet(base)) == sheet_sha256(parse_sheet(explicit))
    assert sheet_sha256(parse_sheet(base)) != sheet_sha256(parse_sheet(other))


LLAMA = "meta-llama/Meta-Llama-3.1-8B"


def _estimate(method, **training):
    from gpusizer.memory.estimate import estimate_memory

    from .conftest import facts_of, sheet
    options = {"num_virtual_tokens": 20} if PEFT_METHODS[method].prompt else {}
    tr = {"sequence_length": 1024, "microbatch": 2, "precision": "amp", "peft": method,
          **({"peft_options": options} if options else {}), **training}
    est = estimate_memory(sheet(task="lora", training=tr), facts_of(LLAMA))
    return est, {i.name: i for i in est.items}


@pytest.mark.parametrize("method", PEFT_METHOD_NAMES)
def test_every_method_estimates_full_size(method):
    """The whole 32-layer Llama 3.1 8B: the adapter item is the method's count × 4 B (amp)."""
    _, items = _estimate(method)
    from .conftest import facts_of, sheet
    training = sheet(task="lora", training={
        "sequence_length": 1024, "microbatch": 2, "peft": method,
        **({"peft_options": {"num_virtual_tokens": 20}} if PEFT_METHODS[method].prompt
           else {})}).training
    assert items["lora_adapters"].bytes == peft_adapters(training, facts_of(LLAMA)).parameters * 4
    if method in ("lora", "rslora", "prompt"):
        assert "adapter_activations" not in items


def test_prompt_tokens_reach_the_logits():
    """20 virtual tokens: logits of 2 × (1024 + 20) positions instead of 2 × 1024."""
    _, lora = _estimate("lora")
    _, prompt = _estimate("prompt")
    assert prompt["logits"].bytes * 1024 == lora["logits"].bytes * 1044


def test_modules_to_save_item_and_gradients():
    """lm_head copy 128256 × 4096 trained in fp32 (amp): its item, and its gradient."""
    _, plain = _estimate("lora")
    _, saved = _estimate("lora", modules_to_save=["lm_head"])
    assert saved["modules_to_save"].bytes == 128256 * 4096 * 4
    assert saved["gradients"].bytes - plain["gradients"].bytes == 128256 * 4096 * 4


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("amp", [True, False])
@pytest.mark.parametrize("method,options", [
    ("ia3", {"feedforward_modules": []}), ("ia3", {"feedforward_modules": ["q_proj"]}),
    ("loha", {}), ("lokr", {}), ("oft", {}), ("vera", {"r": 64}), ("adalora", {}),
    ("boft", {})])
def test_added_activations_equal_what_autograd_saves(method, options, amp):
    """One PEFT module (q_proj, 256 → 128, bf16 base) on a 1024-token input, under CPU autocast
    (amp, fp32 adapters) or not (pure, bf16 adapters): the bytes of every tensor autograd saves
    (``torch.autograd.graph.saved_tensors_hooks``), parameters, buffers and the input itself
    left out, equal the method's ``Added.activations_bytes`` for that module, up to the 0–4 B
    scalars PEFT keeps (LoHa's ``scale``, AdaLoRA's ``ranknum + ε``), not counted."""
    from gpusizer.memory.training.peft_methods import (PeftAdapters, ModuleShare,
                                                       resolved_options)
    from gpusizer.model.facts import LinearModule
    IN, OUT, T = 256, 128, 1024

    class One(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = torch.nn.Linear(IN, OUT, bias=False, dtype=torch.bfloat16)

        def forward(self, x):
            return self.q_proj(x)
    sheet = training_sheet(method, target_modules=["q_proj"], **options)
    _, kw = peft_config_kwargs(sheet.training)
    wrapped = peft.get_peft_model(One(), getattr(peft, PEFT_METHODS[method].config_class)(**kw),
                                  autocast_adapter_dtype=amp)
    wrapped.train()
    owned = {t.data_ptr() for t in [*wrapped.parameters(), *wrapped.buffers()]}
    x = torch.randn(T, IN, dtype=torch.bfloat16, requires_grad=True)
    saved: dict[int, int] = {}

    def pack(t):
        if t.data_ptr() not in owned | {x.data_ptr()}:
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            wrapped(x)
    module = LinearModule("self_attn.q_proj", OUT, IN, 1, "attention_in")
    opts = resolved_options(sheet.training)
    if method == "ia3":
        opts["feedforward_modules"] = options["feedforward_modules"]
    from gpusizer.memory.training import peft_methods as pm
    fn = {"ia3": pm._ia3_tensors, "loha": pm._loha_tensors, "lokr": pm._lokr_tensors,
          "oft": pm._oft_tensors, "vera": pm._vera_tensors, "adalora": pm._adalora_tensors,
          "boft": pm._boft_tensors}
    share = ModuleShare(module, fn[method](module, opts),
                        pm._ia3_feedforward(module, opts) if method == "ia3" else method != "vera")
    adapters = PeftAdapters(method, (module,), ("q_proj",), share.parameters, (), "", (share,),
                            0, opts)
    step = Step(T, 1, 2, 4 if amp else 2, amp, False, 2)
    ours = PEFT_METHODS[method].added(adapters, None, step).activations_bytes
    assert 0 <= sum(saved.values()) - ours <= 4


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("family,method", [("falcon", "prefix"), ("mixtral", "ia3"),
                                           ("gpt2", "ia3"), ("gpt2", "prefix")])
def test_families_where_peft_differs_from_the_common_rule(family, method):
    """Falcon's config names no num_key_value_heads (PEFT's prefix is hidden_size wide);
    PEFT's IA3 default for Mixtral names w2, which transformers v5 stacks (PEFT adapts k, v
    only); GPT-2's Conv1D linears (IA3 supports them)."""
    cfg = _two_layers(FAMILIES[family])
    sheet = training_sheet(method, family)
    assert peft_adapters(sheet.training, _facts(cfg)).parameters == peft_count(cfg, sheet)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("method", ["loha", "lokr", "oft", "boft"])
def test_conv1d_refused_like_peft(method):
    cfg = _two_layers(FAMILIES["gpt2"])
    sheet = training_sheet(method, "gpt2")
    with pytest.raises(SheetError, match="Conv1D"):
        peft_adapters(sheet.training, _facts(cfg))
    with pytest.raises(TypeError, match="not supported"):   # PEFT refuses too
        peft_count(cfg, sheet)
