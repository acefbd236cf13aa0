"""The sizing sheet's sections as plain rows (title, header, rows) built from the JSON document.

Markdown, HTML and the terminal table all render these rows, so a figure is computed once (in the
JSON document) and printed the same everywhere. Column names carry unit and scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..memory.engines import ENGINES
from ..units import fmt_bytes, fmt_gb, fmt_gib
from .offer_words import View, fit_state_text, fit_words, headroom_text, rank_text, shown_offers

__all__ = ["Section", "header_lines", "memory_sections", "offer_sections", "STATE_TEXT",
           "POOL_TITLE", "CRITERIA"]

STATE_TEXT = {"acceptable": "acceptable", "to_confirm": "to confirm", "exclude": "exclude"}
POOL_TITLE = "Engine pool (per GPU)"
CRITERIA = ("workload", "compatibility", "memory", "quality", "distribution", "budget")


@dataclass(frozen=True)
class Section:
    """A titled table (``header`` + ``rows``) and free lines below it."""

    title: str
    header: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    lines: tuple[str, ...] = ()


def _b(n: int | None) -> str:
    return "unknown" if n is None else str(n)


def header_lines(doc: dict[str, Any]) -> list[str]:
    """Model and revision, task, precision, lengths, concurrency or microbatch (R15)."""
    s, m, mem = doc["sheet"], doc["model"], doc["memory"]
    name = m.get("id") or s["model"].get("path") or f"{m['parameters']} parameters (bare count)"
    lines = [f"Model: {name} @ {m.get('revision') or s['model']['revision']}"
             + (f" ({m['architecture']}, {m['parameters']} parameters, source: {m['source']})"
                if m.get("architecture") else ""),
             f"Task: {s['task']}; weights: {s['weights']} (runs as {mem['weights_format']}"
             + (f", stored {mem['stored_format']}" if mem.get("stored_format") else "") + ")"]
    if s.get("inference"):
        i = s["inference"]
        engine = ENGINES[i["engine"]]
        cache = engine.describe_cache(i)
        attention = engine.describe_attention(s["attention"])
        lines.append(f"Lengths: prompt {i['prompt_tokens']} + new {i['new_tokens']} tokens per "
                     f"sequence; concurrency {i['concurrency']} sequences; engine {i['engine']}; "
                     f"KV cache {i['kv_cache_dtype']}, {cache}; attention {attention}")
    if s.get("training"):
        t = s["training"]
        lines.append(f"Training: sequence {t['sequence_length']} tokens; microbatch "
                     f"{t['microbatch']}; gradient accumulation {t['gradient_accumulation']}; "
                     f"gradient checkpointing {'on' if t['gradient_checkpointing'] else 'off'}"
                     + _strategies(t))
    p = s["placement"]
    extra = "".join(f", {label} {p[key]}" for key, label, default in (
        ("nodes", "nodes", 1), ("fsdp_sharding", "fsdp sharding", "full"),
        ("offload", "offload", "none")) if p.get(key, default) != default)
    lines.append(f"Placement: {p['gpus']} GPU(s), {p['strategy']}{extra} — every memory figure "
                 "is per GPU")
    lines.append(f"Reserve (declared by the user, never added to a peak): "
                 f"{fmt_bytes(s['reserve'])}; margin: {s['margin']}")
    return lines


def _host_and_reference(mem: dict[str, Any]) -> list[Section]:
    """Host RAM per node and DeepSpeed's own estimator (a labelled reference), for training."""
    t = mem.get("training")
    if not t:
        return []
    rows = [("host RAM per node (memory.host_ram_bytes)",
             f"{fmt_gib(mem.get('host_ram_bytes'))} GiB — {mem.get('host_ram_formula', '')}")]
    ref = t.get("deepspeed_reference")
    if ref:
        rows += [(f"DeepSpeed {ref['estimator']} per GPU (reference, not our figure)",
                  f"{fmt_gib(ref['gpu_bytes'])} GiB ({ref['gpu_bytes']} B); ours (model "
                  f"states) {fmt_gib(ref['ours_model_states_bytes'])} GiB"),
                 ("DeepSpeed per-node CPU (× additional_buffer_factor "
                  f"{ref['additional_buffer_factor']})",
                  f"{fmt_gib(ref['cpu_bytes'])} GiB ({ref['cpu_bytes']} B)"),
                 ("why they differ", ref["difference"])]
    return [Section("Host RAM and DeepSpeed's reference", ("figure", "value"), tuple(rows))]


