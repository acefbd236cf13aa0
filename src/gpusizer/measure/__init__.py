"""The measurement stage (R9, R10, R14): run the workload for real, step by step, and write
evidence. Needs the ``measure`` extra (torch, transformers, peft, nvidia-ml-py); the core never
imports this package — the CLI imports it lazily.

Modules, one idea each: ``ladder`` (rungs), ``model_loader`` (random or safetensors weights),
``runner_inference`` / ``runner_training`` (phases of a rung), ``phases`` (one phase with its
counters), ``counters`` / ``nvml`` / ``live_tensors`` (the counters, each under its name),
``shapes`` (executed dimensions), ``oom`` (first violation, localisation, alternatives),
``raw_notes`` (JSON Lines), ``evidence_writer`` (the summary), ``environment`` (versions),
``distributed`` (torchrun ranks), ``faults`` (injected faults for the protocol tests),
``run`` (the ladder end to end).
"""

from __future__ import annotations

from .run import MeasurementResult, run_measurement

__all__ = ["MeasurementResult", "run_measurement"]
