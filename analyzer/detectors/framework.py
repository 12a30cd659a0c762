"""Frameworks' own stall reports: a hang, or a desync, told by vLLM, SGLang, JAX or the harness around them.

Inputs: ``framework_stall`` events (vLLM's engine waiting on its workers' shared-memory broadcast, SGLang's scheduler
watchdog, a harness's "no progress for N s", a program's word that one process does not enter the collective its peers
entered, a native backtrace of a thread parked inside NCCL: ``sources.native_stack``), ``framework_batch`` events
(SGLang's dump of each rank's current batch at its watchdog timeout) and each file's end (``file_end``).

- The tensor-parallel ranks of one scheduler group holding different batches when the watchdog fired: they diverged
  (each decided its batch on its own: sampling, speculative decoding, a request seen by some only) and then called
  different collectives, or the same one a different number of times: a desync. No rank is named: the lines show two
  states, not which one is wrong.
- XLA's quote of NCCL's own error (``Aborting communicator ... due to async NCCL error: <message>``): one finding per
  knowledge-base entry it matches, its cause and fix, arguing for no verdict (the time line of failures decides).
- Else a stall report, with no failure before it and a job that did not end well: a hang. Its culprits are the
  processes a line names as not entering the collective; otherwise none (the report says the job stopped, not who
  stopped it). Likely for a framework's own timeout, possible for vLLM's wait (it also prints it during a long
  compilation), unless it repeats for ``SURE_S`` seconds or more. Likely for a backtrace parked inside NCCL.
  vLLM's front-end waiting for output from its engine counts only in a log whose server never came up (no ready line,
  no progress) and that ends in that wait: an idle server that came up prints it too.
- Else a log that ends at a serving framework's GPU peer-to-peer check of its start-up (vLLM's and SGLang's custom
  all-reduce: "generating / reading GPU P2P access cache") or at a step of its distributed set-up (the process-group
  line, the NCCL library its own wrapper loads), nothing after it: a possible hang, no culprit. Likewise at DeepSpeed's
  engine start line (``DeepSpeed info: version=...``), right before the engine broadcasts the model's parameters from
  rank 0: the job's first collective; and at Lightning's per-process device line after every process joined the group,
  right before its strategy wraps the model in DDP (whose constructor broadcasts the parameters).
"""
from __future__ import annotations

import re

from ..model import EventKind, Finding, FindingKind, LogEvent, Run, Severity, Verdict
from ..rules.facts import failures_of_run
from ..sources.records import FRAMEWORK_BATCH_EVENT, FRAMEWORK_STALL_EVENT
from .catalogue import KnownError, classify

XLA_ERROR = "XlaRuntimeError"  # the type ``sources.framework_lines`` gives XLA's NCCL failure lines

SURE_S = 300.0  # a framework's wait reported this long in all is no compilation
WAITS = ("shm_broadcast_wait", "engine_wait", "not_ready", "running_idle")  # a framework's waits, which a long compilation also shows
SAID = {"shm_broadcast_wait": "vLLM's engine found no free shared-memory broadcast block: its workers stopped taking "
        "its requests (they wait in a collective or another step)",
        "scheduler_watchdog": "SGLang's scheduler watchdog fired: a forward step did not finish",
        "no_progress": "the harness saw no progress and stopped the job",
        "not_ready": "the launcher gave up waiting for the server to come up: its start-up stopped",
        "running_idle": "vLLM's metrics show requests running and no token made, to the end of its output: a step of "
                        "the engine never finished",
        "not_entering": "a process did not enter the collective its peers entered",
        "native_teardown": "a native backtrace (gdb, lldb, py-spy --native) shows a thread parked in NCCL's "
                           "communicator teardown (abort or destroy), which never returned",
        "native_init": "a native backtrace shows a thread parked in NCCL's communicator init, waiting for its peers",
        "native_collective": "a native backtrace shows a thread parked waiting for a collective of NCCL's to finish",
        "native_launch": "a native backtrace shows a thread parked in the kernel launch of a collective of NCCL's",
        "engine_wait": "vLLM's front-end waited for its engine, which never answered, and the server never came up",
        "native_connect": "a native backtrace shows a thread parked in NCCL's connection set-up of a collective"}
