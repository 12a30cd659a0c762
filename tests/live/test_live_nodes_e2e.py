"""A dead node on real processes: four gloo ranks of tests/jobs/train_job.py traced by the real hook, as two
"hosts" of two ranks (the host name the hook records is the process's ``socket.gethostname()``, set per
process here by a two-line wrapper, as two machines would have it), all writing into one folder. Both ranks
of one host are frozen with SIGSTOP (a node that hangs hard, or whose files stop arriving): the monitor
must report that node, its ranks as a range, where its records end, and the collective the other host's
ranks wait in, which is later than the frozen ranks' last written lines."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ncclscope.launch import merge_env, prepare_hook_site, tracing_env
from ncclscope.live.monitor import LiveConfig, LiveMonitor

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "jobs" / "train_job.py"
ENV = {"JOB_BACKEND": "gloo", "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "JOB_PG_TIMEOUT": "120",
       "MASTER_ADDR": "127.0.0.1", "CUDA_VISIBLE_DEVICES": "", "JOB_STEPS": "2000", "JOB_STEP_S": "0.05"}
HOSTS = {0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"}

pytestmark = pytest.mark.slow


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(run_dir: Path) -> list[subprocess.Popen[bytes]]:
    site = prepare_hook_site(run_dir)
    env, _, _ = merge_env({**os.environ, **ENV}, tracing_env(run_dir, False, site))
    env["MASTER_PORT"] = str(_free_port())
    procs = []
    for r, host in HOSTS.items():
        code = (f"import runpy, socket, sys; socket.gethostname = lambda: {host!r}; sys.argv = [{str(JOB)!r}]; "
                f"runpy.run_path({str(JOB)!r}, run_name='__main__')")
        with open(run_dir / f"rank{r}.out", "ab") as out:
            procs.append(subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                          start_new_session=True, env={**env, "RANK": str(r), "LOCAL_RANK": str(r % 2),
                                                                       "WORLD_SIZE": str(len(HOSTS))}))
    return procs


@pytest.mark.xdist_group("live-e2e-1")
def test_sigstop_of_one_hosts_ranks_is_a_node_alert(tmp_path: Path) -> None:
    mon = LiveMonitor(tmp_path, LiveConfig(console=False))
    mon.start()
    procs = _start(tmp_path)
    try:
        deadline = time.time() + 600  # a safety net: the wait is on the event
        while time.time() < deadline:  # every rank past its first steps (the job's rhythm is known)
            ranks = mon.snapshot()["ranks"]
            if len(ranks) == 4 and all((r["completed"].get("0") or 0) >= 40 for r in ranks):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"the job did not get going: {mon.snapshot()}")
        stopped = time.time()
        for r in (2, 3):
            os.kill(procs[r].pid, signal.SIGSTOP)
        while time.time() < stopped + 30 and not any(a["kind"] == "hang" for a in mon.alerts):
            time.sleep(0.2)
        hang = next((a for a in mon.alerts if a["kind"] == "hang"), None)
        assert hang is not None, mon.snapshot()
        assert hang["ts"] - stopped < 15.0
        assert hang["nodes"][0]["host"] == "node-b" and hang["nodes"][0]["ranks"] == [2, 3], hang
        # gloo's ring lets one rank of node-a finish the collective the frozen ranks were in while the other
        # still waits for their data: the waiters are node-a's ranks that have not completed it
        assert hang["culprit_ranks"] == [2, 3] and hang["waiting_ranks"] and set(hang["waiting_ranks"]) <= {0, 1}
        assert hang["message"].startswith("node node-b (ranks 2-3) went silent"), hang["message"]
        assert hang["nodes"][0]["last_line"].startswith("ncclscope-rank"), hang
        ranks = {r["rank"]: r for r in mon.snapshot()["ranks"]}
        # the first collective node-a's ranks have not all completed, past anything node-b's records show
        assert hang["stuck"]["seq"] == min(ranks[r]["completed"]["0"] for r in (0, 1)) + 1, (hang["stuck"], ranks)
        assert hang["stuck"]["seq"] >= max(ranks[r]["enqueued"]["0"] for r in (2, 3)), (hang["stuck"], ranks)
        assert hang["certainty"]["level"] == "likely"
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait(timeout=600)
        mon.stop()
