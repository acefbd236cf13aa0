"""Per-sequence states of Mamba and linear-attention layers: bytes per GPU, beside the KV cache.

A state-space or linear-attention layer caches no keys or values: it holds, per sequence and
whatever the length, the last inputs of its causal convolution and one recurrent state.

Sources:
- transformers 5.24 ``cache_utils.LinearAttentionLayer`` (the cache every hybrid of 5.24 uses:
  Mamba-2, Jamba, Qwen3-Next, Falcon-H1, Nemotron-H, Granite 4.0 hybrid): ``conv_states`` is
  ``zeros((*conv_input.shape[:-1], conv_kernel_size))`` in the convolution input's dtype, i.e.
  ``[batch, conv_channels, conv_kernel]`` in the compute dtype (``update_conv_state`` keeps the
  last ``conv_kernel`` columns); ``recurrent_states`` is ``zeros_like`` of the state the scan
  returns.
- The recurrent state's dtype follows the GPU kernel: fp32 for Mamba-2's SSD
  (state-spaces/mamba @ e9594ce ``mamba_ssm/ops/triton/ssd_state_passing.py``
  ``_state_passing_fwd``: ``final_states = torch.empty(..., dtype=torch.float32)``), for
  Mamba-1's selective scan (``csrc/selective_scan/selective_scan.cpp``: ``x`` in the weight
  type, fp32 ``A``; ``selective_scan_interface.py`` ``last_state = x[:, :, -1, 1::2]``) and for
  the gated delta rule (fla-org/flash-linear-attention @ bc3b101 ``fla/ops/common/
  chunk_delta_h.py``: ``final_state = k.new_zeros(N, HV, K, V, dtype=torch.float32)``). The
  torch fallbacks transformers runs without those kernels return fp32 too (``mamba2_chunk_scan``
  and ``torch_chunk_gated_delta_rule`` compute in ``float()``), so simulate's figure is the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.facts import ModelFacts

__all__ = ["StateBytes", "recurrent_state_bytes", "vllm_recurrent_state_bytes",
           "mixer_working_bytes"]

FP32_BYTES = 4


@dataclass(frozen=True)
class StateBytes:
    """The recurrent states of all sequences on one GPU.

    Attributes:
        conv_bytes: the convolution states (bytes).
        state_bytes: the SSM / delta-rule states (bytes).
        description: the formula with this model's numbers.
    """

    conv_bytes: int
    state_bytes: int
    description: str

    @property
    def total_bytes(self) -> int:
        """Both kinds of state together (bytes)."""
        return self.conv_bytes + self.state_bytes


def recurrent_state_bytes(facts: ModelFacts, *, dtype_bytes: int, sequences: int,
                          tp: int = 1, conv_tokens_less: int = 0,
                          served: bool = False) -> StateBytes | None:
    """Bytes of the per-sequence states of the model's Mamba / linear-attention layers.

    Per kind of layer: ``layers × sequences × (conv_channels × (conv_kernel − conv_tokens_less)
    × dtype_bytes + state_elements × state bytes)``, channels and state elements split over
    ``tp`` ranks (heads are sharded).

    Args:
        facts: the model (``facts.architecture.recurrent``).
        dtype_bytes: bytes of the compute dtype (the convolution state's, and a ``"compute"``
            recurrent state's).
        sequences: sequences held at once.
        tp: tensor-parallel ranks.
        conv_tokens_less: columns of the convolution window an engine does not keep (vLLM's
            ``MambaSpec`` keeps ``conv_kernel − 1``; transformers keeps all: 0).
        served: take the recurrent state's dtype in vLLM's pool
            (:attr:`~gpusizer.model.facts.RecurrentState.served_state_dtype`).

    Returns:
        A :class:`StateBytes`, or None when the model has no such layer.
    """
    kinds = facts.architecture.recurrent
    if not kinds:
        return None
    conv = state = 0
    parts = []
    for k in kinds:
        width = k.conv_kernel - conv_tokens_less
        dtype = k.served_state_dtype if served else k.state_dtype
        state_b = FP32_BYTES if dtype == "float32" else dtype_bytes
        channels, elements = k.conv_channels // tp, k.state_elements // tp
        conv += k.layers * sequences * channels * width * dtype_bytes
        state += k.layers * sequences * elements * state_b
        parts.append(f"{k.layers} {k.kind} layer(s) × {sequences} sequence(s) × (conv "
                     f"{channels} channels × {width} × {dtype_bytes} B + state {elements} × "
                     f"{state_b} B)")
    return StateBytes(conv, state, "; ".join(parts) + (f", over {tp} ranks" if tp > 1 else ""))


def vllm_recurrent_state_bytes(facts: ModelFacts, *, dtype_bytes: int, sequences: int,
                               tp: int = 1) -> StateBytes | None:
    """The states vLLM V1 keeps per request: one ``MambaSpec`` page per Mamba / linear-attention
    layer (``mamba_cache_mode`` "none": ``page_size_bytes × (1 + speculative blocks)``, no
    speculation here), each page the conv state ``(conv_kernel − 1) × conv_dim / tp`` and the
    SSM state ``heads / tp × head_dim × d_state`` (gated delta-net: ``v_heads / tp × v_dim ×
    k_dim``), conv in the model dtype and SSM in ``mamba_ssm_cache_dtype`` ("auto": the model
    dtype).

    Source: vllm-project/vllm ``vllm/v1/kv_cache_interface.py`` ``MambaSpec`` (@ 001cabc) and
    ``vllm/model_executor/layers/mamba/mamba_utils.py`` ``MambaStateShapeCalculator``,
    ``MambaStateDtypeCalculator`` (@ 02d7108). Padding of the pages to the attention page size
    (``HybridAttentionMambaModelConfig``) is not counted.
    """
    return recurrent_state_bytes(facts, dtype_bytes=dtype_bytes, sequences=sequences, tp=tp,
                                 conv_tokens_less=1, served=True)


def mixer_working_bytes(facts: ModelFacts, *, batch: int, q_tokens: int, dtype_bytes: int,
                        tp: int = 1) -> tuple[int, str]:
    """Working memory of one Mamba / linear-attention layer's forward under the GPU kernels,
    bytes, and the formula (0, "" for a model without such layers). ``t = batch × q_tokens``,
    ``b`` = ``dtype_bytes``, widths split over ``tp``; the largest kind of mixer counts.

    - Mamba-2 (mamba_ssm ``mamba_chunk_scan_combined``, state-spaces/mamba @ e9594ce
      ``ops/triton/ssd_combined.py`` ``_mamba_chunk_scan_combined_fwd``): the residual and norm
      output ``2h``, the ``in_proj`` output, the conv output, the scan output and the gated norm
      output (``inner`` each) per token in ``b``; per chunk of ``chunk`` tokens ``dt`` and
      ``dA_cumsum`` (heads × chunk, fp32), the chunk states (heads × head_dim × d_state, fp32,
      ``states_in_fp32=True``) and their passed copy (in ``b``), and ``CB`` (groups × chunk²,
      fp32, ``ssd_bmm.py``).
    - Mamba-1 (``selective_scan_cuda.fwd``): ``2h``, the ``in_proj``, ``x_proj`` and ``dt``
      outputs, the conv output and the scan output per token; the scan's running state ``x``
      (inner × ⌈q / 2048⌉ × 2·d_state, fp32, ``csrc/selective_scan/selective_scan.cpp``).
    - gated delta-net (flash-linear-attention @ bc3b101 ``ops/gated_delta_rule/chunk.py``):
      ``2h``, the projections, the conv output and the output per token; the per-chunk states
      ``h`` (``ops/common/chunk_delta_h.py``: ``k.new_empty(B, NT, HV, K, V)``, in ``b``) and the
      intra-chunk ``A`` (value heads × 64 per token, fp32).

    The torch fallbacks transformers runs without those kernels (what a CPU simulation sees)
    materialise more: see the families README for the measured gap.
    """
    best, text = 0, ""
    h = facts.architecture.hidden_size
    b, t = dtype_bytes, batch * q_tokens
    for k in facts.architecture.recurrent:
        inner, conv, width = k.inner // tp, k.conv_channels // tp, k.in_proj_width // tp
        chunks = batch * -(-q_tokens // max(1, k.chunk))
        state = k.state_elements // tp
        if k.kind == "ssd":
            heads, groups = max(1, k.heads // tp), max(1, k.groups // tp)
            per_token = 2 * h + width + conv + 2 * inner
            extra = (chunks * (2 * heads * k.chunk * 4 + state * (4 + b)
                               + groups * k.chunk * k.chunk * 4))
            words = (f"Mamba-2 SSD kernel: {t} × (2·{h} + in_proj {width} + conv {conv} + 2·"
                     f"{inner}) × {b} B + {chunks} chunk(s) × (dt, dA 2·{heads}·{k.chunk}·4 + "
                     f"states {state}·(4 + {b}) + CB {groups}·{k.chunk}²·4) B")
        elif k.kind == "selective_scan":
            per_token = 2 * h + width + conv + inner
            d_state2 = 2 * (k.state_elements // max(1, k.inner))
            extra = chunks * inner * d_state2 * 4
            words = (f"Mamba-1 selective scan: {t} × (2·{h} + projections {width} + conv "
                     f"{conv} + {inner}) × {b} B + running state {chunks}·{inner}·{d_state2}·4 B")
        else:
            heads = max(1, k.heads // tp)
            per_token = 2 * h + width + conv + inner
            extra = chunks * state * b + t * heads * k.chunk * 4
            words = (f"gated delta rule (fla chunk): {t} × (2·{h} + projections {width} + conv "
                     f"{conv} + {inner}) × {b} B + chunk states {chunks}·{state}·{b} B + A "
                     f"{t}·{heads}·{k.chunk}·4 B")
        if q_tokens == 1:
            # one token against the cache: the step kernels (mamba_ssm selective_state_update,
            # causal_conv1d_update, fla fused_recurrent) update the state in place, no chunks
            extra, words = 0, words.split(" + ")[0] + " (one step: states updated in place)"
        size = t * per_token * b + extra
        if size > best:
            best, text = size, words
    return best, text