HINT_ALL_JOINED_NATIVE = ("A rank waits for a collective that does not finish: take every rank's backtrace (py-spy dump "
                          "--native --pid): a rank outside the collective is the one to look at; if all are inside it, "
                          "the stall is NCCL's or the path's (NCCL_DEBUG=INFO, the WARN lines, nccl-tests on the same GPUs).")
HINTS = {
    "native_teardown": "A communicator abort or destroy (ncclCommAbort / ncclCommDestroy) that never returns: the "
                       "process cannot exit. Recent NCCL releases synchronise the ranks of a node even on abort, so "
                       "every rank must abort: a peer that died or never calls it leaves the others waiting. Take the other "
                       "ranks' backtraces too (gdb -p / py-spy dump --native): a rank still inside a collective keeps "
                       "the teardown waiting; otherwise it is NCCL's own (its release notes list abort and destroy "
                       "hangs fixed by later releases): try a newer NCCL, and NCCL_DEBUG=INFO shows where it stops.",
    "engine_wait": "The engine process stopped in its start-up after the workers began: the steps after the weights load "
                   "(the memory profile's first forward, the first all-reduce between the GPUs, the custom all-reduce "
                   "exchanging its buffers over GPU peer-to-peer) are collectives. GPU peer-to-peer that does not deliver "
                   "on PCIe GPUs (ACS, an IOMMU / VT-d, a driver or board without working P2P) hangs them: start once "
                   "with NCCL_P2P_DISABLE=1 (or NCCL_P2P_LEVEL=NVL) and --disable-custom-all-reduce; py-spy dump --pid "
                   "of the engine and of each worker shows where each waits; NCCL_DEBUG=INFO shows where NCCL stops.",
    "native_init": "Init waits for every rank of the communicator: check that all ranks start and reach init, "
                   "MASTER_ADDR / MASTER_PORT and NCCL_SOCKET_IFNAME, and firewalls between hosts.",
    "native_collective": HINT_ALL_JOINED_NATIVE,
    "native_launch": "A collective's kernel launch that does not return: under CUDA_LAUNCH_BLOCKING=1 a launch waits for "
                     "its kernel to end, and NCCL 2.13 to 2.16 hand the kernel's network work to their proxy thread only "
                     "after the launch returns, so every rank waits on itself: unset CUDA_LAUNCH_BLOCKING (a debugging "
                     "setting) or use NCCL 2.17 or later. Otherwise take every rank's backtrace (py-spy dump --native) "
                     "and compare where each is.",
    "native_connect": "The first collective sets up its connections: check the links between the ranks (NCCL_P2P_LEVEL "
                      "/ NCCL_P2P_DISABLE=1 to test GPU peer-to-peer, NCCL_SHM_DISABLE, NCCL_IB_* across nodes) and run "
                      "nccl-tests on the same GPUs.",
}
HINTS["not_ready"] = HINTS["engine_wait"]  # a server that never came up stopped in the same start-up steps
HINT_STALL = ("Dump the ranks' stacks while it hangs (py-spy dump --pid for every worker) to see which collective "
              "each rank waits in and which rank never came; set NCCL_DEBUG=INFO (and TORCH_NCCL_TRACE_BUFFER_SIZE for "
              "PyTorch's Flight Recorder) to see the stuck collective.")


# the GPU peer-to-peer check of vLLM's and SGLang's custom all-reduce at start-up (``custom_all_reduce_utils.
# gpu_p2p_access_check``): one process tests every pair of GPUs in subprocesses and writes the cache ("generating GPU P2P
# access cache in <path>"), the others wait for it in a barrier, then each reads it ("reading GPU P2P access cache from
# <path>") and the custom all-reduce exchanges its buffers between the GPUs
P2P_CHECK_RE = re.compile(r"\b(?:generating|reading) GPU P2P access cache (?:in|from) ")
# the steps of a serving framework's distributed set-up before it: vLLM's and SGLang's process-group line
# ("parallel_state.py:959] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://..."), SGLang's "Init torch
# distributed begin.", and the NCCL library their own NCCL wrapper (pynccl) loads for its first communicator ("Found nccl
# from library libnccl.so.2", "vLLM is using nccl==2.21.5"); the next line of a start-up that goes on is the next step
DIST_STEP_RE = re.compile(r"\bworld_size=\d{1,7} rank=\d{1,7} local_rank=\d{1,7} distributed_init_method="
                          r"|\bInit torch distributed begin\b|\bFound nccl from library |\b(?:vLLM|sglang) is using nccl==")
