"""Forward and backward items: saved activations, logits, gradients, backward transients.

Per-layer terms come from ``memory/activations.py`` (Korthikanti et al. 2022 §4.1, re-derived for
transformers' module code); :func:`~.sweep.backward_sweep` finds the instant of backward where
they add up to the most, and each item reports its size at that instant.
"""

from __future__ import annotations

from ...formats import weight_format
from ...model.facts import QUANTIZABLE_ROLES, ModelFacts
from ...sheet import Training
from ..activations import LayerActivations, backward_layer_working, layer_activations
from ..items import Item
from .checkpointing import LayerPlan, layer_plan
from .dtypes import TrainingDtypes
from .loss import loss_memory
from .sharding import Sharding, divided_text
from .sweep import SweepPeak, backward_sweep
from .trainable import Trainable

__all__ = ["backward_items"]

_ACTIVATIONS_SOURCE = ("Korthikanti et al. 2022 §4.1, re-derived for transformers' module code "
                       "(gpusizer/memory/activations.py)")


def backward_items(training: Training, facts: ModelFacts, trained: Trainable,
                   dtypes: TrainingDtypes, shards: Sharding, *, runs: str, kernel: str,
                   gradients_bytes: int, framework: str = "auto"
                   ) -> tuple[list[Item], SweepPeak, LayerPlan]:
    """``activations``, ``logits``, ``gradients`` and ``backward_working``, each with its size at
    the backward peak, that peak and the checkpointing plan (``.checkpointing``); the loss
    follows ``training.loss`` under ``framework`` (``.loss``)."""
    # a prompt-learning PEFT method's virtual tokens run through every layer and the logits
    batch, seq = training.microbatch, training.sequence_length + trained.virtual_tokens
    tokens = batch * seq
    packed_mask = training.packing and kernel != "flash"
    layer = layer_activations(facts, batch=batch, seq=seq, c=dtypes.compute_bytes, kernel=kernel,
                              parts=trained.parts, residual_bytes=dtypes.residual_bytes,
                              linear_out_bytes=dtypes.linear_output_bytes,
                              attention_bytes=dtypes.attention_bytes, masked=packed_mask)
    moe_layers = facts.architecture.moe.moe_layers if facts.architecture.moe else 0
    dense_layers = facts.architecture.num_layers - moe_layers
    saved = [layer.saved_bytes] * dense_layers + [layer.moe_saved_bytes] * moe_layers
    plan = layer_plan(training, layer, [False] * dense_layers + [True] * moe_layers, framework)
    checkpointing = plan.mode != "none"
    # packed sequences under sdpa / eager: one B × 1 × s × s bool mask every layer reads until
    # its backward (transformers masking_utils.sdpa_mask: no is_causal skip for packed
    # position_ids), held with the first layer's kept tensors (on the GPU under offload too)
    mask = batch * seq * seq if packed_mask else 0
    offload = training.checkpointing.offload
    kept = list(plan.kept_bytes)
    kept[0] += 0 if offload else mask
    final_norm = _final_norm_bytes(facts, tokens, trained.full, dtypes)
    head_gradients, layer_gradients = _gradient_split(facts, trained.full, dtypes, shards,
                                                      gradients_bytes)
    loss = loss_memory(training.loss, framework, facts, batch=batch, seq=seq,
                       c=dtypes.logits_bytes, head_gradient_bytes=head_gradients)
    forward_logits, backward_logits, logits_text = (loss.forward_bytes, loss.backward_bytes,
                                                    loss.formula)
    dequantized, weight_gradient = _largest_transients(facts, runs, trained.full, dtypes)
    working = backward_layer_working(
        facts, batch=batch, seq=seq, c=dtypes.compute_bytes, kernel=kernel,
        largest_dequantized=dequantized, largest_weight_grad=weight_gradient,
        residual_bytes=dtypes.residual_bytes, linear_out_bytes=dtypes.linear_output_bytes)
    working += mask if offload else 0
    accumulating = training.gradient_accumulation > 1
    peak = backward_sweep(saved_bytes=saved, kept_bytes=kept, checkpointing=checkpointing,
                          final_norm_bytes=final_norm, logits_bytes=backward_logits,
                          prior_gradients_bytes=gradients_bytes if accumulating else 0,
                          head_gradients_bytes=head_gradients,
                          layer_gradients_bytes=layer_gradients,
                          all_gradients_bytes=gradients_bytes, working_bytes=working,
                          recomputed_bytes=plan.recomputed_bytes,
                          offloaded=offload, forward_gpu_bytes=plan.forward_gpu_bytes + mask,
                          prefetch=plan.prefetch)
    return [
        _activations_item(layer, len(saved), plan.forward_gpu_bytes + mask + final_norm,
                          final_norm, plan, peak, mask),
        Item("logits", max(forward_logits, backward_logits), "estimated", ("forward", "backward"),
             loss.source + "; grows as microbatch × sequence × vocab"
             + ("" if loss.logits_materialized else " chunk"), logits_text,
             phase_bytes={"forward": forward_logits, "backward": peak.logits_bytes}),
        _gradients_item(trained, dtypes, shards, gradients_bytes, accumulating, peak),
        Item("backward_working", working, "estimated", ("backward",), _ACTIVATIONS_SOURCE,
             "gradients of one layer's activations (2·c·T·h + 8·T·h + 3·c·T·I)"
             + (f" + dequantized 4-bit weight {dequantized} B" if dequantized else "")
             + (f" + one weight gradient {weight_gradient} B" if weight_gradient else ""),
             phase_bytes={"backward": peak.working_bytes})], peak, plan


