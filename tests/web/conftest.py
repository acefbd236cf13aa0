"""Fixtures of the web page's tests: a TestClient, a real uvicorn on a free loopback port, the
README example as form fields, and a catalog whose every text is markup. Each skips, saying
why, without the web extra."""

from __future__ import annotations

import pytest

from ..conftest import EXAMPLES

README_SHEET = EXAMPLES / "llama-3.1-8b-serving.yaml"

README_FORM = {
    "model.id": "meta-llama/Meta-Llama-3.1-8B", "task": "inference", "weights": "bf16",
    "inference.prompt_tokens": "7168", "inference.new_tokens": "1024",
    "inference.concurrency": "8", "budget.max_usd": "100", "budget.days": "3",
}
"""examples/llama-3.1-8b-serving.yaml as the form's fields (what a person types)."""

SCRIPT = "<script>alert(1)</script>"
MARKUP_CATALOG = f"""\
- id: "{SCRIPT}"
  provider: "{SCRIPT}"
  card: "{SCRIPT}"
  cards: 1
  days: 3
  usd_per_hour: 1.0
- id: "<img src=x onerror=alert(2)>"
  provider: "<b>bold</b>"
  card: RTX 6000 Ada
  cards: 1
  days: 3
  usd_per_hour: 2.0
"""
"""Offer ids, providers and a card name that are markup (issue 18 point 5)."""


def web_or_skip():
    for module in ("fastapi", "jinja2", "uvicorn", "multipart", "httpx"):
        pytest.importorskip(module, reason=f"{module} not installed: pip install -e '.[web,test]'")


@pytest.fixture(scope="module")
def client():
    web_or_skip()
    from fastapi.testclient import TestClient

    from gpusizer.web.app import create_app
    with TestClient(create_app()) as c:
        yield c


@pytest.fixture(scope="module")
def server_url():
    web_or_skip()
    from gpusizer.web.app import BackgroundServer
    with BackgroundServer() as url:
        yield url