# DeepSpeed's engine start (``DeepSpeedEngine.__init__``: ``log_dist("DeepSpeed info: version=0.10.3, git-hash=...,
# git-branch=...", ranks=[0])``); the engine then checks its config and broadcasts the model's parameters from rank 0 (its
# first collective) before its next line ("DeepSpeed Flops Profiler Enabled: False")
DS_ENGINE_RE = re.compile(r"\bDeepSpeed info: version=\S{1,40}, git-hash=")
# Lightning's line of each process as its strategy takes its device, after every process joined the group ("All
# distributed processes registered"): "LOCAL_RANK: 3 - CUDA_VISIBLE_DEVICES: [0,1,2,3]"; the strategy then wraps the
# model (DDP's constructor broadcasts its parameters from rank 0: the first collective) and rank 0 prints its summary
LIGHTNING_DEVICE_RE = re.compile(r"\bLOCAL_RANK: \d{1,7} - CUDA_VISIBLE_DEVICES: \[")
# Lightning's line of each process as it calls init_process_group: "Initializing distributed: GLOBAL_RANK: 3, MEMBER:
# 4/32"; when the group forms, rank 0 says "All distributed processes registered. Starting with 32 processes"
LIGHTNING_JOINING_RE = re.compile(r"\bInitializing distributed: GLOBAL_RANK: \d{1,7}, MEMBER: \d{1,7}/\d{1,7}")
RENDEZVOUS_HINT = ("init_process_group waits until every process of the world reaches the same store: check that "
                   "MASTER_ADDR is the node that runs global rank 0 (under Slurm, the first node of the job's own, sorted "
                   "node list, not the order a script wrote), that MASTER_PORT is the same and open on every node, and "
                   "that the world size matches the processes started (nodes x processes a node).")
HINT_P2P = ("GPU peer-to-peer that does not deliver (ACS on a PCIe switch, an IOMMU / VT-d, a board or driver without "
            "P2P between these GPUs, as on many consumer and workstation cards) hangs this step and the first "
            "collectives: start once with NCCL_P2P_LEVEL=NVL (P2P over NVLink only) or NCCL_P2P_DISABLE=1")
# torch.utils.cpp_extension's JIT build of an op (DeepSpeed's fused Adam, CPU Adam, a project's kernels) as it starts:
# "Using /root/.cache/torch_extensions/py310_cu118 as PyTorch extensions root..." (torch 2.1+ when TORCH_EXTENSIONS_DIR
# is set: "Using envvar TORCH_EXTENSIONS_DIR (/x) as PyTorch extensions root..."); the process then takes the build
# folder's lock: the one that holds it prints its ninja lines ("Emitting ninja build file ...", "Building extension
# module ..."), every process then "Loading extension module ..."; a process waiting on the lock prints nothing
JIT_ROOT_RE = re.compile(r"\bUsing (?:envvar TORCH_EXTENSIONS_DIR )?\(?\S.{0,400}?\)? as PyTorch extensions root\b")
WENT_ON = (EventKind.PROGRESS, EventKind.RANK_FINISHED, EventKind.PROGRAM_EXIT, EventKind.LAUNCHER_SUCCEEDED,
           EventKind.DIST_ERROR, EventKind.NCCL_WARN, EventKind.WATCHDOG_TIMEOUT)


def detect(run: Run) -> list[Finding]:
    return _xla_errors(run) + (_stalls(run) or _setup_end(run))


def _xla_errors(run: Run) -> list[Finding]:
    """XLA's lines quoting NCCL's error, grouped by the knowledge-base entry they match."""
    groups: dict[str, tuple[KnownError, list[LogEvent]]] = {}
    for e in run.events:
        if e.kind == EventKind.DIST_ERROR and e.data.get("type") == XLA_ERROR:
            k = classify(str(e.data.get("message") or ""))
            if k is not None:
                groups.setdefault(k.id, (k, []))[1].append(e)
    out = []
    for k, hits in groups.values():
        ranks = tuple(sorted({e.rank for e in hits if e.rank is not None}))
        out.append(Finding(kind=FindingKind.ERROR, severity=Severity.ERROR, ranks=ranks,
                           message=f"XLA quotes NCCL's error ({len(hits)} line{'s' if len(hits) > 1 else ''}): "
                                   f"\"{' '.join(str(hits[0].data.get('message')).split())[:200]}\": {k.meaning}"[:500],
                           hint=f"{k.hint} ({k.link})", evidence=tuple(e.evidence for e in hits[:3]),
                           data={"entry": k.id, "area": k.area}))
    return out


