"""The reference site (`make site`) in headless Chromium, served from 127.0.0.1: every notebook
page renders with its saved figures, searching for `prefetch` finds the input-pipeline notebook,
code cells have a copy button, the idiom has its "Copy this" anchor, and no request leaves the
machine. Screenshots go to artifacts/screenshots/site-*.png."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import deadline, site
from tests.browser.conftest import ARTIFACTS, ROOT, free_port

pytestmark = pytest.mark.browser  # drives Chromium: left out of make quick

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def listening(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1).close()
        return True
    except OSError:  # not listening yet
        return False


def saved_figures(path: Path) -> int:
    """Figures a saved notebook holds outside widget cells."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum("image/png" in out.get("data", {}) for c in cells for out in c.get("outputs", []))


@pytest.fixture(scope="module")
def served(browser_ready, tmp_path_factory) -> Iterator[str]:
    started = time.perf_counter()
    out = site.build(tmp_path_factory.mktemp("site") / "html")
    seconds = time.perf_counter() - started
    assert seconds < 120, f"make site took {seconds:.0f} s; the issue allows two minutes"
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "-b", "127.0.0.1", "-d", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline.until(lambda: listening(url), 10, f"the site's server at {url}")
        yield url
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def site_page(browser, served) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.requests = requests
    try:
        yield page
    finally:
        context.close()


def test_every_notebook_page_renders_with_its_figures(site_page, served):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for path in NOTEBOOKS:
        site_page.goto(f"{served}/notebooks/{path.stem}.html", wait_until="load")
        heading = site_page.locator("main h1").first.inner_text()
        assert heading.strip(), f"{path.name}: no title"
        images = site_page.locator("main .cell_output img")
        want = saved_figures(path)
        assert images.count() >= want, (
            f"{path.name}: {images.count()} figures on the page, {want} saved"
        )
        loaded = site_page.evaluate(
            "() => [...document.querySelectorAll('main .cell_output img')]"
            ".every(i => i.naturalWidth > 0)"
        )
        assert loaded, f"{path.name}: a figure did not load"
        assert site_page.locator("#copy-this").count() == 1, f"{path.name}: no 'Copy this' anchor"
        assert "make lab" in site_page.locator("main").inner_text()
    site_page.goto(f"{served}/notebooks/07_tune_input_pipeline.html", wait_until="load")
    site_page.screenshot(path=str(ARTIFACTS / "site-07_tune_input_pipeline.png"), full_page=False)
    outside = [
        u for u in site_page.requests if not u.startswith(served) and not u.startswith("data:")
    ]
    assert not outside, f"the site asked the network for {outside[:5]}"


def test_search_for_prefetch_lists_the_input_pipeline_notebook(site_page, served):
    site_page.goto(f"{served}/search.html?q=prefetch", wait_until="load")
    results = site_page.locator("#search-results a")
    # Sphinx lists the hits one by one; read them when it says it has finished
    site_page.locator(".search-summary", has_text="Search finished").wait_for(timeout=30000)
    links = [results.nth(i).get_attribute("href") for i in range(results.count())]
    assert any("07_tune_input_pipeline" in (link or "") for link in links), links
    site_page.screenshot(path=str(ARTIFACTS / "site-search-prefetch.png"))


def test_code_cells_have_a_copy_button_and_widgets_a_note(site_page, served):
    site_page.goto(f"{served}/notebooks/13_distribute_training.html", wait_until="load")
    buttons = site_page.locator("main div.cell_input button.copybtn")
    buttons.first.wait_for(state="attached", timeout=15000)
    assert buttons.count() >= 10
    assert site_page.locator("text=A live widget").count() >= 1
    inputs = site_page.evaluate(
        "() => [...document.querySelectorAll('main div.cell_input')]"
        ".map(e => e.innerText).join('\\n')"
    )
    assert (
        inputs and "NBVAL_" not in inputs
    )  # test-only comments left out of the code shown (outputs are as saved)
    site_page.locator("#copy-this").scroll_into_view_if_needed()
    site_page.screenshot(path=str(ARTIFACTS / "site-13-copy-this.png"))
