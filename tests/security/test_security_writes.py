"""Writing on a shared machine: no folder another user controls, no write through a planted link,
no code taken from a run folder, no alert through a symlinked alerts.jsonl, no URL but http(s)."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ncclscope.live.alerts import FileSink, WebhookError, WebhookSink, make_alert
from ncclscope.live.tailer import Tailer
from ncclscope.live.watcher import DirWatcher

ROOT = Path(__file__).resolve().parents[2]


def ncclscope(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ncclscope", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, check=False, env=env)


def shared_folder(tmp_path: Path) -> Path:
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)  # like /tmp or a project scratch folder: anyone can create names in it
    return d


def test_run_dir_others_can_write_is_refused(tmp_path):
    d = shared_folder(tmp_path)
    p = ncclscope("run", "--run-dir", str(d), "--no-hook", "--", sys.executable, "-c", "pass")
    assert p.returncode == 2, p.stderr
    assert "refusing run folder" in p.stderr and "others can write" in p.stderr and "--shared-run-dir" in p.stderr
    assert list(d.iterdir()) == []  # nothing written, nothing run


@pytest.mark.skipif(os.geteuid() != 0, reason="making a folder of another user needs root")
def test_run_dir_of_another_user_is_refused(tmp_path):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o755)
    os.chown(d, 65534, 65534)
    p = ncclscope("run", "--run-dir", str(d), "--no-hook", "--", sys.executable, "-c", "pass")
    assert p.returncode == 2 and "belongs to another user" in p.stderr, p.stderr


def test_shared_run_dir_takes_no_code_and_writes_through_no_link(tmp_path):
    """What another user could plant in a shared run folder: a module that shadows the standard library
    where the hook's site folder used to be, and links under the names the wrapper writes."""
    d = shared_folder(tmp_path)
    marker = tmp_path / "planted-code-ran"
    site = d / ".ncclscope-site"
    site.mkdir()
    (site / "random.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    for name in ("exit.txt", "stdout.log", "stderr.log", "ncclscope-env.json", "report.json"):
        (d / name).symlink_to(victim)
    p = ncclscope("run", "--run-dir", str(d), "--shared-run-dir", "--", sys.executable, "-c",
                  "import random, sys; print('job ran'); print(sys.path[:3], file=sys.stderr)")
    assert p.returncode == 0, p.stderr
    assert "job ran" in p.stdout
    assert "shared folder" in p.stderr
    assert "not writing" in p.stderr and "stdout.log" in p.stderr  # said, not silently dropped
    assert not marker.exists(), "a module planted in the run folder ran inside the job"
    assert victim.read_text() == "precious\n"
    assert (d / "exit.txt").read_text() == "exit=0\n" and not (d / "exit.txt").is_symlink()
    assert str(d) not in p.stderr.split("]")[0].split("[", 1)[-1]  # the run folder is not on the job's sys.path


def test_hook_site_is_a_private_temporary_folder(tmp_path):
    from ncclscope.launch import prepare_hook_site

    site = prepare_hook_site(tmp_path)
    try:
        assert not site.is_relative_to(tmp_path)
        assert os.stat(site).st_mode & 0o777 == 0o700 and os.stat(site).st_uid == os.geteuid()
        assert (site / "sitecustomize.py").is_file() and (site / "_ncclscope_hook" / "tracer.py").is_file()
    finally:
        import shutil

        shutil.rmtree(site)


def test_run_folder_deleted_mid_job_is_a_warning(tmp_path):
    d = tmp_path / "run"
    p = ncclscope("run", "--run-dir", str(d), "--no-hook", "--", sys.executable, "-c",
                  "import os, shutil; shutil.rmtree(os.environ['NCCLSCOPE_RUN_DIR'])")
    assert p.returncode == 0, p.stderr
    assert "was deleted while the job ran" in p.stderr
    assert (d / "exit.txt").read_text() == "exit=0\n"


def test_alerts_are_never_appended_through_a_link(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "alerts.jsonl").symlink_to(victim)
    sink = FileSink(run / "alerts.jsonl")
    sink.emit(make_alert("hang", "hang", [1], None, "stuck"))
    assert victim.read_text() == "precious\n"
    assert sink.errors and "alerts.jsonl" in sink.errors[0]
    # a hard link to someone's file is refused too; a plain file of ours is appended to
    (run / "alerts.jsonl").unlink()
    os.link(victim, run / "alerts.jsonl")
    sink.emit(make_alert("hang", "hang", [1], None, "stuck"))
    assert victim.read_text() == "precious\n"
    (run / "alerts.jsonl").unlink()
    sink.emit(make_alert("hang", "hang", [1], None, "stuck"))
    assert '"kind": "hang"' in (run / "alerts.jsonl").read_text()


@pytest.mark.parametrize("url", ["file:///etc/passwd", "data:text/plain,hi", "ftp://example.org/x", "http://",
                                 "/tmp/hook", "gopher://example.org/"])
def test_webhook_only_http_and_https(url):
    with pytest.raises(WebhookError):
        WebhookSink(url)


def test_webhook_cli_refuses_other_schemes(tmp_path):
    p = ncclscope("watch", str(tmp_path), "--once", "--webhook", "file:///etc/passwd")
    assert p.returncode == 2 and "http" in p.stderr, p.stderr


def test_webhook_redirect_to_file_is_not_followed():
    import http.server
    import threading

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(302)
            self.send_header("Location", "file:///etc/passwd")
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Redirect)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        sink = WebhookSink(f"http://127.0.0.1:{srv.server_address[1]}/", retries=1, backoff_s=0)
        sink.emit(make_alert("hang", "hang", [1], None, "stuck"))
        sink.close()
        assert sink.sent == 0 and sink.errors, sink.errors
    finally:
        srv.shutdown()
        srv.server_close()


