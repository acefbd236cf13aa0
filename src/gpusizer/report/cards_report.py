"""``gpusizer cards``: the JSON documents (the source every view reads) and their Markdown.

``cards_document`` (with a sheet): every card's estimated fit and headroom at 1, 2, 4 and 8
GPUs, the fewest GPUs of each card that fit, and the answer first. ``card_table_document``
(without a sheet): the card table. Keys are documented in docs/contract-extensions.md; every
size is in bytes (integers), GiB appears only in the Markdown.
"""

from __future__ import annotations

import textwrap
from typing import Any

from .. import SCHEMA_VERSION, __version__
from ..catalog.card_table import CardTable
from ..catalog.types import Card
from ..decision.card_choice import CardFits, CardsResult, CountFit
from ..stack import applied_versions
from ..units import GiB
from .json_report import REGISTRY_NOTE, model_dict

__all__ = ["cards_document", "card_table_document", "render_cards_markdown",
           "render_card_table_markdown", "answer_text"]

_WIDTH = 120
_PROVENANCE = {
    "figures": "estimated",
    "method": "gpusizer's arithmetic (memory.estimate.estimate_memory) once per card and GPU "
              "count under the card's GPU rules, judged by memory.fit_rule.judge_fit with the "
              "sheet's margin; no measurement, simulation or evidence is read",
    "device_bytes": "the card table (nvidia-smi memory.total, MiB × 2**20)",
    "nccl_buffers": "declared (memory.nccl): no catalog, so the card's default link",
}


def _cc(card: Card) -> str | None:
    cc = card.compute_capability.value
    return None if cc is None else f"{cc[0]}.{cc[1]}"


def _count(c: CountFit) -> dict[str, Any]:
    return {"gpus": c.gpus, "strategy": c.strategy, "estimated_fit": c.estimated_fit,
            "headroom_bytes": c.headroom_bytes, "certain": c.certain,
            "peak_bytes": c.peak_bytes, "device_peak_bytes": c.device_peak_bytes,
            "provenance": None if c.refused else "estimated", "reason": c.reason,
            "refused": c.refused, "sheet_count": c.sheet_count}


def _card(c: CardFits) -> dict[str, Any]:
    return {"card": c.card.name, "device_bytes": int(c.card.device_bytes.value),
            "device_bytes_status": c.card.device_bytes.status,
            "compute_capability": _cc(c.card), "fewest_gpus": c.fewest_gpus,
            "counts": [_count(x) for x in c.counts]}


def answer_text(r: CardsResult) -> str:
    """The answer first, in one sentence (``gpusizer cards`` view and JSON ``answer.text``)."""
    best = r.answer
    top = max(r.gpu_counts)
    if best is None:
        return (f"no card of the card table fits at up to {top} GPUs on one node (estimated); "
                "the workload needs several nodes or a change (gpusizer alternatives)")
    card, at = best
    how = "" if at.gpus == 1 else f" ({at.strategy})"
    return (f"fewest GPUs that fit: {at.gpus} × {card.card.name}{how}, estimated headroom "
            f"{at.headroom_bytes / GiB:.2f} GiB per GPU")


def _strategy_source(r: CardsResult) -> str:
    if not r.strategy_is_default:
        return "the sheet's placement.strategy"
    task = "inference" if r.sheet.task == "inference" else "training"
    return f"default for {task}: the sheet names no multi-GPU strategy"


def cards_document(r: CardsResult) -> dict[str, Any]:
    """``gpusizer cards SHEET --format json``."""
    best = r.answer
    default = r.strategy_is_default
    return {
        "schema_version": SCHEMA_VERSION,
        "gpusizer": {"version": __version__, "card_table": r.card_table,
                     "registry": REGISTRY_NOTE, "stack": applied_versions(r.sheet.stack)},
        "sheet": r.sheet.model_dump(mode="json"),
        "model": model_dict(r.sheet, r.facts, None),
        "strategy": {"name": r.strategy, "default": default,
                     "source": _strategy_source(r)},
        "gpu_counts": list(r.gpu_counts), "sheet_gpus": r.sheet_gpus,
        "answer": (None if best is None else
                   {"card": best[0].card.name, "gpus": best[1].gpus,
                    "strategy": best[1].strategy, "headroom_bytes": best[1].headroom_bytes}),
        "answer_text": answer_text(r),
        "cards": [_card(c) for c in r.cards],
        "provenance": dict(_PROVENANCE),
    }


def _cell(c: dict[str, Any]) -> str:
    fit = c["estimated_fit"]
    if fit is None:
        return "cannot run"
    head = c["headroom_bytes"]
    figure = "" if head is None else f" {head / GiB:+.2f}".replace("-", "−")
    word = {"fits": "fits", "does_not_fit": "no", "borderline": "borderline", "unknown": "unknown"}.get(fit, fit)
    return f"{word}{figure}"


def _model_line(doc: dict[str, Any]) -> str:
    m, s = doc["model"], doc["sheet"]
    name = f"{m['id']}@{m['revision']}" if m["id"] else f"{m['parameters']} parameters"
    weights = s["weights"]
    if weights == "auto" and m.get("stored_format"):
        weights = f"auto ({m['stored_format']} as stored)"
    return f"{name} — {s['task']}, weights {weights}"


