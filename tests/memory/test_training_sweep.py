"""The pure backward sweep and the training dtypes, against hand arithmetic."""

from __future__ import annotations

import pytest

from gpusizer.memory.training.dtypes import training_dtypes
from gpusizer.memory.training.sweep import SweepPeak, backward_sweep

from .conftest import sheet


def _sweep(**kw):
    args = dict(saved_bytes=[100, 100, 100], kept_bytes=[100, 100, 100], checkpointing=False,
                final_norm_bytes=10, logits_bytes=500, prior_gradients_bytes=0,
                head_gradients_bytes=0, layer_gradients_bytes=20, all_gradients_bytes=60,
                working_bytes=7)
    args.update(kw)
    return backward_sweep(**args)


def test_large_logits_peak_at_the_start():
    # start: 3 × 100 kept + 10 final norm + 500 logits = 810; layer 3: 300 + 20 + 7 = 327
    assert _sweep() == SweepPeak("start (logits gradient)", 310, 500, 0, 0)
    assert _sweep().total_bytes == 810


def test_small_logits_peak_at_the_last_layer():
    # without logits the start holds 310; layer 3 of 3 holds 300 + 20 gradients + 7 working
    # = 327; layer 2 releases layer 3's 100 and adds 20 gradients: 200 + 40 + 7 = 247
    assert _sweep(logits_bytes=0) == SweepPeak("layer 3 of 3", 300, 0, 20, 7)


def test_checkpointing_holds_inputs_and_one_recomputed_layer():
    # kept inputs 10 per layer; layer i holds the inputs below it, its own input and its
    # recomputed 100, and (4 − i) × 20 gradients: layer 3 20 + 110 + 20 + 7 = 157, layer 2
    # 10 + 110 + 40 + 7 = 167, layer 1 0 + 110 + 60 + 7 = 177 (the peak); start 30 + 10 = 40
    peak = _sweep(kept_bytes=[10, 10, 10], checkpointing=True, logits_bytes=0)
    assert peak == SweepPeak("layer 1 of 3", 110, 0, 60, 7)


def test_accumulated_gradients_are_held_throughout():
    # prior gradients 60 at every instant: start 300 + 60 = 360; layer 3 300 + max(60, 20) + 7
    # = 367; layer 2 200 + 60 + 7 = 267
    peak = _sweep(logits_bytes=0, final_norm_bytes=0, prior_gradients_bytes=60)
    assert peak == SweepPeak("layer 3 of 3", 300, 0, 60, 7)


def test_end_when_gradients_outweigh_activations():
    peak = _sweep(saved_bytes=[1, 1, 1], kept_bytes=[1, 1, 1], logits_bytes=0,
                  all_gradients_bytes=10_000)
    assert peak == SweepPeak("end (all gradients)", 0, 0, 10_000, 0)


@pytest.mark.parametrize(("task", "weights", "precision", "expected"), [
    # (trainable, residual, linear output, attention, logits) bytes
    ("lora", "bf16", "pure", (2, 2, 2, 2, 2)),
    ("lora", "bf16", "amp", (4, 2, 2, 2, 2)),
    # prepare_model_for_kbit_training: fp32 residual; bnb linears return fp32 outputs; without
    # autocast attention keeps them and the fp32 lm_head makes fp32 logits
    ("qlora", "nf4", "pure", (2, 4, 4, 4, 4)),
    ("qlora", "nf4", "amp", (4, 4, 4, 2, 2)),
])
def test_training_dtypes(task, weights, precision, expected):
    s = sheet(task=task, weights=weights,
              training={"sequence_length": 8, "microbatch": 1, "precision": precision})
    d = training_dtypes(s, runs=weights, compute_dtype="bf16")
    assert (d.trainable_bytes, d.residual_bytes, d.linear_output_bytes, d.attention_bytes,
            d.logits_bytes) == expected
    assert d.trainable_dtype == ("fp32" if precision == "amp" else "bf16")


def test_sweep_with_recomputed_bytes_and_offload():
    quiet = dict(saved_bytes=[100] * 3, final_norm_bytes=0, logits_bytes=0,
                 layer_gradients_bytes=0, all_gradients_bytes=0, working_bytes=0)
    # selective: layer 3 holds kept[0] + kept[1] + its own kept 50 + recomputed 60
    peak = _sweep(**quiet, kept_bytes=[50, 50, 50], recomputed_bytes=[60, 60, 60])
    assert (peak.at, peak.activations_bytes) == ("layer 3 of 3", 50 + 50 + 50 + 60)
    # offloaded, no prefetch: a layer holds only its own input and what it recomputes
    off = _sweep(**quiet, kept_bytes=[10] * 3, recomputed_bytes=[100] * 3, offloaded=True,
                 forward_gpu_bytes=0)
    assert off.activations_bytes == 110
    # with prefetch (torchtune's side stream) the layer below is back too
    pre = _sweep(**quiet, kept_bytes=[10] * 3, recomputed_bytes=[100] * 3, offloaded=True,
                 forward_gpu_bytes=0, prefetch=True)
    assert pre.activations_bytes == 120