def _final_norm_bytes(facts: ModelFacts, tokens: int, full: bool, dtypes: TrainingDtypes) -> int:
    """The final RMSNorm's fp32 input 4·T·h (+ its c·T·h output and normalized value when its
    weight trains); under QLoRA with amp, autocast's c-byte copy of the frozen fp32 lm_head,
    saved for the input gradient."""
    arch = facts.architecture
    width = dtypes.compute_bytes
    out = 4 * tokens * arch.hidden_size + (2 * width * tokens * arch.hidden_size if full else 0)
    if dtypes.prepare_kbit and dtypes.amp and width < 4:
        out += arch.vocab_size * arch.hidden_size * width
    return out


def _gradient_split(facts: ModelFacts, full: bool, dtypes: TrainingDtypes, shards: Sharding,
                    gradients_bytes: int) -> tuple[int, int]:
    """``(lm_head gradient, one layer's gradients)`` in bytes: in full fine-tuning the lm_head
    (V·h) comes first and an untied embedding's last; the rest is spread evenly over layers."""
    arch = facts.architecture
    head = arch.vocab_size * arch.hidden_size if full else 0
    embedding_at_end = head if (full and not arch.tie_word_embeddings) else 0
    width, shard = dtypes.trainable_bytes, shards.gradients
    layers = gradients_bytes - (head + embedding_at_end) * width // shard
    return head * width // shard, max(0, layers) // max(1, arch.num_layers)


def _largest_transients(facts: ModelFacts, runs: str, full: bool,
                        dtypes: TrainingDtypes) -> tuple[int, int]:
    """``(dequantized weight, weight gradient)`` bytes of the largest matrix while a layer runs
    backward: a 4-bit base dequantizes each weight to c (bitsandbytes ``MatMul4Bit.backward``);
    a trained weight's gradient exists once before it is accumulated."""
    params = facts.architecture.params
    dequantized = 0
    if weight_format(runs).backward_dequant_transient:
        dequantized = max((g.largest_matrix for g in params if g.role == "linear"),
                          default=0) * dtypes.compute_bytes
    weight_gradient = (max((g.largest_matrix for g in params if g.role in QUANTIZABLE_ROLES),
                           default=0) * dtypes.trainable_bytes if full else 0)
    return dequantized, weight_gradient


def _activations_item(layer: LayerActivations, layers: int, forward_bytes: int,
                      final_norm: int, plan: LayerPlan, peak: SweepPeak, mask: int) -> Item:
    checkpointing = plan.mode == "full" and plan.text == "checkpointed layer inputs"
    text = (f"{'checkpointed layer inputs ' if checkpointing else ''}{layers} layers; per layer "
            f"{layer.saved_bytes} B saved ({layer.formula})"
            + (f"; inputs {layer.input_bytes} B per layer kept, one layer recomputed in "
               "backward" if checkpointing else "")
            + (f"; {plan.text}, kept {sum(plan.kept_bytes)} B" if plan.mode != "none"
               and not checkpointing or plan.offloaded_bytes else "")
            + f"; final norm {final_norm} B"
            + (f"; packed sequences' B×s² bool mask {mask} B" if mask else ""))
    return Item("activations", forward_bytes, "estimated", ("forward", "backward"),
                _ACTIVATIONS_SOURCE,
                text + f"; backward peak at {peak.at}: {peak.activations_bytes} B",
                phase_bytes={"backward": peak.activations_bytes})


def _gradients_item(trained: Trainable, dtypes: TrainingDtypes, shards: Sharding,
                    gradients_bytes: int, accumulating: bool, peak: SweepPeak) -> Item:
    phases = ("forward", "backward", "optimizer_step") if accumulating else \
        ("backward", "optimizer_step")
    return Item("gradients", gradients_bytes, "estimated", phases,
                "one gradient per trained parameter, in its dtype (torch autograd "
                "AccumulateGrad); freed by zero_grad(set_to_none=True) after the update",
                f"{trained.parameters} × {dtypes.trainable_bytes} B ({dtypes.trainable_dtype})"
                + divided_text(shards.gradients)
                + f"; at the backward peak ({peak.at}) {peak.gradients_bytes} B"
                + ("; gradient accumulation keeps them between microbatches" if accumulating
                   else ""),
                phase_bytes={"backward": peak.gradients_bytes})
