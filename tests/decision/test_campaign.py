"""``decision.campaign``: the fields an offer class ignores change no criterion's state, and the
campaign block's order and cheapest covering offer, by arithmetic."""

from __future__ import annotations

import dataclasses
import datetime as dt

from gpusizer.catalog.offers import load_default_catalog
from gpusizer.decision.campaign import (IGNORED_OFFER_FIELDS, VariantSummary, campaign_of,
                                        offer_class)
from gpusizer.pipeline import load_plan_inputs, plan
from gpusizer.sheet import parse_sheet_text

SHEET = parse_sheet_text("""\
model: {id: meta-llama/Meta-Llama-3.1-8B}
task: inference
weights: bf16
inference: {prompt_tokens: 7168, new_tokens: 1024, concurrency: 8}
budget: {max_usd: 100, days: 3}
""")


def test_ignored_fields_change_no_state():
    seed, _ = load_default_catalog()  # the seed's two offers (RTX 4090, RTX 6000 Ada)
    changed = {"id": "other-id", "region": "eu-west", "document": "another.pdf",
               "version": "v9", "notes": ("a note",), "cloud": "lambda",
               "instance_type": "gpu_1x_h100_sxm5"}
    assert set(changed) == set(IGNORED_OFFER_FIELDS)
    twins = [dataclasses.replace(o, **{k: v if k != "id" else f"{o.id}-{v}"})
             for o in seed for k, v in changed.items()]
    inputs = dataclasses.replace(load_plan_inputs(SHEET), offers=tuple(seed) + tuple(twins))
    result = plan(inputs, today=dt.date(2026, 12, 1))
    states = {}
    for d in result.decisions:
        key = offer_class(d.offer)
        got = ({k: c.state for k, c in d.criteria.items()}, d.verdict,
               d.fit.state if d.fit else None)
        assert states.setdefault(key, got) == got, d.offer.id
    assert len(states) == len(seed)


def test_offer_named_by_evidence_keeps_its_own_class():
    seed, _ = load_default_catalog()
    o = seed[0]
    twin = dataclasses.replace(o, id=o.id + "-twin")
    assert offer_class(o) == offer_class(twin)
    assert offer_class(o, frozenset({o.id})) != offer_class(twin, frozenset({o.id}))


def test_campaign_order_and_cheapest_covering():
    seed, _ = load_default_catalog()
    a, b = seed[0], seed[1]
    c = dataclasses.replace(a, id="c")
    variants = [VariantSummary("base", "x", 1, 1), VariantSummary("v", "y", 2, 2)]
    # a covers both at 47.14 USD, b covers both at 55.71, c covers one at no known price
    out = campaign_of(variants, [b, c, a], [55.71, None, 47.14],
                      [("base", [True, True, True]), ("v", [True, False, True])])
    assert [o.id for o in out.offers] == [a.id, b.id, "c"]
    assert out.offers[2].covers == ("base",)
    assert out.cheapest_covering == a.id
    none = campaign_of(variants, [a], [47.14], [("base", [True]), ("v", [False])])
    assert none.cheapest_covering is None