def _stalls(run: Run) -> list[Finding]:
    stalls = [e for e in run.events if e.kind == FRAMEWORK_STALL_EVENT and e.data.get("what") not in ("engine_wait",
                                                                                                      "not_ready",
                                                                                                      "running_idle")]
    stalls += _not_ready(run) + _running_idle(run)
    stalls += _engine_waits(run)
    if not stalls or run.job.exit_code == 0 or any(e.kind == EventKind.LAUNCHER_SUCCEEDED for e in run.events):
        return []
    if any(f.is_cause for f in failures_of_run(run)):
        return []  # a failure the crash rules judge; a stall after it is its echo
    desync = _batches(run)
    return [desync] if desync is not None else [_hang(stalls)]


def _not_ready(run: Run) -> list[LogEvent]:
    """A launcher's word that it gave up waiting for the server, where the server printed no progress after it in
    that file (a wait that a later ready line or progress print ended is a slow start, not a stall)."""
    gave_up = [e for e in run.events if e.kind == FRAMEWORK_STALL_EVENT and e.data.get("what") == "not_ready"]
    later: dict[str, int] = {}
    for e in run.events:
        if e.kind == EventKind.PROGRESS:
            later[e.evidence.file] = max(later.get(e.evidence.file, 0), e.evidence.line)
    return [e for e in gave_up if later.get(e.evidence.file, 0) < e.evidence.line]


IDLE_AT_END = 2  # vLLM's idle metrics lines (every 5-10 s) a server's output must end with to be a stall


def _running_idle(run: Run) -> list[LogEvent]:
    """vLLM's metrics with requests running and no token made, where its output ends with ``IDLE_AT_END`` or more of them
    and no other progress print after them (a server that took up its work again printed throughput; an idle one runs
    no request)."""
    idle = [e for e in run.events if e.kind == FRAMEWORK_STALL_EVENT and e.data.get("what") == "running_idle"]
    out: list[LogEvent] = []
    for f in {e.evidence.file for e in idle}:
        mine = sorted((e for e in idle if e.evidence.file == f), key=lambda e: e.evidence.line)
        last_progress = max((e.evidence.line for e in run.events if e.kind == EventKind.PROGRESS and e.evidence.file == f),
                            default=0)
        if len(mine) >= IDLE_AT_END and last_progress <= mine[-1].evidence.line:
            out += mine[-IDLE_AT_END:]
    return out


def _engine_waits(run: Run) -> list[LogEvent]:
    """vLLM's front-end's waits for its engine, where they are a stall: the log ends in one and the server never came up
    (no ready line or other progress); an idle server that came up prints the same line every few seconds."""
    waits = [e for e in run.events if e.kind == FRAMEWORK_STALL_EVENT and e.data.get("what") == "engine_wait"]
    if not waits or any(e.kind == EventKind.PROGRESS for e in run.events):
        return []
    ends = {(e.evidence.file, e.evidence.line) for e in run.events if e.kind == EventKind.FILE_END}
    return waits if any((e.evidence.file, e.evidence.line) in ends for e in waits) else []


def _hang(stalls: list[LogEvent]) -> Finding:
    culprits = sorted({c for e in stalls if isinstance(c := e.data.get("culprit"), int)})
    what = str(stalls[-1].data.get("what"))
    per_rank: dict[int | None, float] = {}  # each reporter's waits add up; several ranks report the same wait
    for e in stalls:
        if isinstance(s := e.data.get("seconds"), (int, float)):
            per_rank[e.rank] = per_rank.get(e.rank, 0.0) + float(s)
    waited = max(per_rank.values(), default=0.0)
    sure = bool(culprits) or what not in WAITS or waited >= SURE_S
    who = (f"; rank{'s' if len(culprits) > 1 else ''} {', '.join(map(str, culprits))} did not enter the collective"
           if culprits else "")
    seconds = f" ({len(stalls)} report{'s' if len(stalls) > 1 else ''}, {waited:.0f} s in all)" if waited else ""
    return Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL, verdict=Verdict.HANG, ranks=tuple(culprits),
        message=f"the job stopped making progress: {SAID.get(what, what)}{seconds}{who}"[:500],
        hint=HINTS.get(what, HINT_STALL), evidence=tuple(e.evidence for e in (stalls[0], *stalls[1:][-1:])),
        data={"culprits": culprits,
              "certainty": {"level": "likely" if sure else "possible",
                            "why": ("a backtrace of the stuck process, taken while it hung" if what.startswith("native_")
                                    else "the launcher's own report that the server never came up"
                                    if what == "not_ready" else "the framework's own report that the job stopped") if sure else
                            "the framework's wait, which a long compilation also shows"}})


