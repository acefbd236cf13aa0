"""The validation phase: a forward without gradients at the validation microbatch, plus the loss."""

from __future__ import annotations

from ...model.facts import ModelFacts
from ...sheet import Training
from ..items import Item
from ..working_memory import forward_working_bytes
from .dtypes import TrainingDtypes
from .loss import validation_loss

__all__ = ["validation_item"]


def validation_item(training: Training, facts: ModelFacts, dtypes: TrainingDtypes, *,
                    runs: str, kernel: str, framework: str = "auto",
                    virtual_tokens: int = 0) -> Item:
    """``validation_working``: the no-grad forward's working memory (``memory/working_memory``)
    at ``validation_microbatch`` (default: the microbatch) + the loss, B·s·V × (fp32 logits
    beyond c: 4 − c when the logits are fp32, else an fp32 copy 4; + log_softmax 4) bytes; a
    chunked loss that never makes the whole logits (``loss.validation_loss``) replaces the
    logits and that loss by its own chunk; ``virtual_tokens``: what a prompt-learning PEFT
    method prepends to each sequence."""
    batch = training.validation_microbatch or training.microbatch
    seq = training.sequence_length + virtual_tokens
    width, logits_width = dtypes.compute_bytes, dtypes.logits_bytes
    chunked = validation_loss(training.loss, framework, facts, batch=batch, seq=seq,
                              c=logits_width)
    forward = forward_working_bytes(facts, batch=batch, q_tokens=seq, kv_tokens=seq,
                                    dtype_bytes=width, kernel=kernel,
                                    logits_positions=0 if chunked else seq,
                                    logits_fp32_copies=0, weights_format=runs)
    if chunked is not None:   # the lm_head runs inside the loss, chunk by chunk
        return Item("validation_working", forward.total_bytes + chunked[0], "estimated",
                    ("validation",), "forward without gradients (gpusizer/memory/"
                    "working_memory.py) + the chunked loss (gpusizer/memory/training/loss.py)",
                    f"validation microbatch {batch}: {forward.formula}; loss {chunked[1]}")
    # the forward above sized the logits in c; fp32 logits add (4 − c) and need no fp32 copy
    per_logit = (logits_width - width) + (4 if logits_width < 4 else 0) + 4
    vocab = facts.architecture.vocab_size
    loss = batch * seq * vocab * per_logit
    return Item("validation_working", forward.total_bytes + loss, "estimated", ("validation",),
                "forward without gradients (gpusizer/memory/working_memory.py) + the loss's fp32 "
                "copy and log_softmax",
                f"validation microbatch {batch}: {forward.formula}; loss {batch}×{seq}×{vocab}×"
                f"{per_logit} B")
