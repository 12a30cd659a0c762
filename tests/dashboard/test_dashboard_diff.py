"""The Diff page: two analysed runs picked by key, their differences in ``compare``'s order with where each run
shows them, and both runs' busbw against size on one figure (pure figure, render function, layout defaults)."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import SAMPLES
from ncclscope.dashboard import figures
from ncclscope.dashboard.app import create_app
from ncclscope.dashboard.data import RunStore
from ncclscope.synth import generate_run
from plotly.utils import PlotlyJSONEncoder


def _js(component: object) -> str:
    return json.dumps(component, cls=PlotlyJSONEncoder)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("diffpage")
    generate_run(root / "ring", nranks=8, steps=4, algo="RING", busbw_gbs=180.0, seed=1)
    generate_run(root / "tree", nranks=8, steps=4, algo="TREE", busbw_gbs=40.0, seed=1)
    rs = RunStore(root / "store")
    app = create_app(run_store=rs)  # registers the pages, so that their modules can be imported
    keys = {name: rs.analyze([p], name) for name, p in (("ring", root / "ring"), ("tree", root / "tree"),
                                                       ("healthy", SAMPLES / "gpu_healthy"),
                                                       ("straggler", SAMPLES / "gpu_straggler"))}
    yield rs, keys, app
    rs.close()


def test_busbw_pair_figure_draws_each_run_and_op_apart() -> None:
    a = pd.DataFrame({"op": ["allreduce", "allreduce"], "bucket": [20, 24], "busbw": [100.0, 170.0], "calls": [5, 9]})
    b = pd.DataFrame({"op": ["allreduce"], "bucket": [24], "busbw": [40.0], "calls": [9]})
    fig = figures.busbw_pair_figure(a, b, "good", "bad")
    assert [t.name for t in fig.data] == ["A: allreduce", "B: allreduce"]
    assert list(fig.data[0].x) == [2.0 ** 20, 2.0 ** 24] and list(fig.data[1].y) == [40.0]
    assert (fig.data[0].line.dash, fig.data[1].line.dash) == ("solid", "dash")
    empty = figures.busbw_pair_figure(a.iloc[:0], b.iloc[:0])
    assert not empty.data and "neither run has timed collectives" in _js(empty)


def test_render_orders_the_differences_and_draws_both_runs(store) -> None:
    from ncclscope.dashboard.pages import diff

    rs, keys, _ = store
    body, fig = diff.render(rs, keys["ring"], keys["tree"])
    text = _js(body)
    assert "allreduce of 16-32 MiB: busbw" in text and "RING/SIMPLE -> TREE/SIMPLE" in text
    assert text.index("allreduce of 16-32 MiB: busbw") < text.index("RING/SIMPLE -> TREE/SIMPLE")
    assert ".nccl.log:" in text and "ncclscope-rank" in text  # where each run shows it
    assert {t.legendgroup for t in fig.data} == {"A", "B"}
    a_bw = max(y for t in fig.data if t.legendgroup == "A" for y in t.y)
    b_bw = max(y for t in fig.data if t.legendgroup == "B" for y in t.y)
    assert a_bw > 3 * b_bw


def test_render_names_the_straggler_of_the_samples(store) -> None:
    from ncclscope.dashboard.pages import diff

    rs, keys, _ = store
    text = _js(diff.render(rs, keys["healthy"], keys["straggler"])[0])
    assert "rank 1 became a straggler in B: the others waited 7.53 s for it" in text
    assert "DEGRADED" in text and "HEALTHY" in text


def test_render_asks_for_two_runs(store) -> None:
    from ncclscope.dashboard.pages import diff

    rs, keys, _ = store
    assert "Pick two analysed runs" in _js(diff.render(rs, keys["ring"], None)[0])
    assert "Pick two analysed runs" in _js(diff.render(rs, "nope", keys["ring"])[0])
    assert "the same run" in _js(diff.render(rs, keys["ring"], keys["ring"])[0])


def test_choices_and_the_pair_serve_was_given(store) -> None:
    from ncclscope.dashboard.pages import diff

    rs, keys, app = store
    opts = diff.choices(rs)
    assert [o["label"] for o in opts] == ["ring", "tree", "healthy", "straggler"]
    assert diff.default_pair(rs, None) == (keys["ring"], keys["tree"])
    app.server.config[diff.DIFF_PAIR] = (keys["healthy"], keys["straggler"])
    try:
        with app.server.test_request_context("/diff"):
            text = _js(diff.layout())
    finally:
        app.server.config.pop(diff.DIFF_PAIR)
    assert f'"value": "{keys["healthy"]}"' in text and f'"value": "{keys["straggler"]}"' in text


def test_the_comparison_is_computed_once_a_pair(store, monkeypatch: pytest.MonkeyPatch) -> None:
    from ncclscope.dashboard.pages import diff

    rs, keys, _ = store
    calls: list[int] = []
    real = diff.compare

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(diff, "compare", counting)
    for _ in range(3):
        diff.render(rs, keys["tree"], keys["ring"])
    assert calls == [1]


def test_the_page_path_is_registered(store) -> None:
    import dash

    assert any(p["path"] == "/diff" and p["name"] == "Diff" for p in dash.page_registry.values())


def test_serve_pair_analyses_both_runs_and_opens_on_them(tmp_path) -> None:
    from ncclscope.ingest import InputError

    rs = RunStore(tmp_path / "store")
    app = create_app(run_store=rs)
    from ncclscope.dashboard.pages import diff  # registered by the app
    try:
        assert diff.serve_pair(app, (SAMPLES / "gpu_healthy", SAMPLES / "gpu_straggler")) == "diff"
        ka, kb = app.server.config[diff.DIFF_PAIR]
        assert (rs.get(ka).label, rs.get(kb).label) == ("gpu_healthy", "gpu_straggler")
        (tmp_path / "empty").mkdir()
        with pytest.raises(InputError):
            diff.serve_pair(app, (SAMPLES / "gpu_healthy", tmp_path / "empty"))
    finally:
        rs.close()


def test_serve_diff_prints_the_diff_page_url(tmp_path) -> None:
    """``ncclscope serve --diff A B`` analyses both, then prints the URL of the Diff page (with its token)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NCCLSCOPE_DASHBOARD_TOKEN": "t" * 32}
    proc = subprocess.Popen([sys.executable, "-m", "ncclscope", "serve", "--port", "0", "--diff",
                             str(SAMPLES / "gpu_healthy"), str(SAMPLES / "gpu_straggler")],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    lines = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # ends at the URL line (or when the process ends, failing the test)
            lines.append(line)
            if line.startswith("ncclscope dashboard: "):
                break
    finally:
        proc.terminate()
        proc.wait(timeout=600)
    assert lines[0].startswith("ncclscope: analysing ") and "gpu_straggler" in lines[0]
    assert lines[-1].rstrip().endswith("/diff?token=" + "t" * 32), lines


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_the_page_in_the_browser_opens_on_the_pair_serve_was_given(tmp_path) -> None:
    """Headless Chromium on the app served as `serve --diff` serves it: the Diff page, reached from the navigation,
    shows the straggler first and draws both runs' busbw. Every wait ends on the text it waits for."""
    import shutil
    import threading
    import time

    from ncclscope.dashboard.access import headers_carry_token
    from ncclscope.dashboard.server import Limits, make_server

    chromium, driver_bin = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_bin):
        pytest.skip("chromium / chromedriver not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    rs = RunStore(tmp_path / "store")
    app = create_app(run_store=rs)
    from ncclscope.dashboard.pages import diff  # registered by the app

    diff.serve_pair(app, (SAMPLES / "gpu_healthy", SAMPLES / "gpu_straggler"))
    token = app.server.config["ncclscope_token"]
    httpd = make_server(app.server, "127.0.0.1", 0, Limits(),
                        admit=lambda headers, query: headers_carry_token(token, headers, query))
    thread = threading.Thread(target=httpd.run, name="diff-test-server")
    thread.start()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        opts.add_argument(arg)
    browser = webdriver.Chrome(service=Service(driver_bin), options=opts)

    def wait_text(css: str, needle: str, bound_s: float = 120.0) -> str:  # the bound only ends a failed test
        end, last = time.monotonic() + bound_s, ""
        while time.monotonic() < end:
            found = browser.find_elements(By.CSS_SELECTOR, css)
            try:
                last = found[0].text if found else ""
            except Exception:  # noqa: BLE001 - replaced while read: read again
                last = ""
            if needle in last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"{css!r} never showed {needle!r}; last: {last[:300]!r}")

    try:
        browser.get(f"http://127.0.0.1:{httpd.port}/?token={token}")
        wait_text("#nav", "Diff")
        browser.find_element(By.CSS_SELECTOR, "#nav-diff").click()
        table = wait_text("#diff-table", "became a straggler in B")
        assert table.index("became a straggler") < table.index("verdict healthy -> degraded")
        assert "gpu_straggler" in wait_text("#diff-run-b", "DEGRADED")
        wait_text("#diff-busbw", "bus bandwidth against message size")
    finally:
        browser.quit()
        httpd.stop()
        thread.join(10)
        rs.close()