def _batches(run: Run) -> Finding | None:
    """Ranks of one scheduler group whose watchdog dumps show different batches: the desync finding, else None."""
    by_group: dict[object, dict[int, LogEvent]] = {}
    for e in run.events:
        if e.kind == FRAMEWORK_BATCH_EVENT and e.rank is not None:
            by_group.setdefault(e.data.get("dp"), {})[e.rank] = e
    for group in by_group.values():
        sigs = {r: (e.data.get("size"), tuple(e.data.get("rids") or ())) for r, e in group.items()}
        if len(set(sigs.values())) < 2:
            continue
        told = "; ".join(f"rank {r}: {s[0]} request{'s' if s[0] != 1 else ''}" for r, s in sorted(sigs.items())[:6])
        return Finding(
            kind=FindingKind.DESYNC, severity=Severity.CRITICAL, verdict=Verdict.DESYNC, ranks=(),
            message=f"the tensor-parallel ranks of one scheduler ran different batches when the watchdog fired ({told}): "
                    "they diverged and then called different collectives"[:500],
            hint="The ranks of one tensor-parallel group must take the same scheduling decisions: look for a choice one "
                 "rank makes alone (sampling or speculative-decoding acceptance with per-rank random state, a request "
                 "only some ranks saw) and make it on one rank and broadcast it.",
            evidence=tuple(e.evidence for e in list(group.values())[:4]),
            data={"culprits": [], "sides": [{"ranks": [r], "batch": list(s[1])} for r, s in sorted(sigs.items())],
                  "certainty": {"level": "likely", "why": "the ranks' own dumps of their batch at the timeout"}})
    return None


def _setup_end(run: Run) -> list[Finding]:
    """An input whose log ends at a serving framework's GPU peer-to-peer check of its start-up (``P2P_CHECK_RE``) or
    at a step of its distributed set-up (``DIST_STEP_RE``), with nothing after it: no line of the server coming up, no
    progress, no error, no exit, not ncclscope's own run. The next step of a start-up that goes on prints its own line
    (the model loading, the server's ready line); a log that stops there is a start-up that never came up: a possible
    hang in the P2P test or in the first exchanges of the new communicators. No rank is named."""
    if run.job.exit_code is not None or run.exits or run.from_ncclscope() or failures_of_run(run):
        return []
    if any(e.kind in WENT_ON[1:] for e in run.events):
        return []
    jit = [e for e in run.events if e.kind == EventKind.FILE_END and JIT_ROOT_RE.search(e.evidence.text)]
    if jit:  # progress before it is the job's: the build is the step it stopped at
        return [_jit_lock(jit)]
    if any(e.kind == EventKind.PROGRESS for e in run.events):
        return []
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and P2P_CHECK_RE.search(e.evidence.text)]
    if ends:
        return [_setup_finding(ends, "startup_p2p_check", "the start-up's GPU peer-to-peer (P2P) check of the custom "
                               "all-reduce (it runs once the communicators are built)", "P2P test")]
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and DIST_STEP_RE.search(e.evidence.text)]
    if ends:
        return [_setup_finding(ends, "startup_dist", "a step of the serving framework's distributed set-up (its "
                               "process group and its own NCCL communicator)", "first NCCL communicator's set-up")]
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and LIGHTNING_DEVICE_RE.search(e.evidence.text)]
    if ends and any(e.kind == EventKind.GROUP_FORMED for e in run.events):
        return [_setup_finding(ends, "strategy_first_broadcast", "Lightning's set-up of its strategy (each process's "
                               "\"LOCAL_RANK: N - CUDA_VISIBLE_DEVICES\" after every process joined the group), before the "
                               "model's wrap in DDP (its first collective, the broadcast of the parameters from rank 0)",
                               "model wrap's first broadcast", started="the training never started",
                               hint=f"{HINT_P2P}; CUDA's p2pBandwidthLatencyTest and nvidia-smi topo -m show the path "
                               "between the GPUs; py-spy dump --pid of every rank shows where each waits; NCCL_DEBUG=INFO "
                               "shows where NCCL stops.")]
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and LIGHTNING_JOINING_RE.search(e.evidence.text)]
    if ends and not any(e.kind == EventKind.GROUP_FORMED for e in run.events):
        return [_setup_finding(ends, "rendezvous", "the processes' start of init_process_group (Lightning's "
                               "\"Initializing distributed: GLOBAL_RANK: N, MEMBER: k/W\"), with no word that the group "
                               "formed (\"All distributed processes registered\")", "rendezvous of the process group",
                               started="the group never formed", hint=RENDEZVOUS_HINT)]
    ends = [e for e in run.events if e.kind == EventKind.FILE_END and DS_ENGINE_RE.search(e.evidence.text)]
    if ends:
        return [_setup_finding(ends, "engine_first_broadcast", "DeepSpeed's engine start (\"DeepSpeed info: version=\"), "
                               "before the engine's first collective (the broadcast of the model's parameters from rank 0)",
                               "engine's first broadcast", started="the training never started",
                               hint=f"{HINT_P2P}; CUDA's p2pBandwidthLatencyTest and nvidia-smi topo -m show the path "
                               "between the GPUs; py-spy dump --pid of every rank shows where each waits; NCCL_DEBUG=INFO "
                               "shows where NCCL stops.")]
    return []


