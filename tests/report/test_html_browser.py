"""The HTML sheet in a real browser (issue 12 point 3): page one prints on one A4 page, and at
1280 px the whole page needs no horizontal scroll. Drives Debian's ``chromium`` headless
through ``chromium-driver`` and Selenium (the test extra; ``.ci/run`` installs both packages).
"""

from __future__ import annotations

import base64
import re

import pytest

from gpusizer.pipeline import run_plan
from gpusizer.report.html import render_html
from gpusizer.report.json_report import plan_document
from gpusizer.sheet import load_sheet

from ..browser import browser_or_skip
from ..conftest import EXAMPLES

A4_INCHES = (8.27, 11.69)  # 210 × 297 mm (ISO 216) / 25.4 mm per inch
WIDTH_PX = 1280


def _pdf_pages(browser) -> int:
    pdf = browser.execute_cdp_cmd("Page.printToPDF", {
        "paperWidth": A4_INCHES[0], "paperHeight": A4_INCHES[1], "printBackground": True,
        "preferCSSPageSize": True})
    data = base64.b64decode(pdf["data"])
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", data))


@pytest.fixture(scope="module")
def browser():
    b = browser_or_skip(WIDTH_PX)
    yield b
    b.quit()


@pytest.mark.parametrize(("sheet", "catalogs"), [
    pytest.param("llama-3.1-8b-serving.yaml", None, id="readme-example"),
    pytest.param("deepseek-v3-8xh200-vllm.yaml", [EXAMPLES / "catalogs" / "h200-lots.yaml"],
                 id="deepseek-h200-lots"),
])
def test_page_one_prints_on_one_a4_page_and_needs_no_scroll_at_1280(browser, tmp_path, sheet,
                                                                     catalogs):
    doc = plan_document(run_plan(load_sheet(EXAMPLES / sheet), catalogs=catalogs))
    page = tmp_path / "sheet.html"
    page.write_text(render_html(doc), encoding="utf-8")
    browser.get(page.as_uri())
    assert browser.execute_script("return window.innerWidth") == WIDTH_PX
    scroll = browser.execute_script("return document.documentElement.scrollWidth")
    assert scroll <= WIDTH_PX, scroll
    whole = _pdf_pages(browser)
    assert whole >= 2  # Details starts a new page
    browser.execute_script("document.getElementById('details').remove()")
    assert _pdf_pages(browser) == 1
