"""Public cases (examples/validation/cases.yaml, re-typed from shared/validation/public-cases.jsonl
and found afresh) against `gpusizer estimate`.

Every case of the shared public-cases file is listed in cases.yaml, either with a sheet and the
observations of a named counter or with the reason it cannot be expressed. Observations marked
``asserted`` (transformers-based stacks with exact figures) are asserted here: an exact
``max_memory_allocated`` within 10 % of ``peak_bytes``, a verdict equal to the fit rule's on the
card. The others are recorded on the scoreboard (benchmarks/accuracy.py, docs/accuracy.md).
Run with ``-s`` to see the comparison.
"""

from __future__ import annotations

import json

import pytest

from .conftest import load_benchmark

BOARD = load_benchmark("accuracy")
CASES = BOARD.load_manifest()


def test_every_shared_public_case_is_sized_or_said_unexpressible(shared_dir):
    path = shared_dir / "validation" / "public-cases.jsonl"
    ids = {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}
    listed = {c["id"] for c in CASES}
    assert ids <= listed, sorted(ids - listed)


def test_every_sheet_exists_and_every_card_is_known():
    from gpusizer.catalog.cards import require_card

    for case in CASES:
        if case.get("unexpressible"):
            continue
        assert (BOARD.MANIFEST.parent / case["sheet"]).is_file(), case["id"]
        if case.get("card"):
            require_card(case["card"])


ASSERTED = [(c, o) for c in CASES if not c.get("unexpressible")
            for o in c["observations"] if o.get("asserted")]


@pytest.mark.parametrize("case,observation", ASSERTED,
                         ids=[f"{c['id']}-{o['counter']}" for c, o in ASSERTED])
def test_asserted_observation(case, observation):
    row = next(r for r in BOARD.score_case({**case, "observations": [observation]}))
    print(f"\n{case['id']}: {observation['counter']} observed {row.observed}, gpusizer "
          f"{row.figure}" + ("" if row.error is None else f", error {row.error:+.1%}"))
    if observation["counter"] == "verdict":
        # right, or hedged by the estimate's own range (borderline: the interval straddles the
        # card, as on these runs that filled most of it); never the opposite claim
        assert row.right or row.figure == "borderline", (row.observed, row.figure, row.missing)
    else:
        assert observation["counter"] == "max_memory_allocated"
        assert row.error is not None and abs(row.error) <= 0.10, (row.figure, row.observed)
