"""End to end: the dashboard served on 127.0.0.1, driven by headless Chromium through chromedriver.

Selenium 4 drives the browser; the app runs on the server `ncclscope serve` uses (waitress, with its
token: the first page is opened with ``?token=``, as the printed URL is). Every wait ends on the element
or text it waits for; its bound (``WAIT_S``) only ends a test that has failed. How long pages take is
measured in benchmarks/dashboard_pages.py, not asserted here. Screenshots go to docs/screenshots/ when
NCCLSCOPE_SCREENSHOTS=1, else to the test's tmp folder.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ncclscope.dashboard.access import headers_carry_token
from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore
from ncclscope.dashboard.server import Limits, make_server

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser")]
WAIT_S = 120.0  # a bound for a failing test only: each wait ends on the element or text it waits for


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

    def wait_text(self, css: str, needle: str, timeout: float = WAIT_S) -> str:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            last = self.text(css)
            if needle in last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"{css!r} never showed {needle!r}; last text: {last[:300]!r}")

    def wait_match(self, css: str, ok: Callable[[str], bool], what: str, timeout: float = WAIT_S) -> str:
        """Wait until the element's text satisfies `ok`: a callback that has not run yet shows the old text."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            last = self.text(css)
            if ok(last):
                return last
            time.sleep(0.1)
        raise AssertionError(f"{css!r} never showed {what}; last text: {last[:300]!r}")

    def wait_for(self, css: str, timeout: float = WAIT_S) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
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
    """The app on 127.0.0.1 in a thread, on the server `serve` runs, stopped and joined by ``close``."""

    def __init__(self, app: Any):
        self.token = app.server.config["ncclscope_token"]
        self.httpd = make_server(app.server, "127.0.0.1", 0, Limits(),
                                 admit=lambda headers, query: headers_carry_token(self.token, headers, query))
        self.url = f"http://127.0.0.1:{self.httpd.port}"
        self.thread = threading.Thread(target=self.httpd.run, name="dash-test-server")
        self.thread.start()

    def link(self, path: str = "/") -> str:
        """``path`` with the token, as `serve` prints it: the page sets the cookie the later requests carry."""
        return f"{self.url}{path}?token={self.token}"

    def close(self) -> None:
        self.httpd.stop()
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


def _filtered(info: str) -> bool:
    """'12 of 873 lines ...': the search has been applied on the server and kept fewer lines than there are."""
    m = re.match(r"([\d,]+) of ([\d,]+) lines", info)
    return m is not None and int(m[1].replace(",", "")) < int(m[2].replace(",", ""))


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
        b.get(server.link("/"))
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
        b.wait_match("#log-info", _filtered, "fewer lines than the whole log after the search")

        # upload a zipped healthy run and see its verdict
        z = _zip_run(corpus / "healthy_ddp_p2p", tmp_path / "healthy.zip")
        b.click("#nav-overview")
        b.wait_text("#verdict-banner", "HANG")
        b.send_keys("#upload input[type=file]", str(z))
        try:
            b.wait_text("#verdict-banner", "HEALTHY")
        except AssertionError:
            raise AssertionError(f"upload: {b.text('#upload-status')!r} job: {b.text('#job-status')!r}") from None
        b.wait_text("#job-facts", "2.28.9")
        b.click("#nav-topology")
        b.wait_text("#topo-comm", "0x9913440b67c3cc19")
        b.screenshot(shots / "upload.png")
    finally:
        server.close()
        rs.close()


def test_every_request_needs_the_token(corpus: Path, tmp_path: Path) -> None:
    """On loopback too: pages and callbacks' routes refuse a request without the token; ?token= sets the
    port's cookie and sends the page to itself without the token; a wrong cookie or token is refused."""
    rs = RunStore(tmp_path / "store")
    app = create_app(run_store=rs, token="s3cret-token-of-the-test")
    server = Server(app)
    port = server.url.rsplit(":", 1)[1]
    try:
        def get(path: str, cookie: str | None = None) -> tuple[int, dict[str, str]]:
            class NoRedirect(urllib.request.HTTPRedirectHandler):
                def redirect_request(self, *a: Any, **k: Any) -> None:
                    return None
            opener = urllib.request.build_opener(NoRedirect)
            req = urllib.request.Request(server.url + path, headers={"Cookie": cookie} if cookie else {})
            try:
                with opener.open(req, timeout=30) as r:
                    return r.status, dict(r.headers)
            except urllib.error.HTTPError as e:
                return e.code, dict(e.headers)

        assert get("/")[0] == 403
        assert get("/_dash-layout")[0] == 403
        assert get("/?token=wrong")[0] == 403
        status, headers = get("/?token=s3cret-token-of-the-test")
        assert status == 302 and headers.get("Location", "").endswith("/") and "token" not in headers["Location"]
        assert f"ncclscope_token_{port}=s3cret-token-of-the-test" in headers.get("Set-Cookie", "")
        assert get("/_dash-layout", cookie=f"ncclscope_token_{port}=s3cret-token-of-the-test")[0] == 200
        assert get("/_dash-layout", cookie=f"ncclscope_token_{port}=other")[0] == 403
        assert get("/_dash-layout", cookie="ncclscope_token_1=s3cret-token-of-the-test")[0] == 403  # another port's
    finally:
        server.close()
        rs.close()


