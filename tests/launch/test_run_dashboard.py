"""``ncclscope run --dashboard``: a free port when the asked one is taken (the URL said), a line when the
dashboard stops, up until Ctrl-C on a terminal and with the job elsewhere. ``serve`` takes a free port when
the default one is held and still refuses a port given and taken."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ncclscope import run_dashboard
from ncclscope.launch import RunOptions, run_job
from ncclscope.ports import free_port, port_taken

ROOT = Path(__file__).resolve().parents[2]
UP_WITHIN_S = 120  # a bound for a failing test only: every wait below ends on the event it waits for


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another process (this test) listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def _answers(url: str) -> str | None:
    """The page at ``url`` (its ?token= sets the cookie the redirect to the page carries), None if refused."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    try:
        with opener.open(url, timeout=5) as r:  # a loopback URL the test made
            return r.read().decode("utf-8", "replace") if r.status == 200 else None
    except OSError:
        return None


def _wait_until_up(url: str, proc: subprocess.Popen[bytes], log: Path) -> str:
    """The page at ``url`` once the dashboard answers (``proc`` ending first fails the test at once)."""
    deadline = time.monotonic() + UP_WITHIN_S
    while time.monotonic() < deadline:
        page = _answers(url)
        if page is not None:
            return page
        assert proc.poll() is None, (log.read_text() if log.exists() else "no log")[-2000:]
        time.sleep(0.2)
    raise AssertionError(f"the dashboard never answered at {url}")


def test_free_port_moves_past_a_taken_one(held_port: int) -> None:
    assert port_taken(held_port) is not None
    port, why = free_port(held_port)
    assert port != held_port and why and port_taken(port) is None
    assert free_port(port) == (port, None)
    assert free_port(0)[0] > 0 and free_port(0)[1] is None


def test_run_dashboard_on_a_taken_port_serves_elsewhere_until_released_and_says_it_stopped(
        tmp_path: Path, held_port: int) -> None:
    notes: list[str] = []
    seen: list[tuple[run_dashboard.Dashboard, str]] = []

    def hold(d: run_dashboard.Dashboard, announce: Callable[[], None]) -> None:  # the user looks, then presses Ctrl-C
        announce()
        seen.append((d, _wait_until_up(d.link, d.proc, d.log)))
        raise KeyboardInterrupt

    opts = RunOptions(command=(sys.executable, "-c", "print('step 1 loss 0.5')"), run_dir=tmp_path / "run",
                      hook=False, dashboard=True, dashboard_port=held_port)
    code = run_job(opts, notes.append, hold=hold)
    assert code == 0
    (d, page), = seen
    port = int(d.url.rsplit(":", 1)[1].strip("/"))
    assert port != held_port and "ncclscope" in page
    said = "\n".join(notes)
    assert f"port {held_port} on 127.0.0.1 is taken" in said and f"using port {port} instead" in said
    assert d.link == f"{d.url}?token={d.token}" and d.token  # every request needs the token: the URL said carries it
    assert f"dashboard: {d.link} (live; it stays up after the job until Ctrl-C" in said
    assert f"dashboard: still serving the finished run at {d.link}; press Ctrl-C to stop it" in said
    assert notes[-1].startswith(f"dashboard stopped ({d.url})") and "ncclscope serve" in notes[-1]
    assert d.proc.poll() is not None and _answers(d.url) is None
    assert (tmp_path / "run" / "report.json").exists()  # the run was analysed before the hold


def test_without_a_terminal_the_dashboard_stops_with_the_job_and_says_so(tmp_path: Path) -> None:
    notes: list[str] = []
    opts = RunOptions(command=(sys.executable, "-c", "pass"), run_dir=tmp_path / "run", hook=False, dashboard=True,
                      dashboard_port=0)
    assert run_job(opts, notes.append) == 0
    said = "\n".join(notes)
    assert "it stops when the job ends" in said
    assert re.search(r"^dashboard stopped \(http://127\.0\.0\.1:\d+/\); to look again: ncclscope serve ", said, re.M), said


def test_a_dashboard_that_ended_by_itself_is_said_as_such(tmp_path: Path) -> None:
    notes: list[str] = []
    proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"], start_new_session=True)
    proc.wait()
    run_dashboard.finish(run_dashboard.Dashboard(proc, "http://127.0.0.1:1/", tmp_path), run_dashboard.until_interrupted,
                         notes.append)
    assert notes == [f"dashboard stopped by itself (exit 3) before the end; its log: {tmp_path / '.dashboard.log'}"]


