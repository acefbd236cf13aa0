"""The JSON document of CONTRACT.md ("JSON output"): the single source every renderer reads."""

from __future__ import annotations

from typing import Any

import pydantic_core

from .. import SCHEMA_VERSION, __version__
from ..memory.engines import PoolSplit
from ..memory.fit_rule import FitJudgement
from ..memory.items import Item, MemoryEstimate, Phase
from ..model.facts import ModelFacts
from ..decision.campaign import Campaign
from ..decision.results import EstimateResult, PlanResult
from ..decision.throughput import measured_decode_tokens_per_s, offer_throughput
from ..decision.verdict import judgement_of
from ..sheet import Sheet
from ..stack import applied_versions

__all__ = ["campaign_dict", "memory_dict", "model_dict", "pool_dict", "estimate_document", "plan_document",
           "dumps", "POOL_ALIAS"]

REGISTRY_NOTE = "gpusizer bundled registry (src/gpusizer/data/registry), version " + __version__
POOL_ALIAS = "vllm"
"""The pool block's former key (CONTRACT.md): the same content as ``pool``, until
``schema_version`` 3."""


def _item(it: Item) -> dict[str, Any]:
    d: dict[str, Any] = {"name": it.name, "bytes": it.bytes, "provenance": it.provenance,
                         "phases": list(it.phases), "source": it.source, "formula": it.formula,
                         "non_torch": it.non_torch, "holder": it.holder}
    if it.bytes is None:
        d["unknown_reason"] = it.unknown_reason
    if it.phase_bytes:
        d["phase_bytes"] = dict(it.phase_bytes)
    return d


def _pair(iv: tuple[int, int] | None) -> list[int] | None:
    """An interval as CONTRACT.md writes it: ``[low, high]`` (integers), or null."""
    return None if iv is None else [iv[0], iv[1]]


def _intervals(est: MemoryEstimate) -> dict[str, Any]:
    """The peaks' intervals (CONTRACT.md): null until calibrated, or when the figure is unknown.
    ``reserved_peak_interval_bytes`` stays null while no reserved peak is predicted."""
    return {"peak_interval_bytes": _pair(est.peak_interval_bytes),
            "reserved_peak_interval_bytes": _pair(getattr(est, "reserved_peak_interval_bytes",
                                                          None)),
            "device_peak_interval_bytes": _pair(est.device_peak_interval_bytes)}


def _phase(p: Phase) -> dict[str, Any]:
    return {"name": p.name, "peak_bytes": p.peak_bytes,
            "reserved_peak_bytes": p.reserved_peak_bytes,
            "device_peak_bytes": p.device_peak_bytes,
            "peak_interval_bytes": _pair(p.peak_interval_bytes),
            "reserved_peak_interval_bytes": _pair(p.reserved_peak_interval_bytes),
            "device_peak_interval_bytes": _pair(p.device_peak_interval_bytes),
            "known_bytes": p.known_bytes, "items": list(p.items),
            "unknown_items": list(p.unknown_items)}


def pool_dict(v: PoolSplit | None) -> dict[str, Any] | None:
    """The ``pool`` block (and its alias ``vllm``): a serving engine's split per GPU, or None."""
    if v is None:
        return None
    return {"engine": v.engine, "budget_bytes": v.budget_bytes,
            "kv_cache_bytes": v.kv_cache_bytes, "kv_tokens": v.kv_tokens,
            "max_concurrency": v.max_concurrency, "total_bytes": v.total_bytes,
            "total_source": v.total_source, "weights_bytes": v.weights_bytes,
            "activation_bytes": v.activation_bytes, "non_torch_bytes": v.non_torch_bytes,
            "block_bytes": v.block_bytes, "kv_blocks": v.kv_blocks, "starts": v.starts,
            "sequences_held": v.sequences_held, "tokens_per_sequence": v.tokens_per_sequence,
            "required_sequences": v.required_sequences,
            "required_kv_bytes": v.required_kv_bytes, "command": v.command,
            "log_lines": list(v.log_lines), "settings": dict(v.settings)}


def _pool_blocks(v: PoolSplit | None) -> dict[str, Any]:
    """``pool`` and its alias, with equal content."""
    block = pool_dict(v)
    return {"pool": block, POOL_ALIAS: None if block is None else dict(block)}


