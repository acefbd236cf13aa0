"""The simulated training step's loss, run as each stack's code runs it (``training.loss``).

The chunk rules are those of ``gpusizer/memory/training/loss.py`` (each cited there):
transformers ``ForCausalLMLoss`` (standard: ``model(input_ids, labels=...)``); torchtune
``LinearCrossEntropyLoss`` (8 token chunks of the decoder output through the lm_head, each
``cross_entropy(logits.float(), reduction="sum")``); LitGPT (the lm_head per 128 positions, the
list kept, ``cross_entropy`` on each chunk as it is); TRL ``chunked_nll`` (256-token chunks,
each ``h.float() @ w.float().t()`` and ``log_softmax`` under ``torch.utils.checkpoint``, with
the entropy metric). ``fused-linear`` (Liger's and Unsloth's Triton kernels) does not run on
fake tensors: :func:`check_loss` refuses it by name. Packed sequences (``training.packing``)
pass two documents per row as ``position_ids``.
"""

from __future__ import annotations

from ..memory.training.loss import (LITGPT_CHUNK_POSITIONS, TORCHTUNE_CHUNKS, TRL_CHUNK_TOKENS,
                                    loss_rule)
from ..sheet import Sheet
from .errors import UnsupportedBySimulation

__all__ = ["training_loss", "check_loss", "loss_note"]


def check_loss(sheet: Sheet) -> None:
    """Refuse what the simulated step cannot run, naming the field.

    Raises:
        UnsupportedBySimulation: ``loss: fused-linear`` (Liger's / Unsloth's Triton kernels do
            not run on fake tensors); selective checkpointing (transformers checkpoints whole
            decoder layers only); ``checkpointing.offload`` (the host copies would be CPU fake
            tensors like every simulated tensor, counted as device memory); ``packing`` with
            ``attention: flash`` (flash-attention's varlen path reads ``cu_seqlens`` from the
            data).
    """
    t = sheet.training
    if t is None:
        return
    if t.loss == "fused-linear":
        raise UnsupportedBySimulation(f"{loss_rule(t.loss, sheet.stack.framework)} is a Triton "
                                      "kernel, which does not run on fake tensors: use gpusizer "
                                      "estimate", field="training.loss", value=t.loss)
    if t.checkpoint_mode == "selective":
        raise UnsupportedBySimulation("transformers checkpoints whole decoder layers "
                                      "(activation_checkpointing_enable); selective "
                                      "checkpointing is not simulated: use gpusizer estimate",
                                      field="training.checkpointing.mode", value="selective")
    if t.checkpointing.offload:
        raise UnsupportedBySimulation("offloaded activations would be CPU fake tensors like every "
                                      "simulated tensor, so the device could not be told from the "
                                      "host: use gpusizer estimate",
                                      field="training.checkpointing.offload", value=True)
    if t.packing and sheet.attention == "flash":
        raise UnsupportedBySimulation("flash-attention's varlen path reads cu_seqlens from the "
                                      "packed position_ids (data the fake tensors do not hold); "
                                      "packing is simulated with sdpa or eager",
                                      field="training.packing", value=True)


def loss_note(loss: str, framework: str) -> str:
    """One line for the notes: the loss rule the simulated step ran."""
    return f"{loss_rule(loss, framework)}, run chunk by chunk as its code does"


def _position_ids(ids):
    """Two documents per row: positions 0…s/2−1, then 0…s − s/2 − 1."""
    import torch
    seq = ids.shape[1]
    half = seq // 2
    row = torch.cat([torch.arange(half), torch.arange(seq - half)])
    return row.unsqueeze(0).expand(ids.shape[0], -1)


def training_loss(model, sheet: Sheet, ids, labels, *, validation: bool = False):
    """``(loss, kept)`` for ``ids`` / ``labels`` (``(batch, seq)`` long tensors): the loss tensor
    and what the stack's loop keeps beside it until ``backward`` is done (LitGPT's ``logits``
    list; else None). ``validation``: the stack's evaluation path (LitGPT ``validate()``: whole
    logits, ``chunk_size=0``)."""
    t = sheet.training
    extra = {"position_ids": _position_ids(ids)} if t.packing else {}
    if t.loss == "standard":
        return model(input_ids=ids, labels=labels, **extra).loss, None
    import torch
    import torch.nn.functional as F
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = base.get_decoder()(input_ids=ids, **extra).last_hidden_state
    head = base.get_output_embeddings()
    hidden, targets = hidden[:, :-1], labels[:, 1:]
    rule = loss_rule(t.loss, sheet.stack.framework)
    count = targets.numel()
    if rule.startswith("torchtune"):
        flat, flat_targets = hidden.reshape(-1, hidden.shape[-1]), targets.reshape(-1)
        total = 0.0
        for h, y in zip(flat.tensor_split(TORCHTUNE_CHUNKS), flat_targets.tensor_split(
                TORCHTUNE_CHUNKS)):
            logits = head(h)   # compute_cross_entropy keeps its local until the loss is made
            total = total + F.cross_entropy(logits.float(), y, reduction="sum")
            del logits
        return total / count, None
    if rule.startswith("LitGPT"):
        size = hidden.shape[1] if validation else LITGPT_CHUNK_POSITIONS
        logits = [head(h) for h in hidden.split(size, dim=1)]
        losses = [F.cross_entropy(x.reshape(-1, x.shape[-1]), y.reshape(-1), reduction="none")
                  for x, y in zip(logits, targets.split(size, dim=1))]
        return torch.cat(losses).sum() / count, logits
    flat, flat_targets = hidden.reshape(-1, hidden.shape[-1]), targets.reshape(-1)
    order = torch.arange(flat.shape[0])      # TRL's valid-first argsort: every label is valid
    flat, flat_targets = flat[order], flat_targets[order]
    weight, total, entropy = head.weight, 0.0, 0.0
    for start in range(0, flat.shape[0], TRL_CHUNK_TOKENS):
        chunk_loss, chunk_entropy = torch.utils.checkpoint.checkpoint(
            _trl_chunk, flat[start:start + TRL_CHUNK_TOKENS], weight,
            flat_targets[start:start + TRL_CHUNK_TOKENS], use_reentrant=False)
        total, entropy = total + chunk_loss, entropy + chunk_entropy
    del entropy   # the metric leaves with the model output, before backward
    return total / count, None


def _trl_chunk(h, w, y):
    """trl/trainer/sft_trainer.py ``_chunk``: fp32 matmul, log_softmax, nll and the entropy
    metric."""
    import torch.nn.functional as F
    logits = h.float() @ w.float().t()
    log_p = F.log_softmax(logits, dim=-1)
    loss = F.nll_loss(log_p, y, reduction="sum")
    entropy = (-(log_p.exp() * log_p).sum(dim=-1)).sum()
    return loss, entropy
