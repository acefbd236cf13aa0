"""The screenshots of docs/web.md (form, result, cards): the web page on a free loopback port,
Debian's chromium headless (tests/browser.py), the README example typed in the form.

Run from the repository root: ``python docs/web/take_screenshots.py``; writes form.png,
result.png and cards.png beside this file (1280 px wide, the viewport's first 1000 px).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser import browser_or_skip  # noqa: E402
from tests.web.test_browser import fill_readme_example, submit  # noqa: E402

from gpusizer.web.app import BackgroundServer  # noqa: E402


def main() -> None:
    with BackgroundServer() as url:
        b = browser_or_skip(1280, 1000)
        try:
            fill_readme_example(b, url)
            b.save_screenshot(str(HERE / "form.png"))
            submit(b)
            b.save_screenshot(str(HERE / "result.png"))
            b.execute_script("document.getElementById('phase-chart').scrollIntoView()")
            b.save_screenshot(str(HERE / "result-chart.png"))
            fill_readme_example(b, url)
            submit(b, "submit-cards", "cards-answer")
            b.save_screenshot(str(HERE / "cards.png"))
        finally:
            b.quit()
    for name in ("form", "result", "result-chart", "cards"):
        print(HERE / f"{name}.png", (HERE / f"{name}.png").stat().st_size, "bytes")


if __name__ == "__main__":
    main()