def memory_sections(doc: dict[str, Any]) -> list[Section]:
    """Summary, items, phases, the serving engine's pool split, notes."""
    mem = doc["memory"]
    unit = "GiB per GPU"
    summary = [
        ("weights only", mem["weights_bytes"]),
        ("indicative envelope (weights + reserve)", mem["envelope_bytes"]),
        ("peak, allocated (predicts max_memory_allocated)", mem["peak_bytes"]),
        ("device peak (peak + non-PyTorch; predicts nvidia-smi)", mem["device_peak_bytes"]),
        ("conservative envelope (sum of item maxima; not a peak)",
         mem["conservative_envelope_bytes"]),
        (f"certain lower bound ({mem.get('lower_bound_covers', 'weights and KV cache')})",
         mem["lower_bound_bytes"]),
    ]
    out = [Section("Memory per GPU", ("figure", f"size ({unit})", "size (GB per GPU)", "bytes"),
                   tuple((k, fmt_gib(v), fmt_gb(v), _b(v)) for k, v in summary))]
    items = tuple((i["name"], _b(i["bytes"]), fmt_gib(i["bytes"]), i["provenance"],
                   ", ".join(i["phases"]) or "not live",
                   ("outside PyTorch; " if i["non_torch"] else "")
                   + (i["formula"] or i.get("unknown_reason") or "")
                   + (f" — unknown: {i['unknown_reason']}" if i["bytes"] is None else "")
                   + f" [source: {i['source']}]")
                  for i in mem["items"])
    out.append(Section("Items", ("item", "bytes (per GPU)", f"size ({unit})", "provenance",
                                 "live in phases", "formula and source"), items))
    if mem["phases"]:
        out.append(Section("Phase peaks", ("phase", f"peak allocated ({unit})",
                                           f"device peak ({unit})", "live items"),
                           tuple((p["name"], fmt_gib(p["peak_bytes"]),
                                  fmt_gib(p["device_peak_bytes"]),
                                  ", ".join(p["items"])) for p in mem["phases"])))
    out += _host_and_reference(mem)
    v = mem.get("pool")
    if v:
        engine = ENGINES[v["engine"]]
        out.append(Section(POOL_TITLE, ("figure", "value"), (
            ("engine", engine.label),
            ("device total used", f"{fmt_gib(v['total_bytes'])} GiB ({v['total_source']})"),
            (f"budget = {engine.budget_rule}", f"{fmt_gib(v['budget_bytes'])} GiB"),
            ("weights (incl. rotary cache)", f"{fmt_gib(v['weights_bytes'])} GiB"),
            ("profile-run activation peak", f"{fmt_gib(v['activation_bytes'])} GiB"),
            ("non-PyTorch (known)", f"{fmt_gib(v['non_torch_bytes'])} GiB"),
            ("KV cache", f"{fmt_gib(v['kv_cache_bytes'])} GiB ({_b(v['kv_cache_bytes'])} B)"),
            ("KV blocks / tokens", f"{v['kv_blocks']} blocks / {v['kv_tokens']} tokens"),
            ("maximum concurrency at the required length", f"{v['max_concurrency']}x"),
            (f"{engine.label} starts", "yes" if v["starts"] else "no"))))
    if doc.get("fit"):
        f = doc["fit"]
        headroom = f.get("headroom_bytes")
        out.append(Section("Fit against the card", lines=(
            f"memory: {STATE_TEXT[f['state']]} — {f['reason']}",
            f"estimated fit: {f.get('estimated_fit', 'unknown').replace('_', ' ')}"
            + ("" if headroom is None else f"; headroom {fmt_bytes(headroom)} per GPU"),
            *( [f"condition: {f['condition']}"] if f.get("condition") else []))))
    if mem["notes"]:
        out.append(Section("Rules applied and what lies outside the calculation",
                           lines=tuple(mem["notes"])))
    return out


