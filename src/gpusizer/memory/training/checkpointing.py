"""Activation checkpointing per decoder layer: what the forward keeps, what backward recomputes,
and what activation offloading moves to the host.

- full (transformers ``gradient_checkpointing_enable``; torchtune ``ac_mode: full``): a
  checkpointed layer keeps only its input r·T·h and recomputes its saved activations while it
  runs backward;
- selective (torchtune / torchtitan ``checkpoint_wrapper`` around sub-modules): each sub-block
  named in ``modules`` (attention, mlp) keeps only its input r·T·h and recomputes its part; the
  rest of the layer keeps its activations;
- every k: transformers ``activation_checkpointing_enable(every_n_layers=k)``
  (``modeling_utils._set_gradient_checkpointing``, transformers 5.24: ``layer_index % k == 0``,
  layers 1, k + 1, …); torchtune ``torchtune/training/activations.py`` (pytorch/torchtune
  bd2a0fc: a counter from 1, ``_count % every_x_layer == 0``, layers k, 2k, …); the other layers
  keep everything;
- offload: every tensor the forward keeps for backward goes to pinned host memory and comes
  back before its layer's backward. Two rules:
  - with full checkpointing outside torchtune, transformers ``activation_checkpointing_enable(
    offload=True)`` (``modeling_utils._activation_checkpointing_enable``, transformers 5.24:
    ``torch.autograd.graph.save_on_cpu(pin_memory=True)`` around each checkpoint; Unsloth's
    ``Unsloth_Offloaded_Gradient_Checkpointer`` alike): the copies run on the compute stream, so
    nothing waits on the GPU after the forward and a layer's input comes back only when its
    backward unpacks it;
  - otherwise torchtune's ``torchtune/training/_activation_offloading.py``
    ``OffloadActivations`` (TRL's ``activation_offloading`` is the same code): the tensors not
    yet copied out stay on the GPU (``max_fwd_stash_size=5`` tensors: five layer inputs under
    full checkpointing, otherwise bounded here by two layers' kept tensors) and, in backward,
    the next layer's come back ahead on a side stream beside the running layer's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...sheet import CHECKPOINTED_MODULES, Training
from ..activations import LayerActivations

__all__ = ["LayerPlan", "layer_plan", "OFFLOAD_STASH_TENSORS"]

OFFLOAD_STASH_TENSORS = 5
"""torchtune ``OffloadActivations(max_fwd_stash_size=5)``: tensors kept on the GPU until their
copy to the host is done."""


@dataclass(frozen=True)
class LayerPlan:
    """What each decoder layer leaves for backward under the sheet's checkpointing (bytes).

    Attributes:
        mode: ``none``, ``full`` or ``selective``.
        kept_bytes: per layer, what the forward keeps for backward (before offloading).
        recomputed_bytes: per layer, what backward recomputes while that layer runs.
        offloaded_bytes: kept bytes moved to the host (0 without offload), per GPU.
        forward_gpu_bytes: the kept bytes on the GPU at the end of the forward.
        prefetch: offloaded, the next layer's tensors come back while a layer runs backward
            (torchtune's side stream), else only the running layer's are on the GPU.
        text: the plan in words.
    """

    mode: str
    kept_bytes: list[int]
    recomputed_bytes: list[int]
    offloaded_bytes: int
    forward_gpu_bytes: int
    text: str
    prefetch: bool = False


def layer_plan(training: Training, layer: LayerActivations, kinds: list[bool],
               framework: str = "auto") -> LayerPlan:
    """The per-layer plan for ``kinds`` (one entry per decoder layer, True for an MoE layer)
    under ``stack.framework`` (which picks the offload rule, module docstring).

    ``layer`` gives the saved bytes of a dense and of an MoE layer, their sub-blocks' parts and
    the layer input (:func:`~gpusizer.memory.activations.layer_activations`).
    """
    mode, ckpt = training.checkpoint_mode, training.checkpointing
    every = ckpt.every
    kept, recomputed = [], []
    for i, moe in enumerate(kinds):
        saved = layer.moe_saved_bytes if moe else layer.saved_bytes
        # transformers' _set_gradient_checkpointing: layer_index % every_n_layers == 0 (layers
        # 1, k + 1, …); torchtune's counter from 1: _count % every_x_layer == 0 (layers k, 2k, …)
        nth = i + 1 if framework == "torchtune" else i
        wrapped_here = mode != "none" and nth % every == 0
        if not wrapped_here:
            kept.append(saved)
            recomputed.append(0)
            continue
        if mode == "full":
            kept.append(layer.input_bytes)
            recomputed.append(saved)
            continue
        # the sheet's sub-block names, in CHECKPOINTED_MODULES' order: attention, then the MLP
        parts = dict(zip(CHECKPOINTED_MODULES, (
            layer.attention_block_bytes, layer.moe_block_bytes if moe else layer.mlp_block_bytes)))
        wrapped = sum(parts[m] for m in ckpt.modules)
        kept.append(saved - wrapped + layer.input_bytes * len(ckpt.modules))
        recomputed.append(wrapped)
    checkpointed = sum(1 for r in recomputed if r)
    text = {"none": "no checkpointing",
            "full": "checkpointed layer inputs",
            "selective": f"selective checkpointing of {', '.join(ckpt.modules)}"}[mode]
    if mode != "none" and every > 1:
        text += f" every {every} layers ({checkpointed} of {len(kinds)})"
    offloaded = sum(kept) if ckpt.offload else 0
    on_gpu = sum(kept)
    streams = ckpt.offload and (mode != "full" or framework == "torchtune")
    if ckpt.offload and not streams:
        on_gpu = 0
        text += (f"; offloaded to host memory {offloaded} B (save_on_cpu around each "
                 "checkpoint, transformers activation_checkpointing_enable(offload=True))")
    elif ckpt.offload:
        if mode == "full" and every == 1:
            on_gpu = min(OFFLOAD_STASH_TENSORS, len(kept)) * layer.input_bytes
        else:
            on_gpu = min(on_gpu, 2 * max(kept, default=0))
        text += f"; offloaded to host memory {offloaded} B (torchtune OffloadActivations)"
    return LayerPlan(mode, kept, recomputed, offloaded, on_gpu, text, streams)
