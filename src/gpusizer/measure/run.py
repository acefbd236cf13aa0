"""``gpusizer measure``: run the ladder for real, phase by phase, and write the evidence.

Per rank: ``DIR/<run id>-rank<r>.jsonl`` (raw notes, appended and flushed per event); on rank 0:
``DIR/<run id>.json`` (the summary evidence). Each rung loads the model afresh (``load`` is a
phase of every rung, the allocator emptied between rungs), runs its task's phases and checks the
executed dimensions against the plan; the ladder stops at the first violation on any rank.
"""

from __future__ import annotations

import datetime as dt
import gc
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .. import __version__
from ..errors import ArgumentError
from ..memory.items import required_phases
from ..sheet import Sheet, canonical_json, sheet_sha256
from .counters import DeviceCounters
from .distributed import Distributed, init_distributed
from .environment import device_identity, versions
from .evidence_writer import build_evidence, write_evidence
from .faults import Injection, parse_injection
from .ladder import RungPlan, build_ladder, shortfall
from .live_tensors import LiveTensorBytes
from .model_loader import load_config, load_model, preflight
from .nvml import Nvml, open_nvml
from .oom import localize
from .phases import PhaseFailure, PhaseRunner
from .raw_notes import RawNotes
from .runner_inference import run_inference
from .runner_training import prepare_training, run_training

__all__ = ["MeasurementResult", "run_measurement"]


@dataclass(frozen=True)
class MeasurementResult:
    """What a measurement wrote: the evidence (rank 0) and this rank's raw notes."""

    evidence: dict | None
    evidence_path: Path | None
    raw_notes_path: Path
    rank: int


def _run_rung(plan: RungPlan, sheet: Sheet, ctx: "_Context") -> dict:
    phases = PhaseRunner(ctx.notes, ctx.counters, plan.name, ctx.inject)
    record: dict = {"name": plan.name, "planned": dict(plan.dims), "result": "passed",
                    "executed": {}, "failed_phase": None}
    executed: dict = {}
    planned = dict(plan.dims)
    if sheet.task != "inference":
        planned["gradient_accumulation"] = sheet.training.gradient_accumulation
        planned["optimizer_steps"] = 1
    loaded = None
    try:
        def load():
            """Weights, then (training) the adapters / trainable parameters and the DDP wrapper:
            everything that exists before the first forward belongs to the load phase."""
            lm = load_model(sheet, ctx.dist.device, random_weights=ctx.random_weights,
                            base_dir=ctx.base_dir, config=ctx.config)
            lm.runnable = lm.model
            if sheet.task != "inference":
                lm.model = prepare_training(lm.model, sheet)
                lm.runnable = lm.model
                if ctx.dist.active:
                    cuda = ctx.dist.device.type == "cuda"
                    lm.runnable = torch.nn.parallel.DistributedDataParallel(
                        lm.model, device_ids=[ctx.dist.device.index] if cuda else None)
            if ctx.counters.live is not None:
                # safetensors memory-mapped on the CPU are made outside ATen dispatch: count the
                # model's parameters and buffers once loaded (storages already seen are skipped)
                ctx.counters.live.adopt([*lm.model.parameters(), *lm.model.buffers()])
            return lm

        loaded = phases.run("load", load, random_weights=ctx.random_weights)
        ctx.model_info = {"source": loaded.source, "weights": loaded.weights,
                          "dtype": loaded.dtype_name, "compute_dtype": loaded.compute_dtype_name,
                          "parameters": loaded.parameters,
                          "revision": sheet.model.revision}
        if sheet.task == "inference":
            run_inference(loaded.model, sheet, plan.dims, phases, ctx.dist.device, ctx.inject,
                          executed)
        else:
            ctx.model_info["trainable_parameters"] = int(
                sum(p.numel() for p in loaded.model.parameters() if p.requires_grad))
            run_training(loaded.runnable, sheet, plan.dims, phases, ctx.dist.device,
                         loaded.compute_dtype_name, ctx.out / "exports" / plan.name,
                         ctx.inject, executed)
    except PhaseFailure as fail:
        record["result"] = fail.result
        record["failed_phase"] = fail.phase
        record["failure"] = {"message": fail.message, "allocator": fail.allocator}
        if fail.result == "oom":
            record["failure"]["localization"] = localize(fail.phase, sheet).as_json()
    finally:
        loaded = None
        gc.collect()
        if ctx.dist.device.type == "cuda":
            torch.cuda.empty_cache()
    order = [k for k in planned if k in executed] + [k for k in executed if k not in planned]
    record["executed"] = {k: int(executed[k]) for k in order}
    if record["result"] == "passed":
        short = shortfall(record["executed"], planned)
        if short:
            record["result"] = "truncated"
            record["truncation"] = {k: {"executed": got, "planned": want}
                                    for k, (got, want) in short.items()}
    record["phases"] = [dict(pc.as_json(), rank=ctx.dist.rank) for pc in phases.records]
    done = {p["name"] for p in record["phases"]}
    record["phases_missing"] = [p for p in required_phases(sheet) if p not in done]
    return record


@dataclass
class _Context:
    dist: Distributed
    notes: RawNotes
    counters: DeviceCounters
    inject: Injection | None
    random_weights: bool
    base_dir: Path | None
    config: object
    out: Path
    model_info: dict


def _merge_ranks(records: list[dict]) -> dict:
    """One rung over every rank: rank 0's record, every rank's phases, the worst result."""
    order = ["passed", "truncated", "failed", "oom"]
    merged = dict(records[0])
    merged["phases"] = [ph for r in records for ph in r["phases"]]
    worst = max(records, key=lambda r: order.index(r["result"]))
    for key in ("result", "failed_phase", "failure", "truncation"):
        if key in worst:
            merged[key] = worst[key]
    if len(records) > 1:
        merged["ranks"] = [{"rank": i, "result": r["result"], "executed": r["executed"],
                            "failed_phase": r["failed_phase"]} for i, r in enumerate(records)]
    return merged


