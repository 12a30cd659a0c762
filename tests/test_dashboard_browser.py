"""End to end: the dashboard served on 127.0.0.1, driven by headless Chromium through chromedriver.

A small W3C WebDriver client is used (a few HTTP calls) rather than selenium, whose pinned 3.x
release does not work with urllib3 2. Screenshots go to docs/screenshots/ when
NCCLSCOPE_SCREENSHOTS=1, else to the test's tmp folder.
"""
from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """Selenium 4 driving Debian's headless Chromium: open, find by CSS, text, click, type, screenshot."""

    def __init__(self, width: int = 1280, height: int = 900):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    f"--window-size={width},{height}", "--disable-extensions", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync"):
            opts.add_argument(arg)
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)

    def get(self, url: str) -> None:
        self.driver.get(url)

    def find(self, css: str) -> Any | None:
        from selenium.webdriver.common.by import By

        found = self.driver.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found else None

    def text(self, css: str) -> str:
        from selenium.common.exceptions import StaleElementReferenceException

        el = self.find(css)
        try:
            return el.text if el is not None else ""
        except StaleElementReferenceException:
            return ""

    def wait_text(self, css: str, needle: str, timeout: float = 20) -> str:
        deadline = time.time() + timeout
        last = ""
        while time.time() < deadline:
            last = self.text(css)
            if needle in last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"{css!r} never showed {needle!r}; last text: {last[:300]!r}")

    def wait_for(self, css: str, timeout: float = 20) -> Any:
        deadline = time.time() + timeout
        while time.time() < deadline:
            el = self.find(css)
            if el is not None:
                return el
            time.sleep(0.1)
        raise AssertionError(f"{css!r} never appeared")

    def click(self, css: str) -> None:
        self.wait_for(css).click()

    def send_keys(self, css: str, text: str) -> None:
        self.wait_for(css).send_keys(text)

    def url(self) -> str:
        return self.driver.current_url

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.save_screenshot(str(path))

    def quit(self) -> None:
        self.driver.quit()


class Server:
    """The app's Flask server on 127.0.0.1 in a thread, stopped and joined by ``close``."""

    def __init__(self, app: Any):
        self.httpd = make_server("127.0.0.1", 0, app.server, threaded=True)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="dash-test-server")
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if os.environ.get("NCCLSCOPE_SCREENSHOTS") == "1":
        return ROOT / "docs" / "screenshots"
    return tmp_path / "screenshots"


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("chromium / chromedriver not installed")
    b = Browser()
    try:
        yield b
    finally:
        b.quit()


def _zip_run(folder: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file():
                z.write(p, f"{folder.name}/{p.relative_to(folder)}")
    return dest


def test_pages_hang_run_and_upload(corpus: Path, tmp_path: Path, browser: Browser, shots: Path) -> None:
    rs = RunStore(tmp_path / "store")
    app = create_app(path=corpus / "hang_rank1_stuck", run_store=rs, wait=True)
    server = Server(app)
    try:
        b = browser
        b.get(server.url + "/")
        b.wait_text("#verdict-banner", "HANG")
        assert "rank 1" in b.wait_text("#culprit", "rank 1")
        b.wait_text("#job-facts", "2.28.9")
        b.wait_text("#findings", "never joined")
        b.screenshot(shots / "overview.png")

        b.click("#nav-topology")
        b.wait_text("#topo-info", "2 ranks")
        b.wait_for("#topo-graph .main-svg")
        b.wait_text("#topo-graph", "ring, channel 0")
        b.screenshot(shots / "topology.png")

        b.click("#nav-timeline")
        b.wait_text("#tl-graph", "process group 0")
        b.wait_text("#tl-graph", "stuck: allreduce #126")
        b.screenshot(shots / "timeline.png")

        b.click("#nav-hotspots")
        b.wait_text("#hs-share", "share of collective time")
        b.wait_text("#hs-busbw", "bus bandwidth")
        b.wait_text("#hs-wait", "waiting time")
        b.screenshot(shots / "hotspots.png")

        b.click("#nav-hang")
        body = b.wait_text("#hang-body", "never joined #126")
        assert "rank 1" in body and "waiting in #126" in body
        b.screenshot(shots / "hang.png")

        # an evidence link from the overview lands on the log view at that line
        b.click("#nav-overview")
        b.wait_text("#findings", "stderr.log")
        b.click("#findings a.ev-link[href*='stderr.log']")
        b.wait_text("#log-info", "highlighted")
        assert "/logs" in b.url()
        b.wait_text("#log-table", "Watchdog caught collective operation timeout")
        b.screenshot(shots / "logs.png")

        # filter by search on the server side
        b.click("#nav-logs")
        b.wait_text("#log-info", "lines")
        b.send_keys(f"#{'log-search'}", "SeqNum=126\n")
        info = b.wait_text("#log-info", " of ")
        assert int(info.split(" of ")[0].replace(",", "")) < int(info.split(" of ")[1].split()[0].replace(",", ""))

        # upload a zipped healthy run and see its verdict
        z = _zip_run(corpus / "healthy_ddp_p2p", tmp_path / "healthy.zip")
        b.click("#nav-overview")
        b.wait_text("#verdict-banner", "HANG")
        b.send_keys("#upload input[type=file]", str(z))
        try:
            b.wait_text("#verdict-banner", "HEALTHY", timeout=60)
        except AssertionError:
            raise AssertionError(f"upload: {b.text('#upload-status')!r} job: {b.text('#job-status')!r}") from None
        b.wait_text("#job-facts", "2.28.9")
        b.click("#nav-topology")
        b.wait_text("#topo-comm", "0x9913440b67c3cc19")
        b.screenshot(shots / "upload.png")
    finally:
        server.close()
        rs.close()


def test_token_required_beyond_loopback(corpus: Path, tmp_path: Path) -> None:
    rs = RunStore(tmp_path / "store")
    app = create_app(run_store=rs, token="s3cret-token")
    server = Server(app)
    try:
        def get(path: str, cookie: str | None = None) -> tuple[int, dict[str, str]]:
            class NoRedirect(urllib.request.HTTPRedirectHandler):
                def redirect_request(self, *a: Any, **k: Any) -> None:
                    return None
            opener = urllib.request.build_opener(NoRedirect)
            req = urllib.request.Request(server.url + path, headers={"Cookie": cookie} if cookie else {})
            try:
                with opener.open(req, timeout=10) as r:
                    return r.status, dict(r.headers)
            except urllib.error.HTTPError as e:
                return e.code, dict(e.headers)

        assert get("/")[0] == 403
        assert get("/_dash-layout")[0] == 403
        assert get("/?token=wrong")[0] == 403
        status, headers = get("/?token=s3cret-token")
        assert status == 302 and "ncclscope_token=s3cret-token" in headers.get("Set-Cookie", "")
        assert get("/_dash-layout", cookie="ncclscope_token=s3cret-token")[0] == 200
        assert get("/_dash-layout", cookie="ncclscope_token=other")[0] == 403
    finally:
        server.close()
        rs.close()