def test_a_ctrl_c_pressed_as_soon_as_the_line_shows_stops_the_dashboard(tmp_path: Path) -> None:
    """The user presses Ctrl-C the moment "press Ctrl-C to stop it" shows, before the wait has begun: the key is not
    lost (no KeyboardInterrupt out of ``finish``, no wait for a second one), and the dashboard is stopped."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    notes: list[str] = []
    before = signal.getsignal(signal.SIGINT)

    def note(text: str) -> None:
        notes.append(text)
        if "press Ctrl-C to stop it" in text:
            os.kill(os.getpid(), signal.SIGINT)

    try:
        run_dashboard.finish(run_dashboard.Dashboard(proc, "http://127.0.0.1:1/", tmp_path),
                             run_dashboard.until_interrupted, note)
    except KeyboardInterrupt:
        pytest.fail("the Ctrl-C escaped finish(): the dashboard was left running")
    finally:
        run_dashboard.stop_group(proc)
    assert proc.wait(timeout=30) is not None
    assert notes[-1].startswith("dashboard stopped (http://127.0.0.1:1/)"), notes
    assert signal.getsignal(signal.SIGINT) is before  # the hold put the handler back


def test_the_cli_ends_with_the_job_when_not_on_a_terminal(tmp_path: Path, held_port: int) -> None:
    """No terminal (a batch job, a pipe): ``run --dashboard`` must not wait for a Ctrl-C nobody can press."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_"))}
    p = subprocess.run([sys.executable, "-m", "ncclscope", "run", "--run-dir", str(tmp_path / "run"), "--no-hook",
                        "--dashboard", "--dashboard-port", str(held_port), "--", sys.executable, "-c",
                        "raise SystemExit(4)"], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)
    assert p.returncode == 4, p.stderr[-3000:]
    m = re.search(r"dashboard: (http://127\.0\.0\.1:(\d+)/)\?token=\S+ \(live; it stops when the job ends", p.stderr)
    assert m and int(m[2]) != held_port, p.stderr[-3000:]
    assert f"port {held_port} on 127.0.0.1 is taken" in p.stderr
    assert f"dashboard stopped ({m[1]})" in p.stderr, p.stderr[-3000:]


def test_serve_takes_a_free_port_only_when_none_was_given(held_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from ncclscope import ports
    from ncclscope.commands.serve import command

    explicit = CliRunner().invoke(command, ["--port", str(held_port)])
    assert explicit.exit_code != 0 and f"port {held_port}" in explicit.output and "leave --port out" in explicit.output

    from ncclscope.dashboard import server as server_module

    class Served(Exception):
        pass

    class FakeServer:
        def __init__(self, port: int) -> None:
            self.port = port

        def run(self) -> None:
            raise Served(self.port)

        def stop(self) -> None:
            pass

    def fake_make_server(_app: object, host: str, port: int, *_a: object, **_kw: object) -> FakeServer:
        return FakeServer(port)

    monkeypatch.setattr(ports, "DASHBOARD_PORT", held_port)
    monkeypatch.setattr(server_module, "make_server", fake_make_server)
    import signal

    before = signal.getsignal(signal.SIGTERM)
    try:
        res = CliRunner().invoke(command, [])
    finally:
        signal.signal(signal.SIGTERM, before)  # serve installs its own for the server's life
    assert isinstance(res.exception, Served)
    port = res.exception.args[0]
    assert port != held_port
    assert f"port {held_port} on 127.0.0.1 is taken" in res.output and f"http://127.0.0.1:{port}/" in res.output


def test_on_a_terminal_the_finished_run_stays_served_until_ctrl_c(tmp_path: Path) -> None:
    """``run --dashboard`` at a terminal: after the job and its report, the dashboard stays up and says so;
    Ctrl-C stops it, with a line, and ``run`` still exits with the job's code."""
    import pty
    import signal

    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL", "TORCH_"))}
    p = subprocess.Popen([sys.executable, "-m", "ncclscope", "run", "--run-dir", str(tmp_path / "run"), "--no-hook",
                          "--dashboard", "--dashboard-port", "0", "--", sys.executable, "-c", "raise SystemExit(5)"],
                         stdin=follower, stdout=follower, stderr=follower, env=env, cwd=ROOT, start_new_session=True)
    os.close(follower)
    seen = b""
    try:
        while b"press Ctrl-C to stop it" not in seen:  # ends on the line, or on the process' end (EOF / EIO)
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                chunk = b""
            assert chunk, seen.decode("utf-8", "replace")[-3000:]
            seen += chunk
        text = seen.decode("utf-8", "replace")
        m = re.search(r"still serving the finished run at (http://127\.0\.0\.1:\d+/)(\?token=[\w-]+)", text)
        assert m and p.poll() is None, text[-3000:]
        assert "ncclscope" in _wait_until_up(m[1] + m[2], p, tmp_path / "run" / ".dashboard.log")  # up after the job
        os.killpg(p.pid, signal.SIGINT)  # what the terminal sends its foreground group on Ctrl-C
        assert p.wait(timeout=600) == 5
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        assert f"dashboard stopped ({m[1]})" in seen.decode("utf-8", "replace")
        assert _answers(m[1]) is None
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        os.close(leader)
