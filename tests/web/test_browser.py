"""The web page in a real browser (issue 18 point 4): uvicorn on a free loopback port, Debian's
chromium headless through Selenium (tests/browser.py). The README example typed into the form,
submitted, and the shortlist and the phase chart read from the page; a catalog of markup shown
as text with no script element created. Skips, saying why, without chromium, chromedriver or
the web extra."""

from __future__ import annotations

import pytest

from ..browser import browser_or_skip
from .conftest import MARKUP_CATALOG, README_FORM, SCRIPT


@pytest.fixture(scope="module")
def browser(server_url):
    b = browser_or_skip(1280, 1000)
    yield b
    b.quit()


def fill_readme_example(browser, url):
    """Type the README example into the sheet form at ``url`` (selects chosen, defaults kept)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    browser.get(url)
    for name, value in README_FORM.items():
        el = browser.find_element(By.ID, f"f-{name}")
        if el.tag_name == "select":
            Select(el).select_by_value(value)
        else:
            el.clear()
            el.send_keys(value)


def submit(browser, button="submit-plan", wait_for="phase-chart"):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    browser.find_element(By.ID, button).click()
    WebDriverWait(browser, 20).until(
        lambda d: d.find_elements(By.ID, wait_for) or d.find_elements(By.CSS_SELECTOR, ".error"))
    errors = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".error")]
    assert not errors, errors


def test_the_readme_example_in_the_browser(browser, server_url):
    from selenium.webdriver.common.by import By
    fill_readme_example(browser, server_url)
    preview = browser.find_element(By.ID, "yaml-preview").text
    assert preview.startswith("model:\n  id: meta-llama/Meta-Llama-3.1-8B\ntask: inference\n")
    assert "concurrency: 8" in preview
    submit(browser)
    answer = browser.find_element(By.CSS_SELECTOR, "ul.answer li").text
    assert answer.startswith("Answer: seed-rtx-6000-ada")
    assert "estimated: fits, 17.10 GiB headroom" in answer
    chart = browser.find_element(By.ID, "phase-chart")
    bars = chart.find_elements(By.CSS_SELECTOR, "g.bar")
    assert [b.get_attribute("data-phase") for b in bars] == ["load", "prefill", "decode"]
    assert all(b.find_elements(By.CSS_SELECTOR, "rect.seg") for b in bars)
    assert browser.find_element(By.ID, "device-label").text == \
        "device 47.99 GiB (seed-rtx-6000-ada)"


def test_another_offer_moves_the_device_line(browser, server_url):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    fill_readme_example(browser, server_url)
    submit(browser)
    Select(browser.find_element(By.ID, "chart-offer")).select_by_value("seed-rtx-4090")
    # RTX 4090: 25 386 352 640 B = 23.64 GiB (the card table's device bytes)
    assert browser.find_element(By.ID, "device-label").text.startswith("device 23.")
    assert "(seed-rtx-4090)" in browser.find_element(By.ID, "device-label").text


def test_offers_sort_and_filter(browser, server_url):
    from selenium.webdriver.common.by import By
    fill_readme_example(browser, server_url)
    submit(browser)
    ids = lambda: [r.find_element(By.CSS_SELECTOR, ".offer-id").text  # noqa: E731
                   for r in browser.find_elements(By.CSS_SELECTOR, "#offers tbody tr")
                   if r.is_displayed()]
    assert ids() == ["seed-rtx-6000-ada", "seed-rtx-4090"]
    usd = browser.find_elements(By.CSS_SELECTOR, "#offers thead button.sort")[4]
    browser.execute_script("arguments[0].click()", usd)  # total USD, ascending: 47.14 before 55.71
    assert ids() == ["seed-rtx-4090", "seed-rtx-6000-ada"]
    browser.find_element(By.ID, "offer-filter").send_keys("6000")
    assert ids() == ["seed-rtx-6000-ada"]
    details = browser.find_element(By.CSS_SELECTOR, "#offers details.criterion")
    assert details.get_attribute("open") is None
    browser.execute_script("arguments[0].click()",
                           details.find_element(By.TAG_NAME, "summary"))
    assert details.get_attribute("open") == "true"


def test_markup_in_an_uploaded_catalog_stays_text_in_the_dom(browser, server_url, tmp_path):
    from selenium.webdriver.common.by import By
    catalog = tmp_path / "markup.yaml"
    catalog.write_text(MARKUP_CATALOG, encoding="utf-8")
    fill_readme_example(browser, server_url)
    browser.find_element(By.ID, "f-catalogs").send_keys(str(catalog))
    submit(browser)
    scripts = browser.execute_script(
        "return Array.from(document.scripts).map(s => s.getAttribute('src'))")
    assert scripts == ["/static/gpusizer.js"]     # no script element created by the data
    assert browser.find_elements(By.CSS_SELECTOR, "#offers img, #offers b") == []
    ids = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#offers .offer-id")]
    assert SCRIPT in ids and "<img src=x onerror=alert(2)>" in ids
    assert SCRIPT in [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#offers .provider")]
    assert f"{SCRIPT} × 1" in [e.text for e in browser.find_elements(By.CSS_SELECTOR,
                                                                       "#offers .card")]
    assert browser.execute_script("return window.__xss === undefined")


def test_the_cards_view_in_the_browser(browser, server_url):
    from selenium.webdriver.common.by import By
    fill_readme_example(browser, server_url)
    submit(browser, "submit-cards", "cards-answer")
    assert browser.find_element(By.ID, "cards-answer").text.startswith("fewest GPUs that fit: 1")
