"""End to end: the dashboard served on 127.0.0.1, driven by headless Chromium through chromedriver.

A small W3C WebDriver client is used (a few HTTP calls) rather than selenium, whose pinned 3.x
release does not work with urllib3 2. Screenshots go to docs/screenshots/ when
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
from pathlib import Path
from typing import Any, Callable

import pytest
from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore
from werkzeug.serving import make_server

ROOT = Path(__file__).resolve().parents[2]
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

    def wait_match(self, css: str, ok: Callable[[str], bool], what: str, timeout: float = 20) -> str:
        """Wait until the element's text satisfies `ok`: a callback that has not run yet shows the old text."""
        deadline = time.time() + timeout
        last = ""
        while time.time() < deadline:
            last = self.text(css)
            if ok(last):
                return last
            time.sleep(0.1)
        raise AssertionError(f"{css!r} never showed {what}; last text: {last[:300]!r}")

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
        b.wait_match("#log-info", _filtered, "fewer lines than the whole log after the search")

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


# -- every kind of input: a real gloo hang, the bundled GPU hang, a generated 1,024-rank run ------------
GLOO_RANKS = 3
HANG_RANK = 2
PAGE_BUDGET_S = 2.0


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
    subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
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
        b.get(server.url + "/")
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
        b.get(server.url + "/")
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
        deadline = time.time() + 10
        while time.time() < deadline and not b.driver.execute_script(
                "return document.body.getAttribute('data-scrolled-to')"):
            time.sleep(0.1)
        assert b.driver.execute_script("return document.body.getAttribute('data-scrolled-to')") == f"stderr.log:{target}"
        in_view = b.driver.execute_script(
            "var r = document.querySelector('tr[data-evidence]').getBoundingClientRect();"
            "return r.top >= 0 && r.bottom <= window.innerHeight;")
        assert in_view
        b.screenshot(shots / "gpu-logs.png")
    finally:
        server.close()
        rs.close()


def test_1024_ranks_every_page_renders_within_budget(tmp_path: Path, browser: Browser, shots: Path) -> None:
    """A generated 1,024-rank NCCL-log run: each page, opened cold, shows its content within 2 s."""
    from ncclscope.synth import generate_run

    truth = generate_run(tmp_path / "run", nranks=1024, steps=6, fault="hang")
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(path=tmp_path / "run", run_store=rs, wait=True))
    culprit = truth.culprit_ranks[0]
    pages = [("#nav-topology", "#topo-graph", "hosts: 128"), ("#nav-timeline", "#tl-graph", f"rank {culprit}"),
             ("#nav-hotspots", "#hs-volume", "communication volume"), ("#nav-hang", "#hang-body", f"rank {culprit}"),
             ("#nav-logs", "#log-info", " of "), ("#nav-overview", "#findings", f"rank {culprit}")]
    timings: dict[str, float] = {}
    try:
        b = browser
        b.get(server.url + "/")
        b.wait_text("#verdict-banner", "HANG")
        b.screenshot(shots / "synth1024-overview.png")
        for nav, css, needle in pages:
            t = time.perf_counter()
            b.click(nav)
            b.wait_text(css, needle, timeout=30)
            timings[nav] = time.perf_counter() - t
            b.screenshot(shots / f"synth1024-{nav.split('-')[1]}.png")
        print("\n1,024 ranks, page shown after click: " + ", ".join(f"{k[5:]} {v:.2f} s" for k, v in timings.items()))
        slow = {k: round(v, 2) for k, v in timings.items() if v > PAGE_BUDGET_S}
        assert not slow, f"pages over {PAGE_BUDGET_S} s: {slow}"
    finally:
        server.close()
        rs.close()


def test_upload_status_says_the_outcome_and_logs_open_on_the_evidence(tmp_path: Path, browser: Browser) -> None:
    """An upload's line ends on its verdict (it stayed on 'analysing...'); the Logs page, opened from the
    navigation, starts at the verdict's evidence line scrolled into view, heartbeats hidden until asked for."""
    rs = RunStore(tmp_path / "store")
    server = Server(create_app(run_store=rs))
    try:
        b = browser
        b.get(server.url + "/")
        b.send_keys("#upload input[type=file]", str(_zip_run(ROOT / "samples" / "gpu_hang", tmp_path / "run.zip")))
        done = b.wait_text("#upload-done", "hang: rank 1 never joined", timeout=120)
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
