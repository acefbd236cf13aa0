"""When may a criterion be ``acceptable``? Written from SPEC R2, CONTRACT.md ("Evidence files",
"Meanings") and docs/evidence.md only; it calls no gpusizer code at all.

Each function states a *necessary* condition: the offer's documents confirm the criterion within
scope. A criterion gpusizer calls ``acceptable`` while the oracle says no is a defect.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

UNIT = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
        "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def size_bytes(text: Any) -> int | None:
    """CONTRACT: sizes with units (decimal and binary), as integer bytes."""
    if text is None:
        return None
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)\s*", str(text))
    return None if m is None else int(float(m.group(1)) * UNIT[m.group(2)])


def margin_bytes(margin: str | int, device_bytes: int) -> float:
    """CONTRACT: ``margin`` (default 5%); a % is of device_bytes."""
    if isinstance(margin, int):
        return margin
    if margin.endswith("%"):
        return float(margin[:-1]) / 100 * device_bytes
    return size_bytes(margin) or 0


def required(sheet: dict[str, Any]) -> dict[str, int]:
    if sheet["task"] == "inference":
        inf = sheet["inference"] or {}
        return {"prompt_tokens": inf.get("prompt_tokens"), "new_tokens": inf.get("new_tokens"),
                "concurrency": inf.get("concurrency", 1)}
    tr = sheet["training"]
    return {"sequence_length": tr["sequence_length"], "microbatch": tr["microbatch"]}


def cycle(sheet: dict[str, Any]) -> set[str]:
    if sheet["task"] == "inference":
        return {"load", "prefill", "decode"}
    return {"load", "forward", "backward", "optimizer_step", "validation"}


class Oracle:
    """The documents at hand for one offer: ``sheet`` as given (normalised by the test),
    ``sha`` its sheet_sha256, ``row`` the catalog row, ``card``/``device_bytes`` the offer's
    canonical card and device bytes as the plan JSON reports them (facts of the card table)."""

    def __init__(self, sheet, sha, row, card, device_bytes, docs, today: dt.date):
        self.sheet, self.sha, self.row = sheet, sha, row
        self.card, self.device = card, device_bytes
        self.today = today
        self.docs = [d for d in docs if self.relevant(d)]

    def _on_card(self, d) -> bool:
        s = d.get("scope") or {}
        return (self.card is not None and s.get("card") == self.card
                and s.get("device_bytes") == self.device)

    def _in_env(self, d) -> bool:
        s = d.get("scope") or {}
        if s.get("offer_id") is not None and s["offer_id"] == self.row["id"]:
            return True
        return (s.get("provider") == self.row["provider"] and self.row.get("environment")
                is not None and (s.get("environment") or {}).get("image")
                == self.row.get("environment"))

    def _passed_limits(self):
        for d in self.docs:
            if d["kind"] != "measurement" or not self._on_card(d):
                continue
            limits = [r for r in d.get("rungs", []) if r.get("name") == "limit"]
            if len(limits) == 1 and limits[0].get("result") == "passed":
                yield d, limits[0]

    def workload(self) -> bool:
        """docs/evidence.md: a passed limit rung on the card whose ``executed`` equals the
        required dimensions."""
        req = required(self.sheet)
        return any(all(r.get("executed", {}).get(k) == v for k, v in req.items())
                   for _, r in self._passed_limits())

    def memory(self) -> bool:
        """docs/evidence.md: the limit rung passed on the same card, every phase of the full
        cycle recorded with reserved and non-PyTorch bytes, max(reserved + non-PyTorch) +
        margin ≤ device bytes (known)."""
        if self.device is None:
            return False
        for _, r in self._passed_limits():
            phases = r.get("phases", [])
            if not cycle(self.sheet) <= {p.get("name") for p in phases}:
                continue
            if any(p.get("max_memory_reserved_bytes") is None or p.get("non_torch_bytes") is None
                   for p in phases):
                continue
            peak = max(p["max_memory_reserved_bytes"] + p["non_torch_bytes"] for p in phases)
            if peak + margin_bytes(self.sheet.get("margin", "5%"), self.device) <= self.device:
                return True
        return False

    def compatibility(self) -> bool:
        """docs/evidence.md: a passed compatibility check in the offer's own environment
        (provider + image, or offer_id), or a measurement whose limit rung passed there."""
        if any(d["kind"] == "compatibility" and d.get("result") == "passed" and self._in_env(d)
               for d in self.docs):
            return True
        return any(self._in_env(d) for d, _ in self._passed_limits())

    def quality(self) -> bool:
        """CONTRACT: quality acceptable needs declared quality criteria (R1); then either the
        reference format unchanged or passing quality evidence."""
        return self.sheet.get("quality") is not None

    def distribution(self) -> bool:
        """R2 / CONTRACT: the lot holds the placement's GPUs and every stated requirement
        (host RAM, storage, interconnect) is documented by the row and met."""
        gpus = (self.sheet.get("placement") or {}).get("gpus", 1)
        if self.row["cards"] < gpus:
            return False
        req = self.sheet.get("requirements") or {}
        for key in ("host_ram", "storage"):
            need = size_bytes(req.get(key))
            if need is not None and need > 0:
                have = size_bytes(self.row.get(key))
                if have is None or have < need:
                    return False
        if req.get("interconnect") and self.row.get("interconnect") != req["interconnect"]:
            return False
        return True

    def budget(self) -> bool:
        """R2: a budget declared, the lot's price known (and, when the row prices the budget's
        own days, within max_usd), and a documented availability window."""
        b = self.sheet.get("budget")
        if not b:
            return False
        if "total_usd" not in self.row and "usd_per_hour" not in self.row:
            return False
        days = b.get("days")
        if "total_usd" in self.row and self.row.get("days", days) == days \
                and self.row["total_usd"] > b["max_usd"]:
            return False
        if "usd_per_hour" in self.row and days and "total_usd" not in self.row \
                and self.row["usd_per_hour"] * 24 * days > b["max_usd"] * (1 + 1e-9):
            return False
        return "available_from" in self.row and "available_until" in self.row

    def relevant(self, doc) -> bool:
        """A document that can bear on this offer at all: this sheet's, and not a measurement
        with an injected fault (docs/evidence.md places that rule under `measurement`)."""
        return doc.get("sheet_sha256") == self.sha and not (
            doc.get("kind") == "measurement" and doc.get("injected_fault"))

    def allows(self, criterion: str) -> bool:
        return getattr(self, criterion)()


CRITERIA = ("workload", "compatibility", "memory", "quality", "distribution", "budget")
