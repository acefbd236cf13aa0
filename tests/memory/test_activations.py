"""Ground truth for the training activations: what autograd really saves, counted on the CPU.

A two-layer Llama built from a config (random init, bf16, eager attention — the same tensor ops
on CPU and GPU) runs one forward with the loss under ``torch.autograd.graph.saved_tensors_hooks``;
the bytes of the distinct storages saved for backward (parameters and buffers left out) must
match :func:`layer_activations` per layer + the final norm's fp32 input + the kept fp32
``log_softmax`` within 1 % (the rest: RMSNorm's per-token rsqrt, RoPE's cos/sin, the mask).
"""

from __future__ import annotations

import pytest

from gpusizer.memory.activations import TrainedParts, layer_activations
from gpusizer.model.config import facts_from_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")

CFG = dict(model_type="llama", hidden_size=256, intermediate_size=640, num_hidden_layers=2,
           num_attention_heads=8, num_key_value_heads=2, vocab_size=256,
           max_position_embeddings=512, torch_dtype="bfloat16", tie_word_embeddings=False)
B, S = 2, 32


def _saved_bytes(model) -> int:
    torch.manual_seed(0)
    ids = torch.randint(0, CFG["vocab_size"], (B, S))
    seen: dict[int, int] = {}

    def pack(t):
        st = t.untyped_storage()
        seen[st.data_ptr()] = max(seen.get(st.data_ptr(), 0), st.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, labels=ids)
    fixed = {p.untyped_storage().data_ptr() for p in model.parameters()}
    fixed |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    return sum(n for ptr, n in seen.items() if ptr not in fixed)


def _model(lora: bool):
    torch.manual_seed(0)
    config = transformers.AutoConfig.for_model(**CFG)
    config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    if lora:
        model = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=["q_proj",
                                                                                 "v_proj"]),
                                    autocast_adapter_dtype=False)
        model.enable_input_require_grads()   # what gradient checkpointing with PEFT turns on
    return model.train()


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora-q-v"])
def test_saved_activations_match_autograd(lora):
    facts = facts_from_config(CFG, model_id=None, revision=None, source="path",
                              source_detail="test config")
    parts = (TrainedParts(False, qkv=True, o=False, gate_up=False, down=False, qkv_readers=2)
             if lora else TrainedParts(True, True, True, True, True, True))
    per_layer = layer_activations(facts, batch=B, seq=S, c=2, kernel="eager", parts=parts)
    t, h, v = B * S, CFG["hidden_size"], CFG["vocab_size"]
    final_norm = 4 * t * h + (0 if lora else 2 * 2 * t * h)
    ours = 2 * per_layer.saved_bytes + final_norm + 4 * t * v
    real = _saved_bytes(_model(lora))
    assert abs(ours - real) <= 0.01 * real, (ours, real)
