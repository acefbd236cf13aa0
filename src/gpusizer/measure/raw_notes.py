"""Raw notes (R14): JSON Lines, one event per line, appended and flushed as it happens.

Every event is written with ``write`` + ``flush`` before the harness goes on, so a crash, an
out-of-memory or a ``SIGKILL`` loses nothing already measured: the operating system holds the
flushed bytes even when the process dies (``fsync`` is added at close, for power loss). Lines are
never rewritten; a reader skips nothing and needs no repair.

Each line: ``{"seq": n, "time": ISO-8601 UTC, "rank": r, "event": name, ...fields}``.
Byte counts are integers and every counter keeps its own name (never summed with another).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any, TextIO

from ..errors import EvidenceError
from ..input_files import read_input

__all__ = ["RawNotes", "read_raw_notes"]


class RawNotes:
    """Append-only JSON Lines writer for one rank.

    Args:
        path: the ``.jsonl`` file; created with its folder, appended to when it exists.
        rank: the distributed rank that writes it (0 on one process).
    """

    def __init__(self, path: str | Path, *, rank: int = 0) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.rank = rank
        self._seq = 0
        self._fh: TextIO | None = open(self.path, "a", encoding="utf-8")

    def note(self, event: str, **fields: Any) -> dict:
        """Append one event and flush it; returns the record written."""
        if self._fh is None:
            raise ValueError(f"raw notes {self.path} are closed")
        record = {"seq": self._seq, "time": dt.datetime.now(dt.timezone.utc).isoformat(),
                  "rank": self.rank, "event": event, **fields}
        self._fh.write(json.dumps(record, sort_keys=False, default=str) + "\n")
        self._fh.flush()
        self._seq += 1
        return record

    def close(self) -> None:
        """Flush, fsync and close (idempotent)."""
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "RawNotes":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_raw_notes(path: str | Path) -> list[dict]:
    """Every event of a raw-notes file, in order.

    Raises:
        ValueError: a line is not a JSON object (the notes were edited or written by something
            else: they are append-only); EvidenceError (a ValueError) when the file is not a
            regular file or is over the engine log's 64 MiB cap.
    """
    events = []
    text = read_input(path, "engine log", EvidenceError).decode("utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        record = json.loads(line)
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object per line")
        events.append(record)
    return events
