"""How much memory and disk concurrent uploads take in a running dashboard: N uploads of S MB each, sent at once
as dash-renderer sends them (one JSON request of base64 data URLs), then the server's peak resident memory
(VmHWM) and what is left of the uploads on disk once they are answered and analysed.

The data is random bytes in a file named ``x.bin`` (nothing to analyse: the request path is what is measured).
Prints the numbers; asserts nothing.

Usage: ``.venv/bin/python benchmarks/upload_memory.py [--size-mb 300] [--uploads 3] [--same]``
(``--same``: the same file each time, to see identical uploads recognised).
"""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TOKEN = "upload-memory-benchmark-token-0123"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def vm(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    m = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(m[1]) * 1024 if m else 0


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
               "Origin": f"http://127.0.0.1:{port}", "Host": f"127.0.0.1:{port}"}
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.read()


def upload_body(port: int, blob: bytes) -> bytes:
    """The JSON dash-renderer POSTs for a file dropped on the upload box."""
    _, deps = request(port, "GET", "/_dash-dependencies")
    cb = next(c for c in json.loads(deps) if any(i["id"] == "upload" and i["property"] == "contents"
                                                  for i in c["inputs"]))
    outs = [{"id": p.split(".", 1)[0], "property": p.split(".", 1)[1]} for p in cb["output"].strip(".").split("...")]
    url = "data:application/octet-stream;base64," + base64.b64encode(blob).decode()
    return json.dumps({"output": cb["output"], "outputs": outs,
                       "inputs": [{"id": "upload", "property": "contents", "value": [url]}],
                       "changedPropIds": ["upload.contents"],
                       "state": [{"id": "upload", "property": "filename", "value": ["x.bin"]}]}).encode()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=300)
    ap.add_argument("--uploads", type=int, default=3)
    ap.add_argument("--same", action="store_true")
    args = ap.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ncclscope-upmem-") as tmp:
        env = dict(os.environ, NCCLSCOPE_DASHBOARD_TOKEN=TOKEN, TMPDIR=tmp)
        p = subprocess.Popen([sys.executable, "-m", "ncclscope", "serve", "--port", str(port)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            while True:
                try:
                    request(port, "GET", "/_dash-layout")
                    break
                except ConnectionRefusedError:
                    time.sleep(0.2)
            blobs = [os.urandom(args.size_mb << 20)] * args.uploads if args.same else \
                [os.urandom(args.size_mb << 20) for _ in range(args.uploads)]
            bodies = [upload_body(port, b) for b in blobs]
            del blobs
            base = vm(p.pid, "VmRSS")
            answers: list[str] = []

            def send(body: bytes) -> None:
                status, data = request(port, "POST", "/_dash-update-component", body)
                said = re.findall(r'"children": ?"([^"]*)"', data.decode("utf-8", "replace"))
                answers.append(f"{status} {said[-1] if said else data[:120]!r}")

            t0 = time.perf_counter()
            threads = [threading.Thread(target=send, args=(b,)) for b in bodies]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            answered = time.perf_counter() - t0
            time.sleep(5)  # the analyses of what was accepted (nothing readable: quick)
            peak = vm(p.pid, "VmHWM")
            left = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
            print(f"{args.uploads} uploads of {args.size_mb} MB ({'the same file' if args.same else 'different files'}),"
                  f" sent at once: answered in {answered:.1f} s")
            for a in answers:
                print("  " + a[:220])
            print(f"server memory: {base / 1e9:.2f} GB before, peak {peak / 1e9:.2f} GB "
                  f"(+{(peak - base) / 1e9:.2f} GB); upload files left on disk: {left / 1e6:.1f} MB")
        finally:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
