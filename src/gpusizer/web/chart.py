"""The phase chart of the result page: one stacked bar per phase (load, prefill, decode; or a
training step's phases), each segment one memory item of that phase, per GPU, against one
offer's device bytes and the line the sheet's margin leaves below them.

The figures are the plan's own (``memory.items[].bytes``, ``memory.phases[].items``); nothing is
recomputed. The margin is the sheet's (``Margin.of(device_bytes)``: a percent of the device or
bytes). Readable without colour: each item has its own hatching pattern, a segment tall enough
carries its name and GiB, every segment has a ``<title>``, and the legend names each pattern.
This module computes the geometry; the template draws it (Jinja2 escapes every name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..units import fmt_gib

__all__ = ["Chart", "Bar", "Segment", "phase_chart", "HEIGHT", "PATTERNS"]

HEIGHT = 300
"""The plot's height in SVG units (the y axis: 0 at the bottom, ``Chart.top_bytes`` at the top)."""
BAR_WIDTH = 90
GAP = 40
LEFT = 10
LABEL_MIN = 14
"""The smallest segment (SVG units) that carries its name inside."""

PATTERNS = ("diag", "cross", "dots", "horiz", "vert", "back", "grid", "solid")
"""The hatching of the items, in turn (defined in the template's ``<defs>``)."""


@dataclass(frozen=True)
class Segment:
    """One item in one phase's bar: ``bytes`` from ``lo`` to ``lo + bytes`` (bytes), drawn
    from ``y`` for ``height`` SVG units."""

    item: str
    bytes: int
    lo: int
    pattern: str
    y: float
    height: float

    @property
    def label(self) -> str:
        return f"{self.item} {fmt_gib(self.bytes)} GiB"

    @property
    def labelled(self) -> bool:
        return self.height >= LABEL_MIN


@dataclass(frozen=True)
class Bar:
    phase: str
    x: float
    total: int
    segments: tuple[Segment, ...]
    unknown: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.phase} {fmt_gib(self.total)} GiB"


@dataclass(frozen=True)
class Chart:
    """The chart against one offer (``offer``: its id; ``device_bytes``, ``margin_bytes``).

    Attributes:
        top_bytes: the bytes at the plot's top (the largest of the phases and the device, plus
            a tenth).
        bars: one per phase, in the plan's order.
        legend: (item, pattern) for each item drawn.
        gpus: the GPUs the per-GPU figures are for.
    """

    offer: str | None
    device_bytes: int | None
    margin_bytes: int | None
    top_bytes: int
    bars: tuple[Bar, ...]
    legend: tuple[tuple[str, str], ...]
    gpus: int

    width: float = 0

    def y(self, n_bytes: int) -> float:
        """The SVG y of ``n_bytes`` (0 at the top)."""
        return HEIGHT - HEIGHT * n_bytes / self.top_bytes

    @property
    def device_y(self) -> float | None:
        return None if self.device_bytes is None else self.y(self.device_bytes)

    @property
    def margin_y(self) -> float | None:
        if self.device_bytes is None or self.margin_bytes is None:
            return None
        return self.y(max(0, self.device_bytes - self.margin_bytes))

    @property
    def device_label(self) -> str:
        return f"device {fmt_gib(self.device_bytes)} GiB ({self.offer})"

    @property
    def margin_label(self) -> str:
        return (f"device − margin {fmt_gib((self.device_bytes or 0) - (self.margin_bytes or 0))}"
                f" GiB (margin {fmt_gib(self.margin_bytes)} GiB)")


def phase_chart(doc: dict[str, Any], offer: dict[str, Any] | None,
                margin_bytes: int | None) -> Chart:
    """The chart of a plan document ``doc`` against ``offer`` (None: no device line).

    Args:
        doc: the plan's JSON (``PlanReport.to_json()``).
        offer: one of ``doc["offers"]`` (its ``device_bytes`` per GPU), or None.
        margin_bytes: the sheet's margin on that offer's device, in bytes.
    """
    memory = doc["memory"]
    sizes = {i["name"]: int(i["bytes"]) for i in memory["items"] if i.get("bytes") is not None}
    phases = memory["phases"]
    order = list(dict.fromkeys(n for p in phases for n in p["items"] if sizes.get(n)))
    patterns = {name: PATTERNS[k % len(PATTERNS)] for k, name in enumerate(order)}
    device = None if offer is None else offer.get("device_bytes")
    totals = [sum(sizes.get(n, 0) for n in p["items"]) for p in phases]
    top = int(max(totals + [device or 0, 1]) * 1.1)
    chart = Chart(offer=None if offer is None else offer["id"], device_bytes=device,
                  margin_bytes=margin_bytes if device is not None else None, top_bytes=top,
                  bars=(), legend=(), gpus=int(memory.get("gpus", 1)))
    bars = []
    for k, (p, total) in enumerate(zip(phases, totals)):
        lo = 0
        segs = []
        for name in p["items"]:
            n = sizes.get(name)
            if not n:
                continue
            y_hi, y_lo = chart.y(lo + n), chart.y(lo)
            segs.append(Segment(name, n, lo, patterns[name], y_hi, y_lo - y_hi))
            lo += n
        bars.append(Bar(p["name"], LEFT + k * (BAR_WIDTH + GAP), total, tuple(segs),
                        tuple(p.get("unknown_items") or ())))
    return Chart(**{**chart.__dict__, "bars": tuple(bars),
                    "legend": tuple((n, patterns[n]) for n in order),
                    "width": LEFT + len(bars) * (BAR_WIDTH + GAP) + 260})
