"""The optimizer a GPU run would build, on fake tensors.

- ``adamw``, ``paged-adamw-32bit``: ``torch.optim.AdamW`` with the GPU implementation flag
  (:func:`gpu_rules.optimizer_flags`: foreach by default, fused when the sheet says); the paged
  variant has the same 32-bit states.
- ``sgd`` / ``sgd-momentum``: ``torch.optim.SGD`` (momentum 0.9 keeps one buffer per parameter).
- ``adafactor``: ``torch.optim.Adafactor`` (factored row/column second moments).
- ``adamw-8bit`` / ``paged-adamw-8bit``: bitsandbytes' update runs in one CUDA kernel without
  PyTorch temporaries, so its memory is its states, modelled by their byte size
  (:class:`EightBitStates`).
"""

from __future__ import annotations

__all__ = ["MIN_8BIT_SIZE", "BNB_BLOCK", "make_optimizer", "EightBitStates"]

MIN_8BIT_SIZE = 4096
"""bitsandbytes ``min_8bit_size``: smaller tensors keep fp32 states (bitsandbytes/optim/optimizer.py
``Optimizer2State.init_state``)."""

BNB_BLOCK = 256
"""Values per absmax block of blockwise 8-bit states (``blocks = ⌈n / 256⌉``, same file)."""


def make_optimizer(name: str, params: list, impl: str):
    """The optimizer for ``params`` (trainable parameters), built as a GPU run builds it."""
    import torch

    from .gpu_rules import optimizer_flags
    flags = optimizer_flags(impl)
    if name in ("adamw", "paged-adamw-32bit"):
        return torch.optim.AdamW(params, lr=1e-5, **flags)
    if name in ("adamw-8bit", "paged-adamw-8bit"):
        return EightBitStates(params)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, foreach=flags.get("foreach", False))
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=flags.get("foreach", False))
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2, foreach=flags.get("foreach", False))
    raise ValueError(name)


class EightBitStates:
    """bitsandbytes AdamW 8-bit states by byte size (no update arithmetic: it runs in a kernel).

    Per parameter of n values: n ≥ 4096 → two uint8 states of n bytes + two fp32 absmax of
    ⌈n/256⌉ values; smaller → two fp32 states of n values; plus the two 256-value fp32 quantile
    maps shared by all (``fill_qmap``).
    """

    def __init__(self, params: list) -> None:
        self.params = [p for p in params]
        self.state: dict = {}

    def step(self) -> None:
        import torch
        if not self.state:
            self.state["qmap"] = {"dynamic": torch.zeros(256, dtype=torch.float32),
                                  "udynamic": torch.zeros(256, dtype=torch.float32)}
        for p in self.params:
            if p.grad is None or p in self.state:
                continue
            n = p.numel()
            if n < MIN_8BIT_SIZE:
                self.state[p] = {"state1": torch.zeros(n, dtype=torch.float32),
                                 "state2": torch.zeros(n, dtype=torch.float32)}
            else:
                blocks = -(-n // BNB_BLOCK)
                self.state[p] = {"state1": torch.zeros(n, dtype=torch.uint8),
                                 "state2": torch.zeros(n, dtype=torch.uint8),
                                 "absmax1": torch.zeros(blocks, dtype=torch.float32),
                                 "absmax2": torch.zeros(blocks, dtype=torch.float32)}

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None
