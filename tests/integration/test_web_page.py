"""The web page at ``/`` in a real headless Chromium (Selenium, Debian's chromium and
chromedriver; never a driver download) against a real server on the sample corpus, with
the bearer token on: ask a question, see results with citations, open a document's text and
a node's neighbourhood, and save a screenshot under build/; then ask in ``graph`` mode and see
the walk's entry points and edges in a node's neighbourhood (a second screenshot)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.service.server_process import ServerHandle, server_process

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOT = Path(__file__).resolve().parents[2] / "build" / "web-page.png"
WALK_SCREENSHOT = SCREENSHOT.with_name("web-page-walk.png")
TOKEN = "page-token"

if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
    pytest.skip(
        "Debian chromium + chromium-driver not installed (make test-browser installs them)",
        allow_module_level=True,
    )
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402


@pytest.fixture(scope="module")
def page_server(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[ServerHandle]:
    from graphstrata.bindings.api import Index

    path = tmp_path_factory.mktemp("page") / "sample"
    Index.create(path, embedder=hashing_embedder).insert(sample_docs)
    with server_process(path, ["--token", TOKEN]) as handle:
        yield handle
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[object]:
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium')}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_question_results_citations_and_neighbourhood(page_server, browser) -> None:
    wait = WebDriverWait(browser, 60)
    browser.get(page_server.url + "/")
    token = browser.find_element(By.ID, "token")
    token.send_keys(TOKEN)
    browser.execute_script("arguments[0].dispatchEvent(new Event('change'))", token)
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "index(es) served"))
    assert "sample" in browser.find_element(By.ID, "index").text
    assert "documents" in browser.find_element(By.ID, "stats-line").text
    assert browser.execute_script("return sessionStorage.getItem('graphstrata-token')") == TOKEN

    browser.find_element(By.ID, "query").send_keys("Who founded Meridian Optics?")
    browser.find_element(By.ID, "go").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#results li.result")))
    results = browser.find_elements(By.CSS_SELECTOR, "#results li.result")
    assert results
    first = results[0]
    assert first.find_element(By.CSS_SELECTOR, ".kind").text
    assert "score" in first.find_element(By.CSS_SELECTOR, ".score").text
    assert "tokens" in first.find_element(By.CSS_SELECTOR, ".tokens").text
    citations = browser.find_elements(By.CSS_SELECTOR, "#results .citation")
    assert any(c.text.startswith("optics/") for c in citations)
    assert "Veld" in browser.find_element(By.ID, "answer").text

    cited = next(c for c in citations if c.text.startswith("optics/"))
    doc_id = cited.text
    cited.click()
    wait.until(lambda d: d.find_element(By.ID, "doc").get_attribute("data-doc") == doc_id)
    assert len(browser.find_element(By.ID, "doc").text) > 100

    first.find_element(By.CSS_SELECTOR, ".hood").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#graph g.node.center")))
    assert "Node " in browser.find_element(By.ID, "detail").text
    drawn = browser.find_elements(By.CSS_SELECTOR, "#graph g.node")
    edges = browser.find_elements(By.CSS_SELECTOR, "#graph line")
    assert len(drawn) >= 2 and edges

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000


def test_graph_walk_entry_points_and_edges_in_the_neighbourhood(page_server, browser) -> None:
    wait = WebDriverWait(browser, 60)
    browser.get(page_server.url + "/")  # the token is kept in the session
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "index(es) served"))
    Select(browser.find_element(By.ID, "mode")).select_by_value("graph")
    browser.find_element(By.ID, "with-answer").click()  # retrieval only
    browser.find_element(By.ID, "query").send_keys("Who founded Meridian Optics?")
    browser.find_element(By.ID, "go").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "(graph)"))
    results = browser.find_elements(By.CSS_SELECTOR, "#results li.result")
    assert results and browser.find_element(By.ID, "answer").text == ""
    results[0].find_element(By.CSS_SELECTOR, ".hood").click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#graph line.walk")))
    walk_line = browser.find_element(By.ID, "walk-line").text
    assert "Graph walk of" in walk_line and "entry points" in walk_line
    walk_edges = browser.find_elements(By.CSS_SELECTOR, "#graph line.walk")
    plain_edges = browser.find_elements(By.CSS_SELECTOR, "#graph line.edge")
    entries = browser.find_elements(By.CSS_SELECTOR, "#graph g.node.entry circle.entry-ring")
    assert walk_edges and plain_edges and entries
    # Walk edges are drawn apart from the other edges: another colour, an arrow, a width.
    first = walk_edges[0]
    assert first.get_attribute("stroke") != plain_edges[0].get_attribute("stroke")
    assert first.get_attribute("marker-end") == "url(#walk-arrow)"
    assert float(first.get_attribute("stroke-width")) >= 1.5
    legend = browser.find_element(By.ID, "graph-legend").text
    assert "walk edge" in legend and "entry point" in legend
    # Every walk edge ends on drawn nodes; the entry points are among them.
    drawn = {
        g.get_attribute("data-node")
        for g in browser.find_elements(By.CSS_SELECTOR, "#graph g.node")
    }
    assert {e.find_element(By.XPATH, "..").get_attribute("data-node") for e in entries} <= drawn
    WALK_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(WALK_SCREENSHOT))
    assert WALK_SCREENSHOT.stat().st_size > 10_000