def render_cards_markdown(doc: dict[str, Any]) -> str:
    """The answer first, then the strategy, then one row per card (fewest GPUs that fit, then
    card memory), headroom in GiB per GPU at each count; every line within 120 characters."""
    counts = doc["gpu_counts"]
    strat = doc["strategy"]
    lines = [f"# Cards for {_model_line(doc)}", "", f"**{doc['answer_text']}**", ""]
    said = (f"{strat['name']} ({strat['source']})")
    lines += textwrap.wrap(f"Several GPUs run {said}; the sheet's own count is marked * "
                           f"({doc['sheet_gpus']} GPU{'s' if doc['sheet_gpus'] > 1 else ''}). "
                           "Estimates only (no catalog: prices and interconnect unknown; "
                           "NCCL buffers at the card's default link). fits / no with the "
                           "headroom in GiB per GPU (device − margin − device peak; a serving "
                           "pool: its spare KV bytes).", _WIDTH)
    lines.append("")
    head = ["card", "memory GiB/GPU"] + [f"{n} GPU{'s' if n > 1 else ''}"
                                         + ("*" if n == doc["sheet_gpus"] else "")
                                         for n in counts] + ["fewest GPUs"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---", "---:"] + ["---"] * len(counts) + ["---:"]) + "|")
    rows = sorted(doc["cards"], key=lambda c: (c["fewest_gpus"] is None, c["fewest_gpus"] or 0,
                                               c["device_bytes"], c["card"]))
    for c in rows:
        cells = [c["card"], f"{c['device_bytes'] / GiB:.2f}"]
        cells += [_cell(x) for x in c["counts"]]
        cells.append(str(c["fewest_gpus"]) if c["fewest_gpus"] else f"> {max(counts)}")
        lines.append("| " + " | ".join(cells) + " |")
    refused = [(c["card"], x) for c in doc["cards"] for x in c["counts"] if x["refused"]]
    if refused:
        lines += ["", "Cannot run:"]
        seen = set()
        for card, x in refused:
            key = (x["gpus"], x["refused"])
            text = (f"- {x['gpus']} GPU{'s' if x['gpus'] > 1 else ''}: {x['refused']}" if key
                    not in seen else None)
            seen.add(key)
            if text:
                lines += textwrap.wrap(text, _WIDTH, subsequent_indent="  ")
    lines += [""] + textwrap.wrap("Figures: " + doc["provenance"]["method"] + ".", _WIDTH)
    return "\n".join(lines) + "\n"


def card_table_document(table: CardTable) -> dict[str, Any]:
    """``gpusizer cards --format json`` (no sheet): the card table."""
    cards = []
    for c in table.cards:
        cards.append({
            "name": c.name, "aliases": list(c.aliases), "nominal_gb": c.nominal_gb,
            "device_bytes": c.device_bytes.value, "device_bytes_status": c.device_bytes.status,
            "device_bytes_source": c.device_bytes.source,
            "cuda_total_bytes": c.cuda_total_bytes.value,
            "compute_capability": _cc(c), "arch": c.arch, "memory_type": c.memory_type,
            "bandwidth_gb_s": c.bandwidth_gb_s.value,
            "nvlink": c.nvlink.value or False, "nvlink_status": c.nvlink.status})
    ambiguous = []
    for entry in dict.fromkeys(table.ambiguous_by_key.values()):
        ambiguous.append({"names": list(entry.names), "cards": list(entry.cards),
                          "reason": entry.reason})
    return {"schema_version": SCHEMA_VERSION,
            "gpusizer": {"version": __version__, "card_table": table.file,
                         "stack": applied_versions(None)},
            "cards": cards, "ambiguous": ambiguous}


LINK_CHARS = 24
"""Characters of the NVLink cell in the card table listing (then "…")."""


def render_card_table_markdown(doc: dict[str, Any]) -> str:
    """One row per card (memory in GiB per GPU, nvidia-smi bytes, compute capability, NVLink,
    aliases count), then each card's memory source."""
    lines = [f"# Card table ({doc['gpusizer']['card_table']}, {len(doc['cards'])} cards)", "",
             "| card | memory GiB/GPU | device bytes | CC | arch | NVLink | aliases |",
             "|---|---:|---:|---|---|---|---:|"]
    for c in doc["cards"]:
        link = "no" if not c["nvlink"] else str(c["nvlink"])
        link = link if len(link) <= LINK_CHARS else link[:LINK_CHARS - 1].rstrip() + "…"
        lines.append(f"| {c['name']} | {c['device_bytes'] / GiB:.2f} | {c['device_bytes']} | "
                     f"{c['compute_capability']} | {c['arch']} | {link} | "
                     f"{len(c['aliases'])} |")
    lines += ["", *textwrap.wrap(
        "CC: CUDA compute capability (major.minor: what the card's kernels may use, e.g. 8.0+ "
        "for bf16 and FlashAttention 2, 8.9+ for fp8). NVLink: the link, cut at "
        f"{LINK_CHARS} characters (`--format json` has it whole).", _WIDTH),
              "", "Device bytes: what `nvidia-smi --query-gpu=memory.total` reports (MiB × 2**20)."
              " Sources:"]
    for c in doc["cards"]:
        lines += textwrap.wrap(f"- {c['name']} ({c['device_bytes_status']}): "
                               f"{c['device_bytes_source']}", _WIDTH, subsequent_indent="  ")
    return "\n".join(lines) + "\n"