def run_measurement(sheet: Sheet, out: str | Path, *, random_weights: bool,
                    base_dir: str | Path | None = None, provider: str | None = None,
                    image: str | None = None, offer_id: str | None = None,
                    device: str | None = None, nvml_module=None,
                    inject: str | None = None) -> MeasurementResult:
    """Run the ladder for ``sheet`` and write raw notes and evidence under ``out``.

    Args:
        sheet: the validated workload sheet (fixed: never shortened or simplified).
        out: folder for ``*.jsonl`` raw notes and the ``*.json`` evidence.
        random_weights: exact architecture from config.json, random values in the target dtype.
        base_dir: folder a relative ``model.path`` is read from (the sheet's folder).
        provider, image, offer_id: where the run took place (the evidence scope; compatibility
            counts only in the offer's own provider and image, R4).
        device: force ``"cpu"`` or ``"cuda"`` (default: CUDA when available).
        nvml_module: an NVML binding stand-in (tests); default ``pynvml``.
        inject: a fault ``KIND@WHERE`` for protocol tests (default: ``GPUSIZER_MEASURE_INJECT``).

    Returns:
        :class:`MeasurementResult`. An out-of-memory, a failure or a truncation of the workload
        is recorded in the evidence (the ladder stops there), never raised.

    Raises:
        SheetError: a sheet without an inference or training block (nothing to run).
        ArgumentError: ``out`` exists and is not a folder.
        MeasureUnsupportedError: what this machine or harness cannot run (named field).
        MeasureError: the model could not be read.
    """
    fault = parse_injection(inject)
    rungs = build_ladder(sheet)
    if Path(out).exists() and not Path(out).is_dir():
        raise ArgumentError(f"{str(out)!r} exists and is not a folder; expected a folder for the "
                            "raw notes and the evidence", field="--out", value=str(out))
    config = load_config(sheet, Path(base_dir) if base_dir else None)
    d = init_distributed(sheet, device)
    preflight(sheet, d.device, random_weights=random_weights,
              base_dir=Path(base_dir) if base_dir else None, config=config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run_id = d.broadcast(dt.datetime.now(dt.timezone.utc).strftime("measure-%Y%m%dT%H%M%S%fZ"))
    notes_path = out / f"{run_id}-rank{d.rank}.jsonl"
    nvml: Nvml = open_nvml(nvml_module)
    live = None if d.device.type == "cuda" else LiveTensorBytes()
    # the GPU index recorded with each phase: the rank's CUDA device, or the rank on the CPU
    gpu = d.device.index if d.device.type == "cuda" else d.rank
    counters = DeviceCounters(d.device, gpu, nvml, live)
    identity = device_identity(d.device, nvml)
    env = {"image": image, **versions(nvml), "gpu_name": identity.get("gpu_name"),
           "device_type": d.device.type, "hostname_pid": f"{os.uname().nodename}:{os.getpid()}"}
    sha = sheet_sha256(sheet)
    records: list[dict] = []
    stopped = None
    with RawNotes(notes_path, rank=d.rank) as notes:
        notes.note("run_start", run_id=run_id, sheet_sha256=sha, sheet=canonical_json(sheet),
                   random_weights=random_weights, device=str(d.device), identity=identity,
                   environment=env, world_size=d.world_size, injected_fault=str(fault or "")
                   or None, nvml=nvml.reason or "available",
                   ladder=[{"name": r.name, "dims": r.dims} for r in rungs])
        ctx = _Context(d, notes, counters, fault, random_weights,
                       Path(base_dir) if base_dir else None, config, out, {})
        try:
            if live is not None:
                live.__enter__()
            for plan in rungs:
                notes.note("rung_start", rung=plan.name, planned=plan.dims)
                rec = _run_rung(plan, sheet, ctx)
                notes.note("rung_end", rung=plan.name, result=rec["result"],
                           executed=rec["executed"], failed_phase=rec["failed_phase"],
                           failure=rec.get("failure"), truncation=rec.get("truncation"))
                merged = _merge_ranks(d.gather(rec))
                records.append(merged)
                if merged["result"] != "passed":
                    stopped = {"rung": plan.name, "result": merged["result"],
                               "phase": merged["failed_phase"]}
                    notes.note("ladder_stopped", **stopped,
                               alternatives=(merged.get("failure") or {}).get("localization"))
                    break
        finally:
            if live is not None:
                live.__exit__(None, None, None)
        placement = {"strategy": sheet.placement.strategy, "gpus": sheet.placement.gpus,
                     "world_size": d.world_size, "backend": d.backend,
                     "ranks": d.gather({"rank": d.rank, "device": str(d.device),
                                        "gpu": counters.gpu,
                                        "raw_notes": notes_path.name})}
        doc = path = None
        if d.rank == 0:
            doc = build_evidence(
                sheet_sha256=sha, version=f"gpusizer {__version__}",
                raw_notes=[r["raw_notes"] for r in placement["ranks"]], identity=identity,
                environment=env, provider=provider, offer_id=offer_id,
                model=ctx.model_info or {"source": str(sheet.model.path or sheet.model.id)},
                placement=placement, rungs=records, stopped=stopped,
                injected=str(fault) if fault else None)
            path = write_evidence(doc, out / f"{run_id}.json")
            notes.note("evidence_written", file=path.name)
        notes.note("run_end", stopped_at=stopped)
    d.close()
    return MeasurementResult(doc, path, notes_path, d.rank)
