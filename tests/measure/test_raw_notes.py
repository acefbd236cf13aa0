"""Raw notes are JSON Lines appended and flushed per event (R14)."""

from __future__ import annotations

from gpusizer.measure.raw_notes import RawNotes, read_raw_notes


def test_each_event_is_on_disk_before_the_next(tmp_path):
    path = tmp_path / "notes.jsonl"
    notes = RawNotes(path, rank=1)
    notes.note("phase_start", phase="load")
    # readable by another reader before close: flushed per event
    assert [e["event"] for e in read_raw_notes(path)] == ["phase_start"]
    notes.note("phase_end", phase="load", counters={"max_memory_reserved_bytes": 1024})
    notes.close()
    events = read_raw_notes(path)
    assert [(e["seq"], e["rank"], e["event"]) for e in events] == [
        (0, 1, "phase_start"), (1, 1, "phase_end")]
    assert events[1]["counters"] == {"max_memory_reserved_bytes": 1024}


def test_appends_never_rewrite(tmp_path):
    path = tmp_path / "notes.jsonl"
    with RawNotes(path) as n:
        n.note("a")
    with RawNotes(path) as n:
        n.note("b")
    assert [e["event"] for e in read_raw_notes(path)] == ["a", "b"]
