"""Time to the first result of the web page (issue 18 point 3; goal: under 1 s after submit):
a real uvicorn on a free loopback port (``gpusizer.web.app.BackgroundServer``), the README
example (examples/llama-3.1-8b-serving.yaml) posted as the form's fields, the time from sending
the request to having the whole result page, for the first request of a fresh server and for
the next ones.

Run: ``python benchmarks/web_speed.py [N]``; prints the first request's time, the median of the
next N (default 5) and the goal. Needs the web extra. Not a test: times depend on the machine.
"""

from __future__ import annotations

import statistics
import sys
import time
import urllib.parse
import urllib.request

GOAL_S = 1.0
README_FORM = {
    "model.id": "meta-llama/Meta-Llama-3.1-8B", "task": "inference", "weights": "bf16",
    "inference.prompt_tokens": "7168", "inference.new_tokens": "1024",
    "inference.concurrency": "8", "budget.max_usd": "100", "budget.days": "3",
}


def _post(url: str) -> float:
    body = urllib.parse.urlencode(README_FORM).encode()
    start = time.perf_counter()
    with urllib.request.urlopen(urllib.request.Request(url + "plan", data=body)) as r:
        page = r.read().decode()
    elapsed = time.perf_counter() - start
    if "estimated: fits, 17.22 GiB headroom" not in page:
        raise SystemExit("the result page lacks the README example's answer")
    return elapsed


def main(n: int = 5) -> None:
    from gpusizer.web.app import BackgroundServer
    t0 = time.perf_counter()
    with BackgroundServer() as url:
        started = time.perf_counter() - t0
        first = _post(url)
        rest = [_post(url) for _ in range(n)]
    print(f"server start (imports included): {started:.2f} s")
    print(f"first result after submit: {first * 1000:.0f} ms "
          f"({'within' if first < GOAL_S else 'OVER'} the {GOAL_S:.0f} s goal)")
    print(f"next {n}: median {statistics.median(rest) * 1000:.0f} ms, "
          f"best {min(rest) * 1000:.0f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
