"""Training activations: what autograd saves per decoder layer, the logits, and backward transients.

The accounting follows Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
Transformer Models", §4.1: per layer ``s·b·h·(34 + 5·a·s/h)`` bytes for a 16-bit GPT layer),
re-derived for the module code transformers runs, tensor by tensor, with T = microbatch ×
sequence tokens, c = bytes of the compute dtype, q = heads·head_dim, k = kv_heads·head_dim,
I = intermediate size:

- autograd saves a tensor only when a gradient needs it (``tools/autograd/derivatives.yaml``):
  ``linear(x, W)`` saves ``x`` only when ``W`` is trained, or when a LoRA adapter reads ``x``
  (``lora_A(x)``); ``mul(a, b)`` saves ``a`` for ``b``'s gradient only;
- RMSNorm (transformers ``LlamaRMSNorm``) upcasts: the fp32 copy of its input (4·T·w, kept by
  ``pow`` and ``mul``), the normalized value cast back (c·T·w, kept only when the norm weight is
  trained) and its output (c·T·w, kept by the next linear when that one saves its input);
  ``nn.LayerNorm`` keeps its input (c·T·w) and fp32 mean/rstd;
- SDPA flash / memory-efficient kernels keep q, k, v (after RoPE; GQA without ``repeat_kv`` when
  no padding mask is given), the output and a fp32 log-sum-exp (B·heads·s), no s × s matrix
  (Dao et al. 2022 §3.1); RoPE's ``q·cos + rotate_half(q)·sin`` keeps nothing (cos, sin need no
  gradient); the transposed-contiguous output is a second copy kept by ``o_proj`` when it saves
  its input; eager attention keeps ``repeat_kv`` copies of k and v (q width), the fp32 softmax
  (4·B·heads·s²) and its cast (c·B·heads·s²);
- gated MLP ``down(act(gate(x)) · up(x))``: gate output (kept by the activation), act output and
  up output (kept by the product), the product (kept by ``down`` when it saves its input): 3 or 4
  tensors of c·T·I; two-matrix MLP: the fc output and the activation output;
- MoE with uniform top-k routing (stated): fp32 router softmax (4·T·E), per routed token the
  ``gate_up`` output (2·I_e) and the activation (I_e), the expert output kept by the routing-weight
  product (h), the gathered input (h) and the product (I_e) when experts are trained;
- gradient checkpointing (transformers ``gradient_checkpointing_enable``, one checkpoint per
  decoder layer) keeps only each layer's input (c·T·h) and recomputes one layer at a time in
  backward;
- logits (transformers ``ForCausalLMLoss``): ``lm_head`` output (c·T·V), its fp32 copy (4·T·V)
  and the fp32 ``log_softmax`` kept for backward (4·T·V) in the loss; at the start of backward
  the kept ``log_softmax``, the incoming gradient and the gradient it produces (3 × 4·T·V).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.facts import ModelFacts

__all__ = ["TrainedParts", "LayerActivations", "layer_activations", "logits_bytes",
           "backward_layer_working"]


@dataclass(frozen=True)
class TrainedParts:
    """Which parts of a layer train, or feed a LoRA adapter (their inputs are then saved).

    Attributes:
        full: every parameter trains (full fine-tuning).
        qkv: the q/k/v projections' input is saved (trained or adapted).
        o: the output projection's input is saved.
        gate_up: the MLP's first matrices' input is saved.
        down: the MLP's last matrix input is saved.
        experts: routed experts train or carry adapters.
        qkv_readers / gate_up_readers: LoRA-adapted modules reading the attention-norm and
            MLP-norm outputs. When that output is fp32 (promoted residual stream), autocast makes
            one 16-bit copy per adapted reader and each ``lora_A`` keeps its own.
    """

    full: bool
    qkv: bool
    o: bool
    gate_up: bool
    down: bool
    experts: bool = False
    qkv_readers: int = 1
    gate_up_readers: int = 1


@dataclass(frozen=True)
class LayerActivations:
    """Saved activations of one decoder layer and the per-layer figures around them (bytes).

    Attributes:
        saved_bytes: tensors autograd keeps from this layer for backward (dense layers).
        moe_saved_bytes: the same for an MoE layer (0 without MoE).
        input_bytes: the layer input c·T·h (what gradient checkpointing keeps).
        formula: the terms with this sheet's numbers.
        attention_block_bytes: the part of ``saved_bytes`` the attention sub-block keeps (its
            norm, q/k norms, latents and kernel; a parallel block's shared norm), what selective
            checkpointing of ``attention`` recomputes.
        mlp_block_bytes / moe_block_bytes: the MLP sub-block's part (its norm and the MLP, or
            the MoE layer), of ``saved_bytes`` / ``moe_saved_bytes``.
    """

    saved_bytes: int
    moe_saved_bytes: int
    input_bytes: int
    formula: str
    attention_block_bytes: int = 0
    mlp_block_bytes: int = 0
    moe_block_bytes: int = 0


def _norm(facts: ModelFacts, t: int, width: int, c: int, *, weight_trained: bool,
          output_saved: bool) -> int:
    if facts.architecture.norm == "layer":
        return t * width * c + (t * width * c if output_saved else 0) + 8 * t
    return (4 * t * width + (c * t * width if weight_trained else 0)
            + (c * t * width if output_saved else 0))


def layer_activations(facts: ModelFacts, *, batch: int, seq: int, c: int, kernel: str,
                      parts: TrainedParts, residual_bytes: int | None = None,
                      linear_out_bytes: int | None = None,
                      attention_bytes: int | None = None,
                      masked: bool = False) -> LayerActivations:
    """Bytes autograd saves in one decoder layer for ``batch`` sequences of ``seq`` tokens.

    See the module docstring for each term and its source. MLA (DeepSeek) is counted with its
    per-head q/k width (nope + rope) for q and k and v_head_dim for v, plus the fp32 latent norms.
    ``residual_bytes``: bytes per value of the residual stream (c, or 4 when fp32 embeddings and
    norms promote it, PEFT ``prepare_model_for_kbit_training``). ``linear_out_bytes``: bytes of
    the projections' outputs (bitsandbytes ``Linear4bit``/``Linear8bitLt`` cast their output back
    to the input's dtype, fp32 after that promotion), so the MLP intermediates take that size;
    ``attention_bytes``: bytes of what the attention kernel keeps (the projections' dtype, or c
    when autocast casts the kernel's inputs). ``masked``: SDPA gets a 4-D mask (packed
    sequences, transformers ``masking_utils``): ``use_gqa_in_sdpa`` is then false and
    ``repeat_kv`` expands k and v to q's width before the kernel keeps them.
    """
    arch = facts.architecture
    r = residual_bytes or c
    lo = linear_out_bytes or c
    ab = attention_bytes or c
    t = batch * seq
    h = arch.hidden_size
    heads = arch.num_attention_heads
    if arch.mla is not None:
        m = arch.mla
        q = heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
        k = q
        v = heads * m.v_head_dim
        latent = (m.q_lora_rank or 0) + m.kv_lora_rank
    else:
        q = heads * arch.head_dim
        k = v = arch.num_key_value_heads * arch.head_dim
        latent = 0
    terms = []
    full = parts.full
    # one norm before attention; a second before the MLP unless the block is parallel (Falcon)
    pre_norms = min(arch.norms_per_layer, 2)
    attn_norm = _norm(facts, t, h, c, weight_trained=full, output_saved=parts.qkv)
    mlp_norm = _norm(facts, t, h, c, weight_trained=full, output_saved=parts.gate_up) \
        if pre_norms == 2 else 0
    if r == 4 and not full:   # fp32 norm outputs: one autocast copy per adapted reader
        attn_norm += c * t * h * (max(0, parts.qkv_readers - 1) if parts.qkv else 0)
        if pre_norms == 2 and parts.gate_up:
            mlp_norm += c * t * h * max(0, parts.gate_up_readers - 1)
    extra_norms = max(0, arch.norms_per_layer - 2)   # Gemma 2/3 post-attention / post-MLP norms
    post = extra_norms * _norm(facts, t, h, c, weight_trained=full, output_saved=False)
    norms = attn_norm + mlp_norm + post
    kind = "RMSNorm" if arch.norm == "rms" else "LayerNorm"
    terms.append(f"norms {norms} B ({arch.norms_per_layer} × {kind} on {t}×{h})")
    if arch.qk_norm:
        qkn = 4 * t * (q + k) + (c * t * (q + k) if full else 0)
        norms += qkn
        terms.append(f"q/k norms 4·{t}·({q}+{k}) B")
    if latent:
        lat = t * latent * (4 + c)
        norms += lat
        terms.append(f"MLA latents {t}×{latent}×(4+{c}) B")
    if kernel == "eager":
        rep = q if k < q else k
        attn = ab * t * (q + 2 * rep) + (4 + ab) * batch * heads * seq * seq
        attn += c * t * q if parts.o else 0
        terms.append(f"eager attention {ab}·T·(q + 2·{rep}) + (4 + {ab})·{batch}·{heads}·{seq}² B")
    else:
        if masked and kernel == "sdpa" and arch.mla is None:
            k = v = max(q, k)
            terms.append("packed: 4-D mask, k and v expanded by repeat_kv")
        attn = ab * t * (2 * q + k + v) + 4 * batch * heads * seq
        attn += c * t * q if parts.o else 0
        terms.append(f"attention (flash / memory-efficient) {ab}·{t}·(2·{q} + {k} + {v}) "
                     f"{'+ ' + str(c) + '·' + str(t) + '·' + str(q) + ' ' if parts.o else ''}"
                     f"+ lse 4·{batch}·{heads}·{seq} B")
    mlp = 0
    inter = arch.intermediate_size
    if inter:
        n = 3 if arch.gated_mlp else 1
        mlp = n * lo * t * inter + (c * t * inter if parts.down else 0)
        terms.append(f"MLP {n} × {lo}·{t}·{inter}{' + ' + str(c) + '·' + str(t) + '·' + str(inter) if parts.down else ''} B")
    moe_layer = 0
    if arch.moe is not None:
        e = arch.moe
        ie = e.expert_intermediate_size
        kk = e.experts_per_token
        routed = c * t * kk * (3 * ie + h + ((h + ie) if parts.experts else 0))
        shared = 0
        if e.num_shared_experts:
            shared = (3 * lo + (c if parts.down else 0)) * t * ie * e.num_shared_experts
        router = 4 * t * e.num_experts + (c * t * h if parts.experts else 0)
        moe_layer = routed + shared + router
        terms.append(f"MoE layer: router 4·{t}·{e.num_experts} B + top-{kk} routed tokens × "
                     f"{c}·(3·{ie} + {h}{' + ' + str(h + ie) if parts.experts else ''}) B"
                     + (f" + shared experts {shared} B" if shared else ""))
    dense = norms + attn + mlp
    moe_total = (norms + attn + moe_layer) if arch.moe is not None else 0
    # sub-blocks (selective checkpointing): Gemma's post-norms split one per sub-block
    post_mlp = post // 2 if extra_norms >= 2 else 0
    mlp_side = mlp_norm + post_mlp
    attention_side = norms - mlp_side + attn
    return LayerActivations(dense, moe_total, r * t * h, "; ".join(terms), attention_side,
                            mlp_side + mlp, (mlp_side + moe_layer) if arch.moe else 0)


def logits_bytes(facts: ModelFacts, *, tokens: int, c: int) -> tuple[int, int, str]:
    """Logits memory in training: ``(forward loss peak, backward start, formula)`` in bytes.

    Forward: lm_head output c·T·V + fp32 copy 4·T·V + kept fp32 log_softmax 4·T·V (``c`` = 4:
    the logits are already fp32 and ``.float()`` copies nothing).
    Backward start: kept log_softmax + its incoming gradient + the produced gradient, 3 × 4·T·V
    (transformers ``ForCausalLMLoss`` → ``cross_entropy``; HF Trainer drops the model output,
    hence the 16-bit logits, before ``backward``).
    """
    v = facts.architecture.vocab_size
    copy = 4 if c < 4 else 0
    fwd = tokens * v * (c + copy + 4)
    bwd = tokens * v * 12
    return fwd, bwd, (f"forward {tokens}×{v}×({c} + {copy} + 4) B; backward start 3 × 4 × "
                      f"{tokens}×{v} B")


def backward_layer_working(facts: ModelFacts, *, batch: int, seq: int, c: int, kernel: str,
                           largest_dequantized: int = 0, largest_weight_grad: int = 0,
                           residual_bytes: int | None = None,
                           linear_out_bytes: int | None = None) -> int:
    """Transient bytes while one layer runs backward (beyond what it saved).

    The gradient of the layer output and of the residual (2·c·T·h), the fp32 RMSNorm backward
    (2 × 4·T·h), three I-wide gradients around the gated product (3·c·T·I); eager attention adds
    the softmax gradient in fp32 and its cast ((4 + c)·B·heads·s²); a 4-bit base dequantizes each
    weight to the compute dtype (bitsandbytes ``MatMul4Bit.backward``); a trained weight's
    gradient exists once before it is accumulated.
    """
    arch = facts.architecture
    t = batch * seq
    h = arch.hidden_size
    inter = arch.intermediate_size or (arch.moe.expert_intermediate_size if arch.moe else h)
    out = 2 * (residual_bytes or c) * t * h + 8 * t * h + 3 * (linear_out_bytes or c) * t * inter
    if kernel == "eager":
        out += (4 + c) * batch * arch.num_attention_heads * seq * seq
    return out + largest_dequantized + largest_weight_grad