def memory_dict(est: MemoryEstimate) -> dict[str, Any]:
    """The ``memory`` object: every figure per GPU under the placement."""
    return {
        "per_gpu": True, "gpus": est.gpus, "card": est.card,
        "weights_format": est.weights_format, "stored_format": est.stored_format,
        "weights_bytes": est.weights_bytes, "reserve_bytes": est.reserve_bytes,
        "envelope_bytes": est.envelope_bytes, "peak_bytes": est.peak_bytes,
        "reserved_peak_bytes": est.reserved_peak_bytes,
        "device_peak_bytes": est.device_peak_bytes, **_intervals(est),
        "conservative_envelope_bytes": est.conservative_envelope_bytes,
        "lower_bound_bytes": est.lower_bound_bytes,
        "lower_bound_covers": est.lower_bound_covers,
        "host_ram_bytes": est.host_ram_bytes, "host_ram_formula": est.host_ram_formula,
        "items": [_item(i) for i in est.items], "phases": [_phase(p) for p in est.phases],
        **_pool_blocks(est.pool), "training": _training(est), "notes": list(est.note_texts),
    }


def _training(est: MemoryEstimate) -> dict[str, Any] | None:
    t = est.training
    if t is None:
        return None
    return {"trainable_parameters": t.trainable_parameters, "trainable_dtype": t.trainable_dtype,
            "lora_targets": list(t.lora_targets),
            "tokens_per_microbatch": t.tokens_per_microbatch,
            "tokens_per_update": t.tokens_per_update, "backward_peak_at": t.backward_peak_at,
            "export_bytes": t.export_bytes, "attention_kernel": t.kernel, "loss": t.loss,
            "activation_offload_bytes": t.activation_offload_bytes,
            "placement": _sharding(t.placement), "host_bytes_per_gpu": t.host_bytes_per_gpu,
            "deepspeed_reference": _deepspeed(t.deepspeed_reference)}


def _sharding(p) -> dict[str, Any] | None:
    """How the training state is divided (``memory.training.sharding``)."""
    if p is None:
        return None
    return {"strategy": p.strategy, "gpus": p.gpus, "nodes": p.nodes, "shard_group": p.group,
            "parameters_divisor": p.parameters, "gradients_divisor": p.gradients,
            "states_divisor": p.states, "fsdp_sharding": p.fsdp_sharding if p.strategy == "fsdp"
            else None, "offload": p.offload}


def _deepspeed(ref) -> dict[str, Any] | None:
    """DeepSpeed's own estimator beside our figure (``memory.training.deepspeed_reference``)."""
    if ref is None:
        return None
    return {"estimator": ref.estimator, "gpu_bytes": ref.gpu_bytes, "cpu_bytes": ref.cpu_bytes,
            "additional_buffer_factor": ref.additional_buffer_factor,
            "ours_model_states_bytes": ref.ours_model_states_bytes, "formula": ref.formula,
            "difference": ref.difference, "label": "reference: DeepSpeed's estimator, not our "
            "figure"}


def model_dict(sheet: Sheet, facts: ModelFacts | None, trainable: int | None = 0) -> dict[str, Any]:
    """The ``model`` object."""
    return _model_core(sheet, facts, trainable)


def _model_core(sheet: Sheet, facts: ModelFacts | None, trainable: int | None) -> dict[str, Any]:
    if facts is None:
        return {"id": None, "revision": sheet.model.revision, "parameters": sheet.model.parameters,
                "trainable_parameters": trainable, "architecture": None,
                "context_window_tokens": None, "source": "parameters",
                "source_detail": "bare parameter count from the sheet (the seed's calculator)"}
    arch = facts.architecture
    if arch is None:  # model.config_only: no family counts it; its figures are simulated
        return {"id": facts.model_id, "revision": facts.revision, "parameters": None,
                "trainable_parameters": trainable, "architecture": facts.model_type,
                "context_window_tokens": None, "source": facts.source,
                "source_detail": f"{facts.source_detail} (no gpusizer family: simulated)",
                "stored_format": facts.stored_format, "stored_bytes": facts.stored_bytes}
    return {"id": facts.model_id, "revision": facts.revision, "parameters": arch.total_parameters,
            "trainable_parameters": trainable, "architecture": facts.model_type,
            "context_window_tokens": arch.context_window_tokens, "source": facts.source,
            "source_detail": facts.source_detail, "stored_format": facts.stored_format,
            "stored_bytes": facts.stored_bytes,
            "parameters_by_component": {g.name: g.count for g in arch.params},
            "unrecognised_keys": list(facts.unrecognised_keys)}


