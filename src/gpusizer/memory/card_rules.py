"""What really runs on a card: attention kernel, dtypes, fp8 kernels (card capabilities as facts).

- bf16 needs compute capability >= 8.0 (CUDA Programming Guide, "Arithmetic instructions"; Ampere
  and later); fp8 tensor cores need >= 8.9 (Ada, Hopper); FlashAttention-2 needs >= 8.0
  (Dao-AILab/flash-attention README: Ampere, Ada, Hopper).
- transformers' fine-grained FP8 (DeepSeek-V3 checkpoints) needs CC >= 8.9; otherwise the
  checkpoint is dequantized to bf16 at load (``FineGrainedFP8Config(dequantize=True)``).
- MXFP4 (gpt-oss) needs CC >= 7.5 and Triton >= 3.4, else transformers dequantizes to bf16
  (transformers docs ``quantization/mxfp4.md``).
- PyTorch SDPA picks flash (fp16/bf16, CC >= 8.0, head_dim <= 256) or memory-efficient kernels,
  neither keeps the S × S matrix; ``attention: flash`` on a card below 8.0 falls back to SDPA.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CardRules", "card_rules", "NO_CARD"]


@dataclass(frozen=True)
class CardRules:
    """The GPU rules applied to one sheet on one card.

    Attributes:
        card: canonical card name, or None (no card-specific rule applied).
        compute_capability: (major, minor) or None.
        weights: the weight format that really runs.
        compute_dtype: the dtype activations and the KV cache use.
        attention: the attention kernel that really runs (``eager`` keeps S × S matrices).
        changes: what was changed from the sheet and why (memory sized so; quality to confirm).
    """

    card: str | None
    compute_capability: tuple[int, int] | None
    weights: str
    compute_dtype: str
    attention: str
    changes: tuple[str, ...] = ()


NO_CARD = "no card given: no card-specific rule (kernel, dtype support) was applied"


def card_rules(*, card: str | None, compute_capability: tuple[int, int] | None, weights: str,
               compute_dtype: str, attention: str, fp8_weight_only: str | None = None
               ) -> CardRules:
    """Apply the card's capabilities to the sheet's formats and kernel.

    Without a card (``card=None``), the sheet's choices are kept as they are. ``fp8_weight_only``
    is the engine's note when it keeps fp8 weights on a card without fp8 tensor cores
    (``engines.Engine.fp8_weight_only``); None: the weights are dequantized to bf16 at load.
    """
    if card is None or compute_capability is None:
        return CardRules(card, compute_capability, weights, compute_dtype, attention)
    cc = tuple(compute_capability)
    changes: list[str] = []
    w, cd, att = weights, compute_dtype, attention
    if w == "fp8" and cc < (8, 9):
        if fp8_weight_only is not None:
            changes.append(f"fp8 weights on CC {cc[0]}.{cc[1]} < 8.9: {fp8_weight_only}")
        else:
            w = "bf16"
            changes.append(f"fp8 kernels need CC >= 8.9 (card {cc[0]}.{cc[1]}): transformers "
                           "dequantizes the checkpoint to bf16 at load; memory sized for bf16")
    if "bf16" in (w, cd) and cc < (8, 0):
        changes.append(f"bf16 needs CC >= 8.0 (card {cc[0]}.{cc[1]}): no bf16 tensor cores; "
                       "running fp16 instead changes numerics (quality to confirm)")
        if w == "bf16":
            w = "fp16"
        if cd == "bf16":
            cd = "fp16"
    if att == "flash" and cc < (8, 0):
        att = "sdpa"
        changes.append(f"FlashAttention-2 needs CC >= 8.0 (card {cc[0]}.{cc[1]}): attention falls "
                       "back to SDPA's memory-efficient kernel")
    if w == "mxfp4" and cc < (7, 5):
        changes.append(f"MXFP4 kernels need CC >= 7.5 (transformers docs, quantization/mxfp4; card "
                       f"{cc[0]}.{cc[1]}): the checkpoint is dequantized to bf16 at load")
        w = "bf16" if cc >= (8, 0) else "fp16"
    return CardRules(card, cc, w, cd, att, tuple(changes))
