"""Serving and JAX frameworks' own words about the job, read beside PyTorch's (``tool_lines`` asks ``framework_line``):
jobs of vLLM, SGLang, JAX / XLA or a harness around them often print no NCCL INFO line at all, and these lines are
then all the input says of the collectives.

- A stall the framework (or the harness that runs it) reports itself (``FrameworkStall``): vLLM's engine waiting on its
  workers (``No available shared memory broadcast block found in 60 seconds``), SGLang's scheduler watchdog
  (``Scheduler watchdog timeout (self.watchdog_timeout=300, ...)``; ``Watchdog timeout (self.watchdog_timeout=300)`` in
  releases whose scheduler prints it bare), a harness's ``no progress for 180s``, a launcher that gave up waiting for
  a server to come up (``/health not ready after 900s``, ``Timed out waiting for server to start``), vLLM's metrics
  with requests running and no token made (``Avg generation throughput: 0.0 tokens/s, Running: 1 reqs``), a
  program's word that one process does not enter a collective its peers entered (``process_index=1 not entering
  collective``: ``culprit`` is that process), vLLM's front-end finding no output from its engine process
  (``client.py:191] Waiting for output from MQLLMEngine.``, every ``VLLM_RPC_TIMEOUT``: 10 s; an idle server that came
  up prints it too, which the detector tells apart by the server's ready lines).
- SGLang's dump of a rank's current batch at its watchdog timeout (``FrameworkBatch``: ``self.cur_batch.batch_size()=2,
  self.cur_batch.reqs=[Req(rid=...), ...]``): the tensor-parallel ranks of one scheduler run the same batch, so two
  that show different batches have diverged.
- The world and the nodes a serving command or its config line states (``WorldSize``, ``NodeCount``): ``vllm serve
  --tensor-parallel-size 16 --nnodes 2``, ``sglang ... --tp 32 --nnodes 4``, SGLang's ``ServerArgs(tp_size=32, ...,
  nnodes=4)``, vLLM's ``non-default args: {'tensor_parallel_size': 16, 'nnodes': 2}`` (tensor x pipeline parallel).
  One machine (``NodeCount`` 1) where a line can only be printed by a job of one node: SGLang's launch command with
  no ``--nnodes``, ``--dist-init-addr`` or ``--node-rank`` (its default is one node), Ray's ``Started a local Ray
  instance`` (``ray.init()`` found no cluster to join and started one on this host), vLLM's
  ``distributed_init_method=tcp://127.0.0.1:...`` (every rank meets on the loopback) and its multiprocessing
  executor's ``multiproc_worker_utils.py:218] Worker ready; awaiting tasks`` (a ``VllmWorkerProcess`` forked on the
  engine's host), a loopback master address (``MASTER_ADDR=localhost``, ``--master_addr 127.0.0.1``). A count stated
  elsewhere (or the hosts seen) that is larger wins: the job's nodes are the largest count read.
- c10d's warning as a rank starts ``barrier()`` with no device set (``Rank 1 using GPU 1 to perform barrier as devices
  used by this process are currently unknown``; ``BarrierEntered``, the rank the warning names): not a framework's
  word, read here as the one line of PyTorch that other tools' readers take beside it.
- XLA's own NCCL failure (``Aborting communicator: 0x... due to async NCCL error: <NCCL's message>``, ``NCCL operation
  async_err failed: <message>``): a ``DistError`` quoting NCCL's message, which the knowledge base reads.

SGLang's line head ``[2026-06-22 13:51:22 DP0 TP3 EP3]`` gives the tensor-parallel rank (``TP3``) when no launcher tag
does; its ``DP`` index names the scheduler group.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from .records import BarrierEntered, DistError, FrameworkBatch, FrameworkStall, NodeCount, Rec, WorldSize

MAX_WORLD = 1 << 20
SGLANG_HEAD_RE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: DP(?P<dp>\d{1,5}))?(?: PP(?P<pp>\d{1,5}))?"
                            r" TP(?P<tp>\d{1,7})(?: EP\d{1,7})?\] ")
VLLM_SHM_WAIT_RE = re.compile(r"No available shared memory broadcast block found in (?P<s>\d{1,7}) seconds?")
ENGINE_POLL_S = 10.0  # vLLM's VLLM_RPC_TIMEOUT by default: one engine-wait line per 10 s without output
VLLM_ENGINE_WAIT_RE = re.compile(r"\bWaiting for output from MQLLMEngine\b")  # vLLM's V0 front-end (MQLLMEngineClient)
SGLANG_WATCHDOG_RE = re.compile(r"(?:Scheduler w|\bW)atchdog timeout \(self\.watchdog_timeout=(?P<s>\d{1,7}(?:\.\d+)?)")
NO_PROGRESS_RE = re.compile(r"(?i)\bno progress (?:for|in) (?P<s>\d{1,7}(?:\.\d+)?) ?s(?:ec(?:ond)?s?)?\b")
# a launcher or harness that gave up waiting for a server to come up: "/health not ready after 900s", "server did not
# become ready within 600 s", "Timed out waiting for server to start": the deadline passed, the start-up stalled
NOT_READY_RE = re.compile(
    r"(?i)\b(?:health(?:check)?|server|endpoint|service|engine|readiness)\b.{0,40}?"
    r"\b(?:not (?:ready|healthy|up)|did not become (?:ready|healthy)|never became (?:ready|healthy)|failed to become ready)"
    r"\b.{0,20}?\b(?:after|within|in) (?P<s>\d{1,7}) ?s(?:ec(?:ond)?s?)?\b"
    r"|\bTimed out waiting for (?:the )?(?:server|engine|endpoint|service) to (?:start|come up|become ready)\b")
# vLLM's engine metrics with requests running and no token made or taken in ("Avg prompt throughput: 0.0 tokens/s, Avg
# generation throughput: 0.0 tokens/s, Running: 1 reqs"): a step that did not finish (the detector keeps it only where
# the server printed such lines to its end)
VLLM_IDLE_RE = re.compile(r"Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s, "
                          r"Running: [1-9]\d{0,6} reqs")
RETRY_RE = re.compile(r"(?i)\bretry(?:ing)?\b|\battempt \d")  # a wait that goes on: no giving up
NOT_ENTERING_RE = re.compile(
    r"(?i)\b(?:process_index|process|rank|worker|task)[ =:#]?\s?(?P<r>\d{1,7})\b.{0,40}?"
    r"\b(?:not entering|stops? entering|stopped entering|never entered|did not enter|does not enter)\b.{0,30}?"
    r"\bcollective")
BATCH_RE = re.compile(r"self\.cur_batch\.batch_size\(\)=(?P<n>\d{1,9}), self\.cur_batch\.reqs=\[(?P<reqs>.{0,20000}?)\]"
                      r"(?:, self\.|\s*$)")
RID_RE = re.compile(r"\brid=(?P<rid>[\w-]{1,128})")
QUOTED_CMD_RE = re.compile(r"`[^`]{0,2000}`")  # SGLang's "For example: `python3 -m sglang.compile_deep_gemm --tp 8`"
SERVE_CMD_RE = re.compile(r"(?:\bvllm serve\b|\bvllm\.entrypoints\b|\bsglang serve\b|\bsglang\.launch_server\b)")
FLAG_RE = {
    "tp": re.compile(r"\s--(?:tensor-parallel-size|tp-size|tp)[= ](?P<n>\d{1,7})\b"),
    "pp": re.compile(r"\s--(?:pipeline-parallel-size|pp-size|pp)[= ](?P<n>\d{1,7})\b"),
    "nnodes": re.compile(r"\s--nnodes[= ](?P<n>\d{1,7})\b"),
}
CONFIG_RE = {  # SGLang's ServerArgs(...), vLLM's "non-default args: {...}" and its engine config line ("Initializing a
    # V0 LLM engine (v0.7.2) with config: model=..., tensor_parallel_size=16, pipeline_parallel_size=1, ...")
    "tp": re.compile(r"(?:\btp_size=|'tensor_parallel_size': |\btensor_parallel_size=)(?P<n>\d{1,7})\b"),
    "pp": re.compile(r"(?:\bpp_size=|'pipeline_parallel_size': |\bpipeline_parallel_size=)(?P<n>\d{1,7})\b"),
    "nnodes": re.compile(r"(?:\bnnodes=|'nnodes': )(?P<n>\d{1,7})\b"),
}
XLA_NCCL_RE = re.compile(r"(?:Aborting communicator: \S{1,40} due to async NCCL error: |"
                         r"NCCL operation \w{1,60} failed: )(?P<msg>.{1,500})$")
SGLANG_CMD_RE = re.compile(r"\bsglang(?:\.launch_server\b| serve\b)")
SGLANG_NODES_RE = re.compile(r"\s--(?:nnodes|dist-init-addr|nccl-init-addr|node-rank)[= ]")
# SGLang's ServerArgs(...) naming nodes: a count, a rank among nodes or a rendezvous address (a set one, not None)
SGLANG_ARGS_NODES_RE = re.compile(r"\b(?:nnodes=|node_rank=[1-9]|(?:dist|nccl)_init_addr='|dist_init_addr=\")")
LOOPBACK = r"(?:127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])"
ONE_MACHINE_RE = re.compile(
    r"\bStarted a local Ray instance\b"
    r"|\bdistributed_init_method=tcp://" + LOOPBACK + r":\d"
    r"|\bmultiproc_worker_utils\.py:\d{1,6}\] Worker ready; awaiting tasks"
    r"|(?:\bMASTER_ADDR=|--master[_-]addr[= ])['\"]?" + LOOPBACK + r"\b")
# c10d's warning as a rank starts barrier() with no device set: "Rank 1 using GPU 1 to perform barrier as devices used
# by this process are currently unknown" (torch 1.x-2.3), "[PG 0 Rank 1]  using GPU 1 to perform barrier ..." and
# "[PG ID 0 PG GUID 0 Rank 1]  using GPU 1 ..." (2.4 on); later releases word it "[PG ID 0 PG GUID 0 Rank 1]  using GPU 1
# as device used by this process is currently unknown" (the barrier's guess of its device, guessDeviceId)
BARRIER_GUESS_RE = re.compile(r"\bRank (?P<r>\d{1,7})\]?\s{1,3}using GPU (?P<gpu>\d{1,4}) (?:to perform barrier as devices used "
                              r"by this process are|as device used by this process is) currently unknown")
WORDS = ("generation throughput: 0.0", "ot ready", "ot Ready", "OT READY", "ot healthy", "ot up ", "ecome ready",
         "ecome healthy", "ecame ready", "ecame healthy", "aiting for", "to perform barrier", "as device used by", "shared memory broadcast", "from MQLLMEngine", "atchdog timeout", "rogress", " enter", "cur_batch", "serve",
         "launch_server", "_size", "nnodes", "NCCL error", "NCCL operation", "local Ray instance",
         "distributed_init_method=", "Worker ready", "MASTER_ADDR=", "master_addr", "master-addr")


def sglang_head(text: str) -> tuple[int | None, int | None]:
    """(tensor-parallel rank, data-parallel index) of SGLang's line head, or (None, None)."""
    m = SGLANG_HEAD_RE.match(text)
    if m is None:
        return None, None
    return int(m.group("tp")), int(m.group("dp")) if m.group("dp") else None