# -- every kind of input: a real gloo hang, the bundled GPU hang, a generated 1,024-rank run ------------
GLOO_RANKS = 3
HANG_RANK = 2


def _table_rows(b: Browser, css: str) -> list[dict[str, str]]:
    """The rows of an html table as dicts by its header cells."""
    from selenium.webdriver.common.by import By

    table = b.wait_for(css + " table")
    head = [th.text.strip() for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    return [dict(zip(head, (td.text.strip() for td in tr.find_elements(By.CSS_SELECTOR, "td")), strict=False))
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]


def _datatable_rows(b: Browser, css: str) -> list[dict[str, str]]:
    """The rows of a dash DataTable as dicts by column id."""
    from selenium.webdriver.common.by import By

    out = []
    for tr in b.wait_for(css).find_elements(By.CSS_SELECTOR, "tr"):
        cells = tr.find_elements(By.CSS_SELECTOR, "td[data-dash-column]")
        if cells:
            out.append({c.get_attribute("data-dash-column"): c.text.strip() for c in cells})
    return out


@pytest.fixture(scope="module")
def gloo_hang(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real 3-rank gloo DDP job under `ncclscope run`; rank 2 sleeps at step 4, the others wait in its
    all-reduce until gloo's 8 s timeout ends them."""
    pytest.importorskip("torch")
    import subprocess
    import sys

    run_dir = tmp_path_factory.mktemp("gloo") / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_", "JOB_"))}
    env.update({"GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1", "JOB_BACKEND": "gloo",
                "JOB_PG_TIMEOUT": "8", "JOB_STEPS": "10", "JOB_HANG_RANK": str(HANG_RANK), "JOB_HANG_STEP": "4",
                "NCCLSCOPE_HOOK_HB_S": "0.5", "NCCLSCOPE_HOOK_STALL_S": "2"})
    cmd = [sys.executable, "-m", "ncclscope", "run", "--run-dir", str(run_dir), "--quiet", "--",
           sys.executable, "-m", "torch.distributed.run", "--nnodes=1", f"--nproc_per_node={GLOO_RANKS}",
           "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:0", str(ROOT / "tests" / "jobs" / "train_job.py")]
    subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert (run_dir / "ncclscope-rank0.jsonl").exists(), "the job left no hook records"
    return run_dir


@pytest.mark.slow
def test_gloo_hang_pages(gloo_hang: Path, tmp_path: Path, browser: Browser, shots: Path) -> None:
    """A hook-and-Flight-Recorder-only run (no NCCL log): completed collectives drawn completed, the rank
    that never joined marked as such, culprit flags equal to the verdict's, Hotspots filled."""
    from ncclscope.analysis import analyze_paths

    a = analyze_paths([gloo_hang], cache=False)
    d = a.decision
    assert d.stuck is not None, d
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(path=gloo_hang, run_store=rs, wait=True))
    try:
        b = browser
        b.get(server.link("/"))
        b.wait_text("#verdict-banner", d.verdict.value.upper())
        facts = b.wait_text("#job-facts", "world size")
        assert "hosts 0:" not in facts and "communicators 0" not in facts and "gloo has none" in facts
        b.screenshot(shots / "gloo-overview.png")

        b.click("#nav-timeline")
        b.wait_text("#tl-graph", "never joined (1)")
        rows = {int(r["rank"]): r for r in _table_rows(b, "#tl-counts-table")}
        assert sorted(rows) == list(range(GLOO_RANKS))
        for r, row in rows.items():
            # every collective before the stuck one completed on every rank; only the stuck one is open
            assert int(row["completed"]) == d.stuck.seq - 1, row
            want = "never joined" if r == HANG_RANK else "waiting in"
            assert row["at stuck"] == f"{want} #{d.stuck.seq}", row
            assert int(row["not completed"]) == (0 if r == HANG_RANK else 1), row
            assert (row["culprit"] == "yes") == (r in d.culprit_ranks)
        b.screenshot(shots / "gloo-timeline.png")

        b.click("#nav-hang")
        b.wait_text("#hang-body", f"#{d.stuck.seq}")
        table = [r for r in _datatable_rows(b, "#hang-ranks") if r.get("pg") == d.stuck.pg]
        assert {int(r["rank"]) for r in table if r["culprit"] == "yes"} == set(d.culprit_ranks)
        assert {int(r["rank"]): r["at_stuck"] for r in table} == {
            r: f"{'never joined' if r == HANG_RANK else 'waiting in'} #{d.stuck.seq}" for r in range(GLOO_RANKS)}
        b.screenshot(shots / "gloo-hang.png")

        b.click("#nav-hotspots")
        b.wait_text("#hs-share", "share of collective time")
        b.wait_for("#hs-top-table")
        assert "no collective durations" not in b.text("#hs-share")
        b.wait_text("#hs-volume", "communication volume")
        b.screenshot(shots / "gloo-hotspots.png")

        b.click("#nav-topology")
        b.wait_text("#topo-empty", "no NCCL communicator")
        assert not b.find("#topo-controls").is_displayed()  # no empty dropdowns
    finally:
        server.close()
        rs.close()


@pytest.mark.slow
def test_gloo_hang_exports(gloo_hang: Path, tmp_path: Path) -> None:
    """The same real gloo hang exported: a Perfetto track per rank, the never-joined rank marked, and the
    Prometheus state showing it behind."""
    from ncclscope.cli import main
    from prometheus_client.parser import text_string_to_metric_families

    trace, prom = tmp_path / "t.json", tmp_path / "s.prom"
    assert main(["export", str(gloo_hang), "--perfetto", str(trace), "--prometheus", str(prom), "--no-cache"]) == 0
    evs = json.loads(trace.read_text())["traceEvents"]
    assert {e["pid"] for e in evs if e["ph"] == "X"} == set(range(GLOO_RANKS))
    assert [e["pid"] for e in evs if e["ph"] == "i"] == [HANG_RANK]
    stuck = {e["pid"] for e in evs if e["ph"] == "X" and e["args"]["stuck"]}
    assert stuck == set(range(GLOO_RANKS)) - {HANG_RANK}
    fams = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    enq = {int(s.labels["rank"]): s.value for s in fams["ncclscope_rank_last_enqueued_seq"].samples
           if s.labels["pg"] == "0"}
    assert enq[HANG_RANK] == min(enq.values()) < max(enq.values())


def test_gpu_hang_sample_pages(tmp_path: Path, browser: Browser, shots: Path) -> None:
    """The bundled GPU hang (NCCL logs, Flight Recorder, hook): every page, and an evidence link that
    lands on its log line scrolled into view."""
    sample = ROOT / "samples" / "gpu_hang"
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(path=sample, run_store=rs, wait=True))
    try:
        b = browser
        b.get(server.link("/"))
        b.wait_text("#verdict-banner", "HANG")
        b.screenshot(shots / "gpu-overview.png")
        b.click("#nav-topology")
        b.wait_text("#topo-graph", "ring, channel")
        assert "edges of the culprit" in b.text("#topo-graph")
        b.screenshot(shots / "gpu-topology.png")
        b.click("#nav-timeline")
        b.wait_text("#tl-graph", "never joined (1)")
        b.screenshot(shots / "gpu-timeline.png")
        b.click("#nav-hotspots")
        b.wait_text("#hs-top-table", "allreduce of ~2^25 B")
        b.wait_text("#hs-busbw", "bus bandwidth")
        b.screenshot(shots / "gpu-hotspots.png")
        b.click("#nav-hang")
        b.wait_text("#hang-body", "never joined #125")
        b.screenshot(shots / "gpu-hang.png")
        b.click("#nav-overview")
        link = b.wait_for("#findings a.ev-link[href*='stderr.log']")
        target = link.get_attribute("href").split("line=")[1]
        link.click()
        b.wait_text("#log-info", "highlighted")
        b.wait_match("body", lambda _t: bool(b.driver.execute_script(
            "return document.body.getAttribute('data-scrolled-to')")), "the scroll to the evidence line")
        assert b.driver.execute_script("return document.body.getAttribute('data-scrolled-to')") == f"stderr.log:{target}"
        in_view = b.driver.execute_script(
            "var r = document.querySelector('tr[data-evidence]').getBoundingClientRect();"
            "return r.top >= 0 && r.bottom <= window.innerHeight;")
        assert in_view
        b.screenshot(shots / "gpu-logs.png")
    finally:
        server.close()
        rs.close()


