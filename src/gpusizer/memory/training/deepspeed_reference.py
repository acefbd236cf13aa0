"""DeepSpeed's own model-state estimators, reproduced exactly, as a labelled reference.

``estimate_zero2_model_states_mem_needs`` (``deepspeed/runtime/zero/stage_1_and_2.py``) and
``estimate_zero3_model_states_mem_needs`` (``deepspeed/runtime/zero/stage3.py``), DeepSpeed 0.19.6
(commit edaa722). With Ψ = total parameters, G = GPUs in all, g = GPUs per node, n = nodes,
f = ``additional_buffer_factor`` (1.5), L = the largest module's own parameters:

- ZeRO-2, offload: GPU 2Ψ; CPU Ψ × max(4G, 16) × f.
- ZeRO-2, no offload: GPU 2Ψ + int(18Ψ / G) (DeepSpeed >= 0.14.3, PR #5099: "2 = params_16bit,
  18 = 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit"); before
  0.14.3: 4Ψ + int(16Ψ / G) — the formula the tables of DeepSpeed's docs
  (``docs/code-docs/source/memory.rst``) were printed with; CPU Ψ × 4g × f.
- ZeRO-3: GPU 4L (+ int(2Ψ / G) with parameters on the GPU, + int(18Ψ / G) with nothing
  offloaded); CPU, with zero.Init: Ψ × 18 / n × f (both offloaded), Ψ × 16 / n × f (optimizer
  only), L × 4g × f (nothing); without zero.Init: Ψ × max(4g, 18 / n or 16 / n) × f, or
  Ψ × 4g × f.

They are not our figure: they cover model states only (no activations, buffers, gathered
layers beyond 4L), and their CPU side carries ``additional_buffer_factor`` — a hidden multiplier
SPEC R5 forbids as a figure of ours. They are printed beside it, labelled, with both numbers.
Python's float arithmetic is kept as DeepSpeed writes it, so the bytes match to the byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...sheet import Sheet
    from ..items import Item

__all__ = ["DeepSpeedReference", "zero2_model_states", "zero3_model_states",
           "deepspeed_reference", "ADDITIONAL_BUFFER_FACTOR", "ZERO2_FORMULA_CHANGED_IN"]

ADDITIONAL_BUFFER_FACTOR = 1.5     # the estimators' default additional_buffer_factor
ZERO2_FORMULA_CHANGED_IN = (0, 14, 3)   # first release with PR #5099 (commit f4cb866)
_SOURCE = ("DeepSpeed 0.19.6 deepspeed/runtime/zero/stage_1_and_2.py "
           "estimate_zero2_model_states_mem_needs, stage3.py "
           "estimate_zero3_model_states_mem_needs")
_MODEL_STATES = ("weights", "quantization_metadata", "lora_adapters", "gradients",
                 "master_weights", "master_gradients", "optimizer_states")


@dataclass(frozen=True)
class DeepSpeedReference:
    """DeepSpeed's estimate for one placement, beside ours (per GPU and per node's CPU).

    Attributes:
        estimator: the DeepSpeed function reproduced.
        gpu_bytes: its per-GPU figure (bytes).
        cpu_bytes: its per-node CPU figure (bytes), additional_buffer_factor included.
        formula: its formula with this sheet's numbers.
        additional_buffer_factor: the factor in ``cpu_bytes`` (1.5).
        ours_model_states_bytes: our per-GPU model states (weights, gradients, master copy,
            optimizer states) at the optimizer step, for comparison.
        difference: why the two differ, in words.
    """

    estimator: str
    gpu_bytes: int
    cpu_bytes: int
    formula: str
    additional_buffer_factor: float
    ours_model_states_bytes: int
    difference: str


def zero2_model_states(total_params: int, num_gpus_per_node: int = 1, num_nodes: int = 1,
                       cpu_offload: bool = True,
                       additional_buffer_factor: float = ADDITIONAL_BUFFER_FACTOR,
                       before_0_14_3: bool = False) -> tuple[int, int]:
    """``(cpu_bytes, gpu_bytes)`` as ``estimate_zero2_model_states_mem_needs`` returns them
    (module docstring: formula and source; ``before_0_14_3`` selects the pre-PR #5099 GPU term).
    """
    total_gpus = num_nodes * num_gpus_per_node
    if cpu_offload:
        gpu_mem = 2 * total_params
        cpu_mem = total_params * max(4 * total_gpus, 16) * additional_buffer_factor
    else:
        if before_0_14_3:
            gpu_mem = 4 * total_params + int(16 * total_params / total_gpus)
        else:
            gpu_mem = 2 * total_params + int(18 * total_params / total_gpus)
        cpu_mem = total_params * 4 * num_gpus_per_node * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem)


def zero3_model_states(total_params: int, largest_layer_params: int, num_gpus_per_node: int = 1,
                       num_nodes: int = 1, cpu_offload: bool = True,
                       cpu_offload_params: bool = True, zero_init: bool = True,
                       additional_buffer_factor: float = ADDITIONAL_BUFFER_FACTOR
                       ) -> tuple[int, int, int]:
    """``(cpu_bytes, gpu_bytes, largest_layer_bytes)`` as
    ``estimate_zero3_model_states_mem_needs`` returns them (module docstring)."""
    total_gpus = num_nodes * num_gpus_per_node
    gpus_factor = 1 / num_nodes
    largest_layer_memory = 4 * largest_layer_params
    per_gpu = num_gpus_per_node
    if cpu_offload:
        if cpu_offload_params:
            gpu_mem = largest_layer_memory
            factor = 18 * gpus_factor if zero_init else max(4 * per_gpu, 18 * gpus_factor)
        else:
            gpu_mem = largest_layer_memory + int(2 * total_params / total_gpus)
            factor = 16 * gpus_factor if zero_init else max(4 * per_gpu, 16 * gpus_factor)
        cpu_mem = total_params * factor * additional_buffer_factor
    else:
        gpu_mem = largest_layer_memory + int(18 * total_params / total_gpus)
        cpu_mem = (largest_layer_params if zero_init else total_params) * 4 * per_gpu \
            * additional_buffer_factor
    return int(cpu_mem), int(gpu_mem), largest_layer_memory


def _version(text: str) -> tuple[int, ...] | None:
    if text == "auto":
        return None
    return tuple(int(p) for p in text.split(".")[:3])


def deepspeed_reference(sheet: Sheet, total_params: int, largest_layer_params: int | None,
                        items: list[Item], full: bool) -> DeepSpeedReference | None:
    """DeepSpeed's estimator for a zero2 / zero3 full fine-tuning sheet (their estimators train
    every parameter with Adam in mixed precision), with our model states beside it; None for
    other sheets, or for zero3 when the largest layer is unknown (a bare count).

    ``largest_layer_params``: the largest module's own parameters (DeepSpeed's
    ``model_to_params``: ``sum(p.numel() for p in m.parameters(recurse=False))``, the largest
    weight matrix for a decoder).
    """
    placement = sheet.placement
    if not full or placement.strategy not in ("zero2", "zero3"):
        return None
    per_node, nodes = placement.gpus // placement.nodes, placement.nodes
    offload = placement.offload != "none"
    ours = sum(it.bytes_in("optimizer_step") or 0 for it in items if it.name in _MODEL_STATES)
    common = (f"Ψ = {total_params}, {per_node} GPU(s) per node × {nodes} node(s), "
              f"additional_buffer_factor {ADDITIONAL_BUFFER_FACTOR}")
    if placement.strategy == "zero2":
        version = _version(getattr(sheet.stack, "deepspeed", "auto"))
        old = version is not None and version < ZERO2_FORMULA_CHANGED_IN
        cpu, gpu = zero2_model_states(total_params, per_node, nodes, offload,
                                      before_0_14_3=old)
        gpu_text = ("2Ψ" if offload else ("4Ψ + int(16Ψ / G)" if old else "2Ψ + int(18Ψ / G)"))
        cpu_text = "Ψ × max(4G, 16) × f" if offload else "Ψ × 4g × f"
        name = "estimate_zero2_model_states_mem_needs"
    else:
        if not largest_layer_params:
            return None
        params = placement.offload == "optimizer+params"
        cpu, gpu, _ = zero3_model_states(total_params, largest_layer_params, per_node, nodes,
                                         offload, params, True)
        gpu_text = "4L" + ("" if params else (" + int(2Ψ / G)" if offload else
                                              " + int(18Ψ / G)"))
        cpu_text = ("Ψ × 18 / n × f" if params else "Ψ × 16 / n × f") if offload \
            else "L × 4g × f"
        common += f", L = {largest_layer_params} (zero_init)"
        name = "estimate_zero3_model_states_mem_needs"
    return DeepSpeedReference(
        estimator=name, gpu_bytes=gpu, cpu_bytes=cpu,
        formula=f"{_SOURCE}: GPU {gpu_text}, CPU {cpu_text}; {common}",
        additional_buffer_factor=ADDITIONAL_BUFFER_FACTOR, ours_model_states_bytes=ours,
        difference=(f"ours {ours} B vs DeepSpeed's {gpu} B per GPU for model states: DeepSpeed "
                    "counts 16 or 18 bytes per parameter of Adam mixed precision whatever the "
                    "sheet's optimizer and precision, no reduce bucket nor gathered layers "
                    "beyond 4L; its CPU figure multiplies by additional_buffer_factor 1.5, a "
                    "hidden multiplier SPEC R5 forbids as a figure of ours (our host RAM is "
                    "memory.host_ram_bytes)"))
