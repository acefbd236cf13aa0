"""What the model actually received: the shapes at its input embedding, per forward call.

The executed dimensions are read here, from the tensors the embedding layer saw, never copied
from the plan: a data path that truncated a prompt or dropped a sequence shows up as a shorter
shape (R9: "record the dimensions actually executed").
"""

from __future__ import annotations

import torch

__all__ = ["InputProbe"]


class InputProbe:
    """Forward pre-hook on the input embedding recording ``(batch, tokens)`` of every call."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls: list[tuple[int, int]] = []
        embedding = model.get_input_embeddings()
        self._handle = embedding.register_forward_pre_hook(self._hook)

    def _hook(self, module, args) -> None:
        ids = args[0]
        self.calls.append((int(ids.shape[0]), int(ids.shape[-1])))

    def take(self) -> list[tuple[int, int]]:
        """The calls since the last ``take``."""
        calls, self.calls = self.calls, []
        return calls

    def remove(self) -> None:
        self._handle.remove()
