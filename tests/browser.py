"""Debian's ``chromium`` headless through ``chromium-driver`` and Selenium (the test extra;
``.ci/run`` installs both packages): the one driver set-up of the browser tests
(tests/report/test_html_browser.py, tests/web/)."""

from __future__ import annotations

import shutil

import pytest


def browser_or_skip(width: int = 1280, height: int = 1000):
    """A headless Chromium WebDriver at ``width`` × ``height`` px (as root: ``--no-sandbox``),
    or a skip saying what is missing."""
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="selenium not installed (pip install -e '.[test]')")
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)),
                  None)
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.skip("chromium or chromedriver not found: apt-get install chromium "
                    "chromium-driver (.ci/run does)")
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=options)