def test_file_linked_into_a_watched_folder_after_start_is_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("node1:1:1 [0] NCCL WARN the-secret-text\n")
    run = tmp_path / "run"
    run.mkdir()
    w = DirWatcher(run, lambda n: n.endswith(".log"), rescan_s=0.2)
    tailer = Tailer()
    w.start()
    try:
        (run / "rank0.nccl.log").symlink_to(secret)
        (run / "rank1.nccl.log").write_text("node1:1:1 [0] NCCL INFO ok\n")
        lines = []
        deadline = time.monotonic() + 600  # a safety net: the wait is on the event
        seen: set[str] = set()
        while time.monotonic() < deadline and len(seen) < 2:
            for path in w.changed():
                seen.add(Path(path).name)
                lines += [t for _, t in tailer.read_new(path)]
            time.sleep(0.1)
        for path in (str(run / "rank0.nccl.log"), str(run / "rank1.nccl.log")):
            lines += [t for _, t in tailer.read_new(path)]
    finally:
        w.stop()
    assert not any("the-secret-text" in t for t in lines)
    assert any("NCCL INFO ok" in t for t in lines)
    assert str(run / "rank0.nccl.log") in tailer.refused
    # and `watch` names it
    p = ncclscope("watch", str(run), "--once", env=dict(os.environ, COLUMNS="400"))
    assert p.returncode == 0, p.stderr
    assert "not read:" in p.stdout and "rank0.nccl.log" in p.stdout and "symbolic link" in p.stdout, p.stdout


def test_dashboard_port_taken_is_said_not_announced(tmp_path):
    from ncclscope.launch import DASHBOARD_PORT

    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", DASHBOARD_PORT))
        holder.listen()
    except OSError:
        pass  # someone else holds it already: the same situation
    try:
        p = ncclscope("run", "--run-dir", str(tmp_path / "run"), "--no-hook", "--dashboard", "--",
                      sys.executable, "-c", "pass")
    finally:
        holder.close()
    assert p.returncode == 0, p.stderr
    assert f"port {DASHBOARD_PORT}" in p.stderr and "taken" in p.stderr
    assert f"http://127.0.0.1:{DASHBOARD_PORT}/" not in p.stderr  # never the other process's URL: a free port's
    assert re.search(r"dashboard: http://127\.0\.0\.1:\d+/\?token=[\w-]+ \(live", p.stderr), p.stderr  # with its token


def test_serve_port_taken_fails_clearly(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        p = ncclscope("serve", "--port", str(port), timeout=600)
    finally:
        holder.close()
    assert p.returncode == 2, p.stderr
    assert f"port {port}" in p.stderr and "Traceback" not in p.stderr
    assert "ncclscope dashboard: http" not in p.stderr


def test_watch_never_appends_through_a_linked_alerts_file(tmp_path):
    """The real `ncclscope watch` on a real hung run whose alerts.jsonl is a link to a file of the user's."""
    import shutil
    import signal

    run = tmp_path / "run"
    shutil.copytree(ROOT / "samples" / "gpu_hang", run, ignore=shutil.ignore_patterns(".ncclscope-cache",
                                                                                       "alerts.jsonl"))
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run / "alerts.jsonl").symlink_to(victim)
    p = subprocess.Popen([sys.executable, "-m", "ncclscope", "watch", str(run), "--stall-seconds", "1"], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen = []
    try:
        deadline = time.monotonic() + 600  # a safety net: the wait is on the event
        assert p.stdout is not None
        while time.monotonic() < deadline:
            line = p.stdout.readline()
            if not line:
                break
            seen.append(line)
            if "cannot append" in line:
                break
    finally:
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    out = "".join(seen)
    assert "hang" in out.lower() and "cannot append" in out, out
    assert victim.read_text() == "precious\n"