def framework_line(file: str, lineno: int, text: str, body: str, rank: int | None) -> Iterator[Rec]:
    """The records a framework's line gives (none for any other line)."""
    if not any(w in body for w in WORDS):
        return
    tp, dp = sglang_head(body)
    who = rank if rank is not None else tp
    if (g := BARRIER_GUESS_RE.search(body)) is not None:
        yield BarrierEntered(file, lineno, text, int(g.group("r")), None, None, None, int(g.group("gpu")))
    elif (s := VLLM_SHM_WAIT_RE.search(body)) is not None:
        yield FrameworkStall(file, lineno, text, who, None, None, None, "vllm", "shm_broadcast_wait", float(s.group("s")), None)
    elif VLLM_ENGINE_WAIT_RE.search(body) is not None:
        yield FrameworkStall(file, lineno, text, who, None, None, None, "vllm", "engine_wait", ENGINE_POLL_S, None)
    elif (s := SGLANG_WATCHDOG_RE.search(body)) is not None:
        yield FrameworkStall(file, lineno, text, who, None, None, None, "sglang", "scheduler_watchdog", float(s.group("s")), None)
    elif (s := NO_PROGRESS_RE.search(body)) is not None:
        yield FrameworkStall(file, lineno, text, who, None, None, None, "harness", "no_progress", float(s.group("s")), None)
    elif VLLM_IDLE_RE.search(body) is not None:
        yield FrameworkStall(file, lineno, text, who, None, None, None, "vllm", "running_idle", None, None)
    elif (s := NOT_READY_RE.search(body)) is not None and RETRY_RE.search(body) is None:
        waited = float(s.group("s")) if s.group("s") else None
        yield FrameworkStall(file, lineno, text, who, None, None, None, "harness", "not_ready", waited, None)
    elif (n := NOT_ENTERING_RE.search(body)) is not None:
        yield FrameworkStall(file, lineno, text, who, None, None, None, "program", "not_entering", None, int(n.group("r")))
    elif (b := BATCH_RE.search(body)) is not None and who is not None:
        rids = tuple(RID_RE.findall(b.group("reqs")))
        yield FrameworkBatch(file, lineno, text, who, None, None, None, dp, int(b.group("n")), rids)
    elif (x := XLA_NCCL_RE.search(body)) is not None:
        yield DistError(file, lineno, text, who, "E", None, None, "XlaRuntimeError", x.group("msg").strip())
    else:
        yield from _world(file, lineno, text, body)