def test_1024_ranks_every_page_renders(tmp_path: Path, browser: Browser, shots: Path) -> None:
    """A generated 1,024-rank NCCL-log run: each page, opened cold, shows its content (how long each takes:
    benchmarks/dashboard_pages.py)."""
    from ncclscope.synth import generate_run

    truth = generate_run(tmp_path / "run", nranks=1024, steps=6, fault="hang")
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(path=tmp_path / "run", run_store=rs, wait=True))
    culprit = truth.culprit_ranks[0]
    try:
        b = browser
        b.get(server.link("/"))
        b.wait_text("#verdict-banner", "HANG")
        b.screenshot(shots / "synth1024-overview.png")
        for nav, css, needle in pages_of_1024(culprit):
            b.click(nav)
            b.wait_text(css, needle)
            b.screenshot(shots / f"synth1024-{nav.split('-')[1]}.png")
    finally:
        server.close()
        rs.close()


def pages_of_1024(culprit: int) -> list[tuple[str, str, str]]:
    """(navigation link, element, text it shows once rendered) for each page of the 1,024-rank run."""
    return [("#nav-topology", "#topo-graph", "hosts: 128"), ("#nav-timeline", "#tl-graph", f"rank {culprit}"),
            ("#nav-hotspots", "#hs-volume", "communication volume"), ("#nav-hang", "#hang-body", f"rank {culprit}"),
            ("#nav-logs", "#log-info", " of "), ("#nav-overview", "#findings", f"rank {culprit}")]