def offer_sections(doc: dict[str, Any], view: View = View()) -> list[Section]:
    """Every offer (or the ``view``'s top) with its estimated fit and six states, then each
    offer's conditions and evidence; catalog discrepancies, skipped rows and provenance."""
    offers, label = shown_offers(doc, view, page_one=False)
    rows = []
    for o in offers:
        rows.append((o["id"], o["card"], o["canonical_card"] or "unknown", str(o["cards"]),
                     "unknown" if o["days"] is None else f"{o['days']:g}",
                     "unknown" if o["total_usd"] is None else f"{o['total_usd']:.2f}",
                     fmt_gib(o["device_bytes"]), o["verdict"], rank_text(o),
                     fit_state_text(doc, o), headroom_text(o),
                     *(STATE_TEXT[o["criteria"][c]["state"]] for c in CRITERIA)))
    out = [Section("Offers", ("offer", "card (catalog)", "card (canonical)", "cards in lot",
                              "days", "total USD (lot, days)", "device memory (GiB per card)",
                              "verdict", "rank", "estimated fit", "headroom (GiB per GPU)",
                              *CRITERIA), tuple(rows),
                   (label + ".",
                    "A provisional rank orders the conditional offers estimated to fit by total "
                    "cost, then headroom, then schedule; it is not a selection. Prices say "
                    "nothing about speed.",))]
    lines = []
    for o in offers:
        for c in CRITERIA:
            cr = o["criteria"][c]
            ev = "; ".join(f"{e['document']} ({e['version']}; {e['scope']})" for e in cr["evidence"])
            fit = f"{fit_words(doc, o)}; " if c == "memory" else ""
            text = f"{o['id']} · {c}: {STATE_TEXT[cr['state']]} — {fit}{cr['reason']}"
            if cr["condition"]:
                text += f" · to confirm: {cr['condition']}"
            if ev:
                text += f" · evidence: {ev}"
            lines.append(text)
    out.append(Section("Criteria, conditions and evidence", lines=tuple(lines)))
    disc = doc.get("catalog_discrepancies", [])
    if disc:
        out.append(Section("Catalog memory claims that disagree with the card table "
                           "(the card table's device bytes are used)",
                           ("offer", "card", "catalog claim (bytes)", "card table (bytes)",
                            "difference (%)"),
                           tuple((x["offer_id"], x["card"], str(x["catalog_bytes"]),
                                  str(x["card_bytes"]), f"{100 * x['relative_difference']:+.1f}")
                                 for x in disc)))
    cats = doc["gpusizer"]["catalogs"]
    skipped = [(c["file"], x) for c in cats for x in c.get("skipped_rows", [])]
    if skipped:
        out.append(Section("Catalog rows that gave no offer", ("file", "row", "label", "reason"),
                           tuple((f, str(x["row"]), x["label"], x["reason"])
                                 for f, x in skipped)))
    out.append(Section("Provenance", lines=(
        f"gpusizer {doc['gpusizer']['version']}; sheet sha256 {doc.get('sheet_sha256', '-')}",
        *(f"catalog {c['file']} sha256 {c['sha256']} ({c.get('offers', '?')} offers)"
          for c in cats))))
    return out


def _strategies(t: dict) -> str:
    """The loss, packing and checkpointing keys a training sheet sets beyond the defaults."""
    ckpt = t.get("checkpointing") or {}
    parts = [f"loss {t['loss']}" if t.get("loss", "standard") != "standard" else "",
             "packed sequences" if t.get("packing") else "",
             f"checkpointing {ckpt['mode']}" if ckpt.get("mode") else "",
             f"every {ckpt['every']} layers" if ckpt.get("every", 1) > 1 else "",
             "activations offloaded to the host" if ckpt.get("offload") else ""]
    return "".join(f"; {p}" for p in parts if p)
