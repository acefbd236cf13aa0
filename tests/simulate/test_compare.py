"""The difference to estimate, on hand-made item tables."""

from __future__ import annotations

from gpusizer.memory.items import Item, MemoryEstimate
from gpusizer.simulate.compare import ITEM_MAPPING, compare_estimates


def _mem(items, phases):
    return MemoryEstimate(weights_bytes=0, reserve_bytes=0, items=tuple(items),
                          phase_names=phases, lower_bound_items=(), lower_bound_phase="load")


def test_phase_and_item_differences():
    sim = _mem([Item("weights", 1000, "simulated", ("load", "forward"), "s"),
                Item("activations", 300, "simulated", ("forward",), "s"),
                Item("temporaries", 50, "simulated", ("forward",), "s")], ("load", "forward"))
    est = _mem([Item("weights", 1000, "estimated", ("load", "forward", "export"), "e"),
                Item("activations", 200, "estimated", ("forward",), "e"),
                Item("logits", 40, "estimated", ("forward",), "e"),
                Item("gradients", None, "estimated", ("backward",), "e", unknown_reason="x")],
               ("load", "forward", "export"))
    d = compare_estimates(sim, est)
    phases = {p["phase"]: p for p in d["phases"]}
    assert phases["load"]["difference_bytes"] == 0
    # forward: 1000 + 300 + 50 simulated vs 1000 + 200 + 40 estimated
    assert phases["forward"]["difference_bytes"] == 1350 - 1240
    assert phases["export"]["simulated_peak_bytes"] is None
    assert phases["export"]["difference_bytes"] is None
    items = {(i["item"], i["phase"]): i for i in d["items"]}
    act = items[("activations", "forward")]
    assert act["estimate_items"] == ["activations", "logits"]
    assert act["difference_bytes"] == 300 - 240
    assert items[("temporaries", "forward")]["estimate_bytes"] is None   # no such estimate item
    assert items[("working_total", "forward")]["difference_bytes"] == 350 - 240


def test_unknown_estimate_item_gives_null():
    sim = _mem([Item("gradients", 70, "simulated", ("backward",), "s")], ("backward",))
    est = _mem([Item("gradients", None, "estimated", ("backward",), "e", unknown_reason="x")],
               ("backward",))
    d = compare_estimates(sim, est)
    assert d["phases"][0]["estimate_peak_bytes"] is None
    assert d["phases"][0]["difference_bytes"] is None
    assert d["items"][0]["estimate_bytes"] is None


def test_every_simulated_item_has_a_mapping():
    from gpusizer.simulate.engine import CATEGORY_ITEMS
    assert set(CATEGORY_ITEMS.values()) - {"buffers"} <= set(ITEM_MAPPING)