def test_upload_status_says_the_outcome_and_logs_open_on_the_evidence(tmp_path: Path, browser: Browser) -> None:
    """An upload's line ends on its verdict (it stayed on 'analysing...'); the Logs page, opened from the
    navigation, starts at the verdict's evidence line scrolled into view, heartbeats hidden until asked for."""
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(run_store=rs))
    try:
        b = browser
        b.get(server.link("/"))
        b.send_keys("#upload input[type=file]", str(_zip_run(ROOT / "samples" / "gpu_hang", tmp_path / "run.zip")))
        done = b.wait_text("#upload-done", "hang: rank 1 never joined")
        assert done.startswith("run.zip: analysed in") and "analysing" not in b.text("#upload-status")
        b.wait_text("#verdict-banner", "HANG")

        b.click("#nav-logs")
        info = b.wait_text("#log-info", "the verdict's evidence: ")
        m = re.search(r"the verdict's evidence: (\S+) line (\d+) highlighted", info)
        assert m and m[1].startswith("run.zip.d/gpu_hang/") and m[1].endswith(".log"), info  # a log, not a hook record
        assert "heartbeat records of the hook hidden" in info
        b.wait_match("body", lambda _t: b.driver.execute_script(
            "return document.body.getAttribute('data-scrolled-to')") == f"{m[1]}:{m[2]}", "the scroll to that line")
        rows = _datatable_rows(b, "#log-table")
        assert rows[0]["file"].endswith(".log") and not any(r["subsys"] == "HEARTBEAT" for r in rows)
        assert any(r["file"] == m[1] and r["line"] == m[2] for r in rows)

        b.click("#log-show input[type=checkbox]")
        b.wait_match("#log-info", lambda t: t.startswith("1,019 of 1,019 lines"), "every line, heartbeats included")
    finally:
        server.close()
        rs.close()


def test_an_upload_past_the_memory_budget_is_refused_on_the_page(tmp_path: Path, browser: Browser,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory gate answers the upload's own callback: the refusal is shown under the upload box."""
    from ncclscope.dashboard import uploads

    monkeypatch.setattr(uploads, "GATE_MIN_BYTES", 32 * 1024)
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(run_store=rs))
    rs.memory.limit = 1024  # as if other uploads held the rest
    try:
        b = browser
        b.get(server.link("/"))
        b.send_keys("#upload input[type=file]", str(_zip_run(ROOT / "samples" / "gpu_hang", tmp_path / "run.zip")))
        said = b.wait_text("#upload-error", "upload refused")
        assert "memory" in said and "try again once they are analysed" in said
        assert rs.memory.used == 0 and rs.status(None) is None
    finally:
        server.close()
        rs.close()