def _trainable(est: MemoryEstimate | None) -> int:
    """0 for inference; the LoRA adapters' or every parameter for adaptation (CONTRACT.md)."""
    if est is None or est.training is None:
        return 0
    return est.training.trainable_parameters


def estimate_document(r: EstimateResult) -> dict[str, Any]:
    """``gpusizer estimate --format json``."""
    doc = {"schema_version": SCHEMA_VERSION,
           "gpusizer": {"version": __version__, "catalogs": [], "registry": REGISTRY_NOTE,
                        "stack": applied_versions(r.sheet.stack)},
           "sheet": r.sheet.model_dump(mode="json"),
           "model": model_dict(r.sheet, r.facts, _trainable(r.estimate)),
           "card": r.card.name if r.card else None,
           "memory": memory_dict(r.estimate), "offers": []}
    if r.fit is not None:
        doc["fit"] = {"state": r.fit.state, "reason": r.fit.reason, "condition": r.fit.condition,
                      "device_bytes": r.card.device_bytes.value, **_fit_keys(r.judgement)}
    return doc


def _fit_keys(j: FitJudgement | None) -> dict[str, Any]:
    """CONTRACT.md's ``estimated_fit`` and ``headroom_bytes`` (``unknown`` / null without a
    judgement: the card or the estimate is unknown)."""
    if j is None:
        return {"estimated_fit": "unknown", "headroom_bytes": None}
    return {"estimated_fit": j.state, "headroom_bytes": j.headroom_bytes}


def _claim_keys(d) -> dict[str, Any]:
    """``claimed_device_bytes`` (the catalog's own per-GPU memory for a card the table does not
    decide; CONTRACT.md) and ``estimated_fit_basis``: what ``estimated_fit`` was judged at
    (``card table``, ``catalog's claim``, the variants' common memory, or null)."""
    known = d.unknown_card
    if d.card is not None:
        return {"claimed_device_bytes": None, "estimated_fit_basis": "card table"}
    return {"claimed_device_bytes": known.claimed_device_bytes if known else None,
            "estimated_fit_basis": known.basis if known and known.judgement else None}


def plan_document(r: PlanResult) -> dict[str, Any]:
    """``gpusizer plan --format json`` (CONTRACT.md)."""
    offers = []
    for d in r.decisions:
        o = d.offer
        offers.append({
            "id": o.id, "provider": o.provider, "card": o.card,
            "canonical_card": d.card.name if d.card else None, "cards": o.cards,
            "days": d.days, "total_usd": None if d.total_usd is None else round(d.total_usd, 2),
            "device_bytes": d.card.device_bytes.value if d.card else None,
            **_fit_keys(judgement_of(d)),
            **_claim_keys(d),
            "spot": o.spot, "card_note": d.card_note,
            **_pool_blocks(d.estimate.pool if d.estimate else None),
            "memory": ({"peak_bytes": d.estimate.peak_bytes,
                        "device_peak_bytes": d.estimate.device_peak_bytes,
                        **_intervals(d.estimate),
                        "lower_bound_bytes": d.estimate.lower_bound_bytes,
                        "weights_format": d.estimate.weights_format,
                        "notes": list(d.estimate.note_texts)} if d.estimate else None),
            "criteria": {k: {"state": c.state, "reason": c.reason, "condition": c.condition,
                             "evidence": list(c.evidence)} for k, c in d.criteria.items()},
            "verdict": d.verdict, "rank": d.rank, "provisional_rank": d.provisional_rank,
            "throughput": _throughput(r, d),
        })
    return {
        "schema_version": SCHEMA_VERSION,
        "gpusizer": {"version": r.version,
                     "catalogs": [{"file": f.path, "sha256": f.sha256, "kind": f.kind,
                                   "offers": f.offers,
                                   "skipped_rows": [{"row": x.row, "label": x.label,
                                                     "reason": x.reason} for x in f.skipped]}
                                  for f in r.catalogs],
                     "registry": REGISTRY_NOTE, "stack": applied_versions(r.sheet.stack)},
        "sheet": r.sheet.model_dump(mode="json"), "sheet_sha256": r.sheet_sha256,
        "model": model_dict(r.sheet, r.facts, _trainable(r.estimate)),
        "card": None, "memory": memory_dict(r.estimate), "offers": offers,
        "checkpoint": {"bytes": r.checkpoint_bytes, "source": r.checkpoint_source},
        "invalidators": r.invalidators,
        "invalidator_details": [i.to_json() for i in r.invalidator_details],
        "evidence": {"used": [d.citation() for d in r.evidence.docs
                              if d.file not in {f for f, _ in r.evidence.ignored}],
                     "ignored": [{"file": f, "reason": why} for f, why in r.evidence.ignored]},
        "catalog_discrepancies": [
            {"offer_id": x.offer_id, "card": x.card, "catalog_bytes": x.catalog_bytes,
             "card_bytes": x.card_bytes, "relative_difference": round(x.relative_difference, 4)}
            for x in r.discrepancies],
        **({"simulations": _simulations(r.simulations)} if r.simulations else {}),
        **({"campaign": campaign_dict(r.campaign)} if r.campaign is not None else {}),
    }