def _setup_finding(ends: list[LogEvent], cls: str, step: str, where: str, started: str = "the server never came up",
                   hint: str | None = None) -> Finding:
    """The possible hang of a start-up whose log ``ends`` at ``step`` (``_setup_end``)."""
    return Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL, verdict=Verdict.HANG,
        message=f"the log ends at {step}, with nothing after it: {started}; a possible hang in the "
                f"{where} or the first exchanges between the GPUs (no rank can be named from this text)",
        hint=hint or f"{HINT_P2P} and the framework's --disable-custom-all-reduce; CUDA's p2pBandwidthLatencyTest and "
             "nvidia-smi topo -m show the path between the GPUs; NCCL_DEBUG=INFO shows where NCCL stops.",
        evidence=tuple(e.evidence for e in ends[:2]),
        data={"culprits": [], "class": cls,
              "certainty": {"level": "possible", "why": f"the log stops at {step.split(' (')[0]}, with no later step "
                            "of the start-up, no error and no exit after it"}})


def _jit_lock(ends: list[LogEvent]) -> Finding:
    """The possible hang of processes whose log ends as they start a JIT build of a C++/CUDA extension (``JIT_ROOT_RE``):
    no process prints a build step or the module loading, so none builds: each waits on the lock of the build folder,
    which a build killed earlier (an interrupted first run) left behind."""
    return Finding(
        kind=FindingKind.HANG, severity=Severity.CRITICAL, verdict=Verdict.HANG,
        message="the log ends as the processes start torch's JIT build of an extension (\"as PyTorch extensions root\"), "
                "with no build step and no \"Loading extension module\" after it: no process is building, each waits "
                "on the lock of the extension's build folder under torch_extensions; a possible hang before the first "
                "collective (no rank can be named from this text)",
        hint="A build killed earlier (an interrupted run, a full disk, a job timed out while compiling) leaves its lock "
             "file in the extension's build folder (~/.cache/torch_extensions/<py>_<cu>/<op>/lock, or under "
             "TORCH_EXTENSIONS_DIR), and every later run waits on it forever: remove that folder (or the whole "
             "torch_extensions cache) and start again; with many processes on shared storage, set TORCH_EXTENSIONS_DIR "
             "to a local disk, or pre-build the ops (DS_BUILD_OPS=1 pip install deepspeed).",
        evidence=tuple(e.evidence for e in ends[:2]),
        data={"culprits": [], "class": "jit_build_lock",
              "certainty": {"level": "possible", "why": "the log stops at the JIT build's start with no build output "
                            "and no error or exit after it; a stale lock is the usual reason"}})

