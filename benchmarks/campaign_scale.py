"""Time and memory of classifying a campaign: N offers × V variants, in one process (issue 17,
point 4; goals: 10 000 × 10 under 2 s and 10 000 × 100 under 10 s on 2 cores).

The catalog is plan_speed.py's (the shared SkyPilot ``vms.csv`` rows repeated, each copy with its
own region, so accelerator names and prices are the files' own); ``--distinct-prices`` also
gives every row its own price (+0.001 USD/h per row), the worst case for the offer classes of
``decision.campaign.offer_class``. The variants are the serving example's sheet at other
concurrencies, lengths and weight formats (``variant_text``): each is a distinct workload.

What is timed: ``pipeline.campaign.plan_campaign`` on inputs already read (the base plan of every
offer plus each variant's coverage); reading the catalog is timed apart. Memory: the process's
peak RSS (``ru_maxrss``) after each run. Then how the cost grows: the same at fewer offers and
fewer variants.

Run: ``python benchmarks/campaign_scale.py [--rows N] [--variants V ...] [--distinct-prices]``.
Not a test: times depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from plan_speed import write_catalog  # noqa: E402  (the same catalog rows)

GOALS_S = {10: 2.0, 100: 10.0}
BASE = (ROOT / "examples" / "llama-3.1-8b-serving.yaml").read_text(encoding="utf-8")
"""The base workload: the serving example (8 × 8192 tokens, bf16, budget 100 USD / 3 days)."""
FORMATS = ("bf16", "fp8", "int8", "nf4")


def variant_text(count: int) -> str:
    """``count`` distinct variants of :data:`BASE`: concurrency 1..25, prompt 2048 × (1..4),
    one of four weight formats."""
    out = ["variants:"]
    for i in range(count):
        out.append(f"  - name: v{i:03d}\n    weights: {FORMATS[i % 4]}\n"
                   f"    inference: {{concurrency: {1 + i // 4 % 25}, "
                   f"prompt_tokens: {2048 * (1 + i // 100 % 4)}}}")
    return "\n".join(out) + "\n"


def run(rows: int, variants: int, distinct_prices: bool
        ) -> tuple[float, float, float, int, int]:
    """(read seconds, classify seconds wall, classify seconds CPU, peak RSS MiB, offer classes)
    of one campaign."""
    from gpusizer.decision.campaign import offer_class
    from gpusizer.pipeline import load_plan_inputs
    from gpusizer.pipeline.campaign import plan_campaign
    from gpusizer.sheet import parse_sheet_text
    sheet = parse_sheet_text(BASE + variant_text(variants))
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "vms.csv"
        write_catalog(catalog, rows, price_step=0.001 if distinct_prices else 0.0)
        t0 = time.perf_counter()
        inputs = load_plan_inputs(sheet, catalogs=[catalog])
        t1, c1 = time.perf_counter(), time.process_time()
        result = plan_campaign(inputs, today=dt.date(2026, 12, 1))
        t2, c2 = time.perf_counter(), time.process_time()
    assert result.campaign is not None and len(result.campaign.offers) == len(inputs.offers)
    classes = len({offer_class(o) for o in inputs.offers})
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return t1 - t0, t2 - t1, c2 - c1, rss, classes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--variants", type=int, nargs="*", default=[10, 100])
    ap.add_argument("--distinct-prices", action="store_true")
    ap.add_argument("--growth", action="store_true", help="also 1 000 and 3 000 offers, and "
                    "1, 3 and 30 variants")
    args = ap.parse_args()
    run(200, 2, args.distinct_prices)  # warm the imports and the registry
    cases = [(args.rows, v) for v in args.variants]
    if args.growth:
        cases += [(1_000, 10), (3_000, 10), (args.rows, 1), (args.rows, 3), (args.rows, 30)]
    prices = "a price of its own per row" if args.distinct_prices else "the catalog's prices"
    print(f"campaign classification ({prices})")
    for rows, v in cases:
        read_s, classify_s, cpu_s, rss, classes = run(rows, v, args.distinct_prices)
        goal = GOALS_S.get(v) if rows == 10_000 else None
        note = f"; {classify_s / goal:.2f} × the {goal} s goal" if goal else ""
        print(f"{rows:6d} offers ({classes} classes) × {v + 1:3d} variants (base + {v}): "
              f"classify {classify_s:.2f} s wall / {cpu_s:.2f} s CPU, read {read_s:.2f} s, "
              f"peak RSS {rss} MiB{note}")
    print("wall > CPU: other load on the machine; one process, one thread")


if __name__ == "__main__":
    main()