def _throughput(r: PlanResult, d) -> dict[str, Any] | None:
    """CONTRACT.md's ``offers[].throughput`` (``decision.throughput``): labelled bounds, never an
    order; null without a card or estimate, or for a lot short of the placement's GPUs."""
    if d.card is None or d.estimate is None or d.offer.cards < r.sheet.placement.gpus:
        return None
    measured = measured_decode_tokens_per_s(r.evidence.docs, d.card)
    t = offer_throughput(r.sheet, r.facts, d.card, d.estimate, total_usd=d.total_usd,
                         days=d.days, measured=None if measured is None else measured[0])

    def rounded(x: float | None, digits: int) -> float | None:
        return None if x is None else round(x, digits)
    return {"decode_tokens_per_s_bound": rounded(t.decode_tokens_per_s_bound, 1),
            "usd_per_million_tokens_bound": rounded(t.usd_per_million_tokens_bound, 4),
            "prefill_seconds_bound": rounded(t.prefill_seconds_bound, 4),
            "training_days_bound": rounded(t.training_days_bound, 3),
            "measured_decode_tokens_per_s": t.measured_decode_tokens_per_s,
            "measured_source": None if measured is None else measured[1],
            "source": t.source}


def campaign_dict(c: Campaign) -> dict[str, Any]:
    """CONTRACT.md's compact ``campaign`` block: per variant its hash and peaks, per offer the
    variants it covers (no reason text: the variant's own plan, ``--variant NAME``, has them)."""
    return {"variants": [{"name": v.name, "sheet_sha256": v.sheet_sha256,
                          "peak_bytes": v.peak_bytes, "device_peak_bytes": v.device_peak_bytes}
                         for v in c.variants],
            "offers": [{"id": o.id, "covers": list(o.covers),
                        "total_usd": None if o.total_usd is None else round(o.total_usd, 2)}
                       for o in c.offers],
            "cheapest_covering": c.cheapest_covering}


def _simulations(sims: dict) -> dict[str, Any]:
    """``plan --simulate``: per card, the simulated memory and its difference to estimate."""
    from ..simulate.engine import NOT_SEEN
    return {"not_seen": list(NOT_SEEN), "per_card": {
        name: {"peak_bytes": s.memory.peak_bytes, "device_peak_bytes": s.memory.device_peak_bytes,
               "tracked_peak_bytes": s.tracked_peak_bytes, "seconds": round(s.seconds, 2),
               "attention": s.attention, "versions": s.versions,
               "memory": memory_dict(s.memory),
               "difference_to_estimate": s.comparison}
        for name, s in sims.items()}}


def dumps(doc: dict[str, Any]) -> str:
    """Pretty JSON text (2-space indent, UTF-8 characters kept, unknown types as ``str``).

    pydantic-core's encoder (Rust) writes what ``json.dumps(doc, indent=2, ensure_ascii=False,
    default=str)`` writes, five times faster on a 10 000-offer plan (40 MB: 0.18 s against
    0.86 s; issue 12, "Speed"); floats are the same numbers, small ones spelled ``0.00001`` where
    ``json`` writes ``1e-05``."""
    return pydantic_core.to_json(doc, indent=2, fallback=str).decode("utf-8")
