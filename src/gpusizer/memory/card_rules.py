"""What really runs on a card: attention kernel, dtypes, weight formats (card capabilities).

- Each weight format's record (``gpusizer.formats``) says the compute capability its kernels
  need and, per engine, what runs below it: fp8 needs >= 8.9 (transformers dequantizes to bf16
  at load, vLLM keeps 1-byte weights through its Marlin path), MXFP4 >= 7.5 (dequantized to bf16
  otherwise), bf16 >= 8.0 (fp16 runs instead; the compute dtype follows the same rule), and so
  on. The rule is applied until the format that runs needs nothing more (fp8 on a T4 under
  transformers: bf16, then fp16).
- FlashAttention-2 needs CC >= 8.0 (Dao-AILab/flash-attention README: Ampere, Ada, Hopper);
  ``attention: flash`` on a card below falls back to SDPA. PyTorch SDPA picks flash (fp16/bf16,
  CC >= 8.0, head_dim <= 256) or memory-efficient kernels, neither keeps the S × S matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..formats import weight_format

__all__ = ["CardRules", "card_rules", "describe_card_rules", "NO_CARD", "FLASH_ATTENTION_MIN_CC"]

FLASH_ATTENTION_MIN_CC = (8, 0)
"""FlashAttention-2 and SDPA's flash kernel need sm80+ (flash-attention README; PyTorch
``sdp_utils.cpp`` ``check_flash_attention_hardware_support``)."""


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
        refusal: why the weights cannot run on this card at all, or None.
    """

    card: str | None
    compute_capability: tuple[int, int] | None
    weights: str
    compute_dtype: str
    attention: str
    changes: tuple[str, ...] = ()
    refusal: str | None = None


NO_CARD = "no card given: no card-specific rule (kernel, dtype support) was applied"


def _settle(fmt: str, engine: str, cc: tuple[int, int],
            changes: list[str]) -> tuple[str, str | None]:
    """Apply the records' fallbacks to ``fmt`` until it runs natively or is refused."""
    seen = {fmt}
    while True:
        step = weight_format(fmt).on_card(engine, cc)
        if step.refusal is not None:
            return fmt, step.refusal
        if step.note and step.note not in changes:
            changes.append(step.note)
        if step.runs == fmt or step.runs in seen:
            return step.runs, None
        fmt = step.runs
        seen.add(fmt)


def card_rules(*, card: str | None, compute_capability: tuple[int, int] | None, weights: str,
               compute_dtype: str, attention: str, engine: str = "transformers") -> CardRules:
    """Apply the card's capabilities to the sheet's formats and kernel.

    Without a card (``card=None``), the sheet's choices are kept as they are. A format the card
    cannot run at all comes back with ``refusal`` set (the caller raises).
    """
    if card is None or compute_capability is None:
        return CardRules(card, compute_capability, weights, compute_dtype, attention)
    cc = tuple(compute_capability)
    changes: list[str] = []
    w, refusal = _settle(weights, engine, cc, changes)
    cd, _ = _settle(compute_dtype, engine, cc, changes)
    att = attention
    if att == "flash" and cc < FLASH_ATTENTION_MIN_CC:
        att = "sdpa"
        changes.append(f"FlashAttention-2 needs CC >= 8.0 (card {cc[0]}.{cc[1]}): attention falls "
                       "back to SDPA's memory-efficient kernel")
    return CardRules(card, cc, w, cd, att, tuple(changes), refusal)


def describe_card_rules(rules: CardRules) -> str:
    """One sentence naming the card and what its rules made run (the estimate's note with
    ``--card``; its counterpart without a card is :data:`NO_CARD`)."""
    cc = rules.compute_capability
    shown = f"compute capability {cc[0]}.{cc[1]}" if cc else "compute capability unknown"
    return (f"card {rules.card} ({shown}): weights run as {rules.weights}, compute dtype "
            f"{rules.compute_dtype}, attention kernel {rules.attention}"
            + ("" if rules.changes else "; nothing changed from the sheet"))