def _world(file: str, lineno: int, text: str, body: str) -> Iterator[Rec]:
    """The world (tensor x pipeline parallel) and the nodes a serving command or config line states; one machine
    where the line is one only a job of one node prints."""
    if ONE_MACHINE_RE.search(text):  # the whole line: a logger head names the module that printed it
        yield NodeCount(file, lineno, text, None, None, None, None, 1)
        return
    body = QUOTED_CMD_RE.sub(" ", body)  # a command a program's advice quotes (`... --tp 8`) is not the job's
    if SERVE_CMD_RE.search(body):
        found = {k: r.search(" " + body) for k, r in FLAG_RE.items()}
    elif "ServerArgs(" in body or "non-default args:" in body or ("LLM engine" in body and "with config: " in body):
        found = {k: r.search(body) for k, r in CONFIG_RE.items()}
    else:
        return
    tp, pp, nodes = (int(m.group("n")) if m else None for m in (found["tp"], found["pp"], found["nnodes"]))
    if tp and 0 < tp * (pp or 1) <= MAX_WORLD:
        yield WorldSize(file, lineno, text, None, None, None, None, tp * (pp or 1))
    if nodes and 0 < nodes <= MAX_WORLD:
        yield NodeCount(file, lineno, text, None, None, None, None, nodes)
    elif SGLANG_CMD_RE.search(body) and not SGLANG_NODES_RE.search(" " + body):
        yield NodeCount(file, lineno, text, None, None, None, None, 1)  # SGLang's default: one node
    elif tp and "ServerArgs(" in body and not SGLANG_ARGS_NODES_RE.search(body):
        yield NodeCount(file, lineno, text, None, None, None, None, 1)  # its args, no node of another: SGLang's default
