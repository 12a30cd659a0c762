"""PyTorch c10d (ProcessGroupNCCL watchdog, desync, DETAIL mismatch), mp.spawn, torchrun and wrapper lines,
torch 1.10 to 2.13+.

A line may carry tool prefixes (``lines.strip_tool_prefixes``: torchrun's ``[rankN]:``, srun's ``N: ``,
mpirun's ``[1,N]<stdout>:``, Ray's ``(Actor pid=..)``, CI / Kubernetes timestamps ...); the rank a prefix
gives is the line's rank when the line itself names none. Then a glog head: ``[E1218 20:27:21.426 ProcessGroupNCCL.cpp:629]``
(torch >= 2.0), ``[E ProcessGroupNCCL.cpp:475]`` (torch 1.x, no time), torch's Python logging
``W0124 03:42:15.485000 1505018 torch/multiprocessing/spawn.py:146]``; a glog head glued behind other
output (a tqdm bar redrawn without a newline) is found inside the line. Tracebacks arrive as
``Traceback ...`` blocks; mp.spawn's ``-- Process N terminated with the following error:`` names the
rank of the traceback under it. torchrun's failure summary is a block of ``key : value`` lines under
``Failures:`` / ``Root Cause (first observed failure):``.

Shapes by release (own fixtures in tests/sources/test_parse_torch_versions.py, each citing the thread it follows):
``Process group watchdog thread terminated with exception: <error>`` (2.2+, ``NCCL watchdog thread
terminated with exception`` before), ``Exception (either an error or timeout) detected by watchdog at
work: N, last enqueued NCCL work: N, last completed NCCL work: N`` (2.3-2.5), ``failure detected by
watchdog at work sequence id`` (2.6+), ``NCCL error in: <file>:<line>, <reason>, NCCL version X`` with
or without the exception type in front (torch 1.10/1.11 printed NCCL 2.10.3 as ``21.0.3``).
"""
from __future__ import annotations

import re
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain

from ..nccl.failures import DIST_AREAS, EntryKind, classify
from .command_env import command_settings
from .fr_trace_text import FrTraceText
from .framework_lines import SGLANG_HEAD_RE
from .json_record import json_record_facts
from .launcher_node import LauncherView
from .pace import PaceReader
from .program_facts import LayoutLines, program_facts
from .restarts import restart_record
from .topo_rows import gpu_links
from .lines import split_tool_prefixes, strip_tool_prefixes
from .ray_workers import WorkerRanks, stated_rank
from .tool_lines import ToolLines
from .launch_silence import LaunchSilence
from .records import (
    C10dLine,
    CollectiveMismatch,
    DesyncReport,
    DistError,
    DumpSignal,
    GroupFormed,
    HeartbeatTimeout,
    JobCancelled,
    LaunchMisuse,
    LaunchedTasks,
    LauncherExit,
    LauncherSignal,
    LauncherStopped,
    LauncherSucceeded,
    MonitoredBarrierFailure,
    NodeCount,
    NodeRankStated,
    ProgramExit,
    ProgressSeen,
    RankClaim,
    RankFinished,
    Rec,
    StoreBarrierWait,
    StoreSocket,
    TorchRec,
    TorchVersionLine,
    TorchWarning,
    WatchdogFailure,
    WatchdogTimeout,
    WorldSize,
)

MAX_LINE = 64 * 1024
MAX_FRAMES = 256  # a traceback's innermost frames kept (between this and twice this)
GLUED_RANK_RE = re.compile(r"\[(?:rank|default)(\d{1,7})\]:\s?")
GLOG_RE = re.compile(
    r"^\[(?P<sev>[EWIF])(?:(?P<md>\d{3,4}) (?P<t>[\d:.]+) ?)? ?(?:\d+ )?(?P<src>[^\]\s]+:\d+)\] ?"
    r"|^(?P<sev2>[EWIF])(?P<md2>\d{4}) (?P<t2>[\d:.]+) (?:\d+ )?(?P<src2>[^\]\s]+:\d+)\] ?"  # torch's Python logging
)
GLOG_ANY_RE = re.compile(r"\[(?P<sev>[EWIF])(?:(?P<md>\d{4}) (?P<t>[\d:.]+) | )(?P<src>[\w./-]{1,200}\.(?:cpp|hpp|cc|h):\d{1,6})\] ?")
PG_RE = re.compile(
    r"\[PG (?:ID )?(?P<pg>\d+)(?: PG GUID (?P<guid>[^\s(]{0,200}))?(?: ?\((?P<desc>[^)]{0,500})\))? Rank (?P<rank>\d+)\]"
)
RANK_BRACKET_RE = re.compile(r"\[Rank (\d+)\]")
WORK_RE = re.compile(
    r"WorkNCCL\((?:SeqNum=(?P<seq>\d{1,18}), )?OpType=(?P<op>\w{1,40})(?:, NumelIn=(?P<ni>\d{1,18}), "
    r"NumelOut=(?P<no>\d{1,18}))?, Timeout\(ms\)=(?P<to>\d{1,18})\)(?: ran for (?P<ran>\d{1,18}) milliseconds)?"
)
FAILURE_RE = re.compile(
    r"failure detected by watchdog at work sequence id: (?P<seq>\d+) PG status: last enqueued work: (?P<e>-?\d+)"
    r"(?:, last started work: (?P<s>-?\d+)[^,]{0,200})?, last completed work: (?P<c>-?\d+)"
)
OLD_FAILURE_RE = re.compile(
    r"(?:Timeout at NCCL work|detected by watchdog at work): (?P<seq>-?\d+), last enqueued NCCL work: (?P<e>-?\d+), "
    r"last completed NCCL work: (?P<c>-?\d+)"
)
DUMP_SIGNAL_RE = re.compile(
    r"Received a dump signal due to a collective timeout from\s+(?:this local rank|rank (?P<from>\d+)).{0,1000}?"
    r"Last enqueued NCCL work: (?P<e>-?\d+), last completed NCCL work: (?P<c>-?\d+)"
)
DESYNC_LAG_RE = re.compile(r"ranks \[(?P<ranks>[\d, ]*)\] are the lagging ranks")
DESYNC_AT_RE = re.compile(r"Timeout at collective: (?P<op>\w+), #(?P<seq>\d+)")
# the report's lag analysis (TraceUtils.h): "[1] joined but didn't finish collective #5 (count from 1)", "[0, 2]
# finished collective #5, but didn't join collective #6 (count from 1)": the ranks it names caused the desync
DESYNC_JOINED_RE = re.compile(r"\[(?P<ranks>[\d, ]{1,20000})\] (?:joined but didn't finish collective #(?P<seq>\d{1,19})"
                              r"|finished collective #\d{1,19}, but didn't join collective #(?P<next>\d{1,19}))")
MISMATCH_RE = re.compile(r"Rank (?P<rank>\d+) is running collective: (?P<fp>CollectiveFingerPrint\([^)]{0,4000}\))")
MISMATCH_SEQ_RE = re.compile(r"CollectiveFingerPrint\(SequenceNumber=(\d{1,19})")
BACKEND_MISMATCH_RE = re.compile(r"Is there a distributed collective mismatch|Mismatched collective detected")
STORE_BARRIER_RE = re.compile(
    r"(?P<what>Waiting in store based barrier to initialize process group for rank|Timed out initializing process "
    r"group in store based barrier on rank): (?P<rank>\d{1,7}), (?:for )?key: (?P<key>\S{1,200}) "
    r"\(world_size=(?P<w>\d{1,7}), worker_count=(?P<c>\d{1,7})"
)
PROGRAM_EXIT_WORDS = ("process group has NOT been destroyed before it is being destructed",
                      "destroy_process_group() was not called before program exit")
UNIQUEID_RANK_RE = re.compile(r"^\[(?P<rank>\d{1,7})\] is setting up NCCL communicator")  # torch 1.12's store wait
BARRIER_RE = re.compile(r"Ranks? (?P<ranks>[\d, ]+) failed to pass monitoredBarrier in (?P<ms>\d+) ms")
EXC_RE = re.compile(
    r"^(?P<type>(?:[\w.]+\.)?(?:\w*Error|\w*Exception|KeyboardInterrupt|SystemExit))(?::\s?(?P<msg>.*))?$"
)
# the line that ends an open traceback: its exception, whatever the class is called ("etcd.EtcdKeyNotFound: Key not
# found", "ray.exceptions.RayTaskError(ValueError): ...")
TRACEBACK_END_RE = re.compile(r"^(?P<type>[A-Za-z_][\w.]{0,120}(?:\([\w.]{1,80}\))?): (?P<msg>\S.*)$")
FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
# torch 1.x (THC) reporting a failed CUDA call: "THCudaCheck FAIL file=.../Module.cpp line=59 error=101 : invalid device
# ordinal"
THC_RE = re.compile(r"THCudaCheck FAIL file=\S{1,500} line=\d{1,7} error=\d{1,5} : (?P<msg>\S.{0,300})$")
SIGNAL_RE = re.compile(r"Sending process (?P<pid>\d+) closing signal (?P<sig>\w+)")
AGENT_HEAD_RE = re.compile(r"^[IWE]\d{4} [\d:.]{8,20} (?P<pid>\d{1,10}) torch/distributed/elastic/")  # torchrun's agent
SPAWN_SIGNAL_RE = re.compile(r"Terminating process (?P<pid>\d+) via signal (?P<sig>SIG\w+)")
SPAWN_ERROR_RE = re.compile(r"^-- Process (?P<i>\d+) terminated with the following error:")
# RETURNN: a process's pid as it joins the group, with its rank when the same line states it; its rank on the line after;
# its exception hook's head (better_exchook), naming the process by its pid
RETURNN_PID_RE = re.compile(r"Torch(?:: | distributed initialized\. )Hostname \S{1,255}, pid (?P<pid>\d{1,10}), "
                            r"(?:using GPU|rank (?P<r>\d{1,7}),)")
RETURNN_RANK_RE = re.compile(r"^Torch: Distributed: rank (?P<r>\d{1,7}), size \d")
RETURNN_UNHANDLED_RE = re.compile(r"^Unhandled exception <class '[\w.]{1,200}'> in thread .{1,300}, proc (?P<pid>\d{1,10})\.")
SPAWN_EXIT_RE = re.compile(r"process (?P<i>\d+) terminated with (?:exit code (?P<code>-?\d+)|signal (?P<sig>SIG\w+))")
# OpenMPI's (mpirun) and PRRTE's (prterun, OpenMPI 5) report of the process that ended the job
MPI_NOTICED_RE = re.compile(
    r"\b(?:mpirun|prterun|orterun|mpiexec) noticed that process rank (?P<rank>\d{1,7}) with PID (?P<pid>\d{1,10}) on "
    r"node (?P<host>\S{1,255}) exited on signal (?P<sig>\d{1,3})(?: \((?P<name>[^)]{1,60})\))?"
)
# torch's multi-process test harness (torch.testing._internal.common_distributed), as in PyTorch's own test logs
HARNESS_EXIT_RE = re.compile(r"\bProcess (?P<i>\d{1,7}) exited with error code (?P<code>-?\d{1,4})")
TERMINATE_RE = re.compile(r"terminate called after throwing an instance of '(?P<type>[\w:<>, ]{1,200})'")
# warnings that name their cause (sources.records.TorchWarning); a substring each, tested before any regex
WARNING_WORDS = ("is not compatible with the current PyTorch installation", "] Using non-blocking mode: 1",
                 " cuda graph addresses")  # vLLM / SGLang registering their custom all-reduce's buffers
# a process's own report of the signal that kills it: UCX's handler ("[host:pid:0:tid] Caught signal 11 (Segmentation
# fault: ...)", also "[host:pid :0:tid]") and OpenMPI's ("[host:pid] Signal: Aborted (6)" under "*** Process received
# signal ***")
SIGNAL_REPORT_RE = re.compile(
    r"^\[(?P<host>[^\s:\]]{1,255}):(?P<pid>\d{1,10})(?: ?:\d{1,6}:\d{1,10}\] {1,4}Caught signal (?P<sig>\d{1,3}) \("
    r"|\] Signal: [\w ]{1,40} \((?P<sig2>\d{1,3})\)$)"
)
# Slurm's step daemon ending a job or a step from outside (time limit, scancel, preemption), glued behind a progress
# bar at times: "slurmstepd: error: *** JOB 494583 ON node17 CANCELLED AT 2024-04-20T09:09:37 DUE TO TIME LIMIT ***"
SLURM_CANCEL_RE = re.compile(
    r"\*\*\* (?P<scope>JOB|STEP) [\w.+]{1,40} ON (?P<host>\S{1,255}) CANCELLED AT \S{1,40}(?: DUE TO (?P<why>[A-Z][A-Z_ ]{0,40}?))?"
    r" ?\*\*\*"
)
# a rank's own print that its work ended; FINISH_WORDS gate the regex (one of them is in every line it matches)
FINISH_WORDS = ("omplete", "inished", "done", "Done", "raining time", "stopped:", "xiting")
FINISH_RE = re.compile(
    r"(?i)\b(?:training|train|run|job|program|script|process|worker|rank)(?: loop)?(?: is| has)? "
    r"(?:completed?|finished|done)\b"
    r"|\b(?:finished|done with|completed) (?:the )?training\b|\ball done\b|\btraining time: [\d.]+ ?s"
    r"|\bTrainer\.fit`? stopped: |\brank[ =:]?\d{1,7}\b.{0,40}\b(?:finished|done|exiting)\b"
    r"|\brank[ =:]?\d{1,7}:? (?:has )?completed[.!]?\s*$"  # "Rank 3 completed": the script's own last print
    r"|^\s*(?:all )?(?:done|finished)[.!]*\s*$"
)
RANK_WORD_RE = re.compile(r"(?i)\brank[ =:]?(\d{1,7})\b")
# a script's print behind its rank in brackets, "[3] done" (no more than three digits: a pid in brackets is no rank)
BRACKET_RANK_RE = re.compile(r"^\[(\d{1,3})\] ")  # a pid is no rank: "process 4711 exiting" names none
# the program's own progress prints (sources.records.ProgressSeen); PROGRESS_WORDS gate the regex
PROGRESS_WORDS = ("loss", "Loss", "LOSS", "samples/", "tokens/", "toks/", "images/", "seqs/", "seq/", "/step",
                  "startup complete", "200 OK", "passed", "hroughput", "successful", "Successful requests",
                  "Uvicorn running on", "ready to roll", "batch=", "step=")
PROGRESS_RE = re.compile(  # case-sensitive alternatives, each starting with a literal (a fast scan over long lines)
    # "Loss: 0.41", "loss is 0.41", {'loss': 1.5}, "train_loss=2.1e-3"; the word stands alone and its number is a
    # decimal or ends there ("LOSS21Cg" inside base64 or a hash is no loss print; "loss 0.0009" glued to a log line is)
    r"(?<![A-Za-z0-9])(?:loss|Loss|LOSS)['\"]?\s*(?:is\s*|[:=]\s*)?[-+]?(?:\d+\.\d|\d+\b|nan\b|inf\b)"
    r"|[Tt]hroughput\b(?: \([\w/.]{1,20}\))?\s*[:=]?\s*\d"  # a serving benchmark's "Request throughput (req/s): 8.9"
    r"|Successful requests:\s*[1-9]"  # a serving benchmark's result: requests served
    r"|(?:samples|tokens|toks|images|seqs?)/s(?:ec(?:ond)?)?\b"  # a throughput's unit, printed beside its number
    r"|Application startup complete|\" 200 OK\s*$|\bpassed[.!]?\s*$"
    r"|(?<!=)=+ [1-9]\d{0,6} passed(?:, \d{1,7} (?:skipped|xfailed|xpassed|deselected|warnings?|rerun))* in \d"  # pytest's summary,
    # every test passed (a failed or errored test is not in its list)
    r"|Uvicorn running on |The server is fired up and ready to roll"  # a server's ready lines (SERVER_READY_RE)
    r"|\b(?:is|was) successful[.!]?\s*$"  # a check script's own pass line: "sanity check is successful!"
    r"|\d ?(?:m?s|sec)/step\b"  # a step's time: "0.412 sec/step", "812ms/step"
    r"|\[(?:batch|step)=[1-9]\d{0,9}/[1-9]\d{0,9}\]"  # a console logger's block head: Composer's "[batch=3/10]:"
)
# the time one step took, as a training loop prints it beside the step: "0.412 sec/step", "3.1 s/step", "812 ms/step",
# Megatron's "elapsed time per iteration (ms): 1412.8", LitGPT's "iter 15 step 0: loss 1.9, time: 511.86ms"
STEP_TIME_RE = re.compile(
    r"(?P<v>\d{1,7}(?:\.\d{1,6})?) ?(?P<u>ms|s|sec)/step\b"
    r"|elapsed time per iteration \(ms\): (?P<v2>\d{1,9}(?:\.\d{1,6})?)"
    r"|\bstep \d{1,9}\b.{0,200}?\btime: (?P<v3>\d{1,7}(?:\.\d{1,6})?) ?(?P<u3>ms|s)\b"
)
MAX_STEP_TIMES = 1024  # step times kept per file: past it every other one is dropped and half as many are taken
# a server's ready lines among the progress prints: its start-up ended (uvicorn's, SGLang's)
SERVER_READY_RE = re.compile(r"Application startup complete|Uvicorn running on |The server is fired up and ready to roll")
# a launcher or framework stopped from outside: torchrun's "Received 2 death signal" ("Received Signals.SIGINT death
# signal" in 2.x), DeepSpeed's "Main process received SIGINT, exiting", Lightning's "[rank: 0] Received SIGTERM: 15",
# srun's own Ctrl-C ("srun: interrupt (one more within 1 sec to abort)", "srun: sending Ctrl-C to StepId=...") and its
# end of a step ("srun: forcing job termination", "srun: Job step aborted: Waiting up to 32 seconds ...")
STOP_WORDS = ("death signal", "process received SIG", "Received SIG", "srun: ")
DEATH_SIGNAL_RE = re.compile(
    r"Received (?:Signals\.)?(?P<sig>SIG[A-Z]{2,8}|\d{1,2}) death signal"
    r"|Main process received (?P<sig2>SIG[A-Z]{2,8}), exiting"
    r"|\bReceived (?P<sig3>SIG(?:TERM|INT|HUP|USR1|USR2))(?:: \d{1,2})?\s*$"
    r"|srun: (?P<int>interrupt \(one more within|sending Ctrl-C to )"
    r"|srun: (?P<kill>forcing job termination|Job step aborted)"
)
SIGNAL_NAMES = {"1": "SIGHUP", "2": "SIGINT", "3": "SIGQUIT", "9": "SIGKILL", "15": "SIGTERM"}
# Python's faulthandler on a fatal signal of the process ("Fatal Python error: Segmentation fault"): that process died
PY_FATAL_RE = re.compile(r"Fatal Python error: (?P<what>Segmentation fault|Bus error|Aborted|Floating point exception|"
                         r"Illegal instruction)")
PY_FATAL_SIGNALS = {"Segmentation fault": 11, "Bus error": 7, "Aborted": 6, "Floating point exception": 8,
                    "Illegal instruction": 4}
# the shell's report of a child killed by a fatal signal: "Segmentation fault (core dumped)", bash's "train.sh: line 4:
# 4711 Segmentation fault      (core dumped) python train.py", or the signal's name alone on its line
SHELL_FATAL_RE = re.compile(r"^(?:\S{1,200}: line \d{1,7}: {1,4}\d{1,10} {1,4})?(?P<what>Segmentation fault|Bus error|Aborted|"
                            r"Floating point exception|Illegal instruction)(?: {1,12}\(core dumped\)(?: .{0,300})?)?$")
# a native crash handler's announcement: sglang's / vLLM's "!!!!!!! Segfault encountered !!!!!!!", glog's and folly's
# "*** SIGSEGV (@0x0) received by PID 4711 (TID 0x7f..) from PID 0; stack trace: ***"; the frames it prints follow
NATIVE_CRASH_RE = re.compile(r"!{3,} ?Segfault encountered ?!{3,}|\*\*\* (?P<sig>SIG[A-Z]{3,6}) \(@0x[0-9a-fA-F]{1,16}\) "
                             r"received by PID (?P<pid>\d{1,10})"
                             # gdb: "Program received signal SIGSEGV, Segmentation fault.", "Thread 1 "python" received ...",
                             # and on a core file "Program terminated with signal SIGSEGV, Segmentation fault."
                             r"|^(?:Program|Thread \d{1,7}(?: \"[^\"]{0,60}\")?) (?:received|terminated with) signal "
                             r"(?P<gsig>SIG[A-Z]{3,6}), "
                             # valgrind: "==48213== Process terminating with default action of signal 11 (SIGSEGV)"
                             r"|^==(?P<vpid>\d{1,10})== Process terminating with default action of signal \d{1,2} "
                             r"\((?P<vsig>SIG[A-Z]{3,6})\)")
# gdb's lines between its report of the signal and the frames: its prompt ("(gdb) bt"), the source line it shows
# ("44\t./nptl/pthread_kill.c: No such file or directory."), "[Current thread is 1 (Thread 0x7f.. (LWP 88530))]"
GDB_CHATTER_RE = re.compile(r"^\s{0,4}(?:\(gdb\)|\[Current thread is |\[New (?:LWP|Thread) |\[Thread debugging "
                            r"|\d{1,7}\t[^\t]{0,400}$"
                            # valgrind's own lines inside its report ("==48213==  Access not within mapped region ...")
                            r"|==(?P<vg>\d{1,10})==(?! {1,12}(?:at|by) 0x))")
# one frame of a native stack: the handler's Python-like 'File "misc/cudawrap.cc", line 90, in ncclCuMemHostEnable()',
# glog's "@ 0x7f12.. ncclCommInitRank", OpenMPI's "[host:pid] [ 4] /usr/lib/libnccl.so.2(+0xbd72c)[0x7f..]", UCX's
# " 4 0x00000000000bd72c ncclCommInitRankFunc()  /src/init.cc:1408"
NATIVE_FRAME_RE = re.compile(
    r'^\s{0,12}(?:File "(?P<file>[^"]{1,300})", line (?P<line>\d{1,7}), in (?P<func>\S{1,200})'
    r"|@\s{1,8}0x[0-9a-fA-F]{1,16}\s{1,8}(?P<func2>\S{1,200})"
    r"|\[[^\]\s]{1,255}:\d{1,10}\] \[ ?\d{1,3}\] (?P<lib>\S{1,300})"
    r"|\d{1,3} {1,4}0x[0-9a-fA-F]{1,16} (?P<func3>\S{1,200}) {1,4}(?P<file3>\S{1,300})"
    # gdb's "#3  0x00007ff58be01168 in initOnceFunc () at misc/ibvwrap.cc:94", "#1  ncclTopoGpuDistance (...) at
    # graph/topo.cc:640", "#2  0x.. in ncclCommInitRank () from /usr/lib/libnccl.so.2"
    r"|#\d{1,3} {1,4}(?:0x[0-9a-fA-F]{1,16} in )?(?P<func4>[\w:~<>]{1,200}) \([^\n]{0,400}?\)(?: (?:at|from) (?P<file4>\S{1,300}))?"
    # glibc's backtrace_symbols under UCX's handler: " 3  /opt/nccl/lib/libnccl.so.2(rasThreadMain+0x4b1) [0x7ff1c18c6331]"
    r"|\d{1,3} {1,4}(?P<lib5>/[^\s(]{1,300})\((?P<func5>[A-Za-z_][\w:]{0,200})?(?:\+0x[0-9a-fA-F]{1,16})?\) {0,4}\[0x[0-9a-fA-F]{1,16}\]"
    # valgrind's "==48213==    at 0x5F1B2C4: ncclTopoSearchRecNet(ncclTopoSystem*, ...) (search.cc:420)" and its "by" frames
    r"|==\d{1,10}== {1,12}(?:at|by) 0x[0-9a-fA-F]{1,16}: (?P<func6>[\w:~<>?]{1,200})(?:\([^\n]{0,400}?\))? "
    r"\((?:(?P<file6>[^\s():]{1,300}):(?P<line6>\d{1,7})|in (?P<lib6>[^\s()]{1,300}))\))"
)
# a frame inside NCCL: its sources (init.cc, misc/cudawrap.cc, transport/net_ib.cc), its functions (ncclCommInitRank),
# its library (libnccl.so.2)
NCCL_FRAME_RE = re.compile(r"\bnccl[A-Z_]\w{0,80}|libnccl|(?:^|[/\s\"])(?:misc|transport|graph|device|plugin|ras)/\w{1,60}\.cc\b"
                           r"|(?:^|/)(?:init|enqueue|group|bootstrap|proxy|transport|channel|collectives)\.cc\b")
NATIVE_SOURCE_RE = re.compile(r"\.(?:cc|cu|cpp|cxx|c|h|hpp)$")  # a frame of a native source (never Python's own)
# glibc's malloc consistency checks, printed just before it aborts the process (SIGABRT): "free(): invalid next size
# (fast)", "free(): invalid pointer", "double free or corruption (out)", "malloc(): corrupted top size",
# "munmap_chunk(): invalid pointer", "corrupted size vs. prev_size", "malloc_consolidate(): invalid chunk size"
HEAP_ABORT_RE = re.compile(r"(?:(?:free|malloc|realloc|munmap_chunk|malloc_consolidate|_int_free|_int_malloc|tcache_thread_shutdown)"
                           r"\(\): (?:invalid|corrupted|double free|unaligned|memory corruption|unsorted double linked list)"
                           r"|double free or corruption|corrupted size vs\. prev_size|corrupted double-linked list)"
                           r"[\w .,()!-]{0,80}$")
# Ray's prefix of a worker's line: "(RayTrainWorker pid=1874, ip=10.20.4.12) ", "(pid=88977) " (ip only off the
# driver's node)
# Ray actors that hold a GPU of the job: workers (Ray Train's, vLLM's), OpenRLHF's model and vLLM engine actors
GPU_ACTOR_RE = re.compile(r"Worker|ModelActor$|ModelRayActor$|LLMRayActor$")
RAY_PREFIX_RE = re.compile(r"\((?:(?P<actor>[A-Za-z_][\w.:-]{0,100}) )?pid=(?P<pid>\d{1,10})(?:, ?ip=(?P<ip>[\w.:-]{1,64}))?\) ")
MAX_RAY_NODES = 4096
HEAP_ABORT_TYPE = "heap corruption"  # DistError.exc_type of a HEAP_ABORT_RE line followed by a frame inside NCCL
HEAP_REPORT_LINES = 60  # a native report's frames follow the heap check within these many lines
# a launcher command in the text and the processes it starts (sources.records.LaunchedTasks); LAUNCH_WORDS gate them
ACCEL_DEFAULT_MACHINES = "`--num_machines` was set to a value of `"  # accelerate's note of a default it used
# a wrapper's log of the command it runs as a Python argv list ("Launching: ['python3', '-m', 'torch.distributed.run',
# '--nnodes', '1', ...]"): the launcher's name closes its quoted item (ARGV_LAUNCH_WORDS), the list read as its words
ARGV_LAUNCHERS = ("srun", "mpirun", "mpiexec", "torchrun", "torch.distributed.run", "torch.distributed.launch", "deepspeed")
ARGV_LAUNCH_WORDS = tuple(f"{c}{q}, {q}" for c in ARGV_LAUNCHERS for q in ("'", '"'))
LAUNCH_WORDS = ("srun ", "mpirun ", "mpiexec ", "prterun ", "torchrun ", "torch.distributed.run ",
                "torch.distributed.launch ", "#SBATCH", "deepspeed ", "accelerate launch ", "tune run ",
                "horovodrun ", ACCEL_DEFAULT_MACHINES) + ARGV_LAUNCH_WORDS
ARGV_LIST_RE = re.compile(r"\[\s{0,4}(?:'[^'\n]{0,500}'|\"[^\"\n]{0,500}\")(?:,\s{0,4}(?:'[^'\n]{0,500}'|\"[^\"\n]{0,500}\")){1,200}\s{0,4}\]")
ARGV_ITEM_RE = re.compile(r"'([^'\n]{0,500})'|\"([^\"\n]{0,500})\"")
# a command line, also one quoted as a shell string (``bash -c 'accelerate launch ...'``, a ``set -x`` trace's
# ``+ CMD='torchrun ...'``)
LAUNCH_CMD_RE = re.compile(r"(?:^|[\s;&|$+>]|(?<=-c )['\"]|(?<==)['\"])(?P<cmd>srun|mpirun|mpiexec|prterun|torchrun|torch\.distributed\.(?:run|launch)|"
                           r"#SBATCH|deepspeed|accelerate launch|tune run|horovodrun)\s(?P<args>)")
# horovodrun's hosts: with none of these it runs its -np processes on the local machine (its default localhost:np)
HOROVOD_NP_RE = re.compile(r"(?:^|\s)(?:-np|--num-proc)[= ](?P<n>\d{1,7})\b")
HOROVOD_HOSTS_RE = re.compile(r"(?:^|\s)(?:-H|--hosts|-hostfile|--hostfile|--host-discovery-script)[= ]")
# torchrun and what takes its arguments: torch.distributed.run / .launch, torchtune's ``tune run --nproc_per_node 8
# <recipe>`` (its distributed recipes run under torchrun, its flags passed on as they are)
TORCH_LAUNCHERS = ("torchrun", "torch.", "tune run")
TASKS_RE = re.compile(r"(?:^|\s)(?:-n ?|--ntasks[= ]|-np )(?P<n>\d{1,7})\b")
ELASTIC_RE = re.compile(r"--nnodes[= ]\d{1,5}:\d")  # torchrun's elastic range: the world is not fixed by the command
NODES_RE = re.compile(r"(?:^|\s)(?:-N ?|--nodes[= ]|--nnodes[= ])(?P<n>\d{1,5})(?![\d:])")
# an MPI launcher's processes per node: PALS / MPICH / Intel MPI ``--ppn 4`` / ``-ppn 4``, Open MPI's ``-npernode 8``,
# ``-N 8`` and ``--map-by ppr:8:node``
MPI_PER_NODE_RE = re.compile(r"(?:^|\s)(?:-{1,2}ppn[= ]|-{1,2}npernode[= ]|-N |--map-by[= ]ppr:)(?P<n>\d{1,5})"
                             r"(?P<ppr>:node\b)?")
MPI_LAUNCHERS = ("mpirun", "mpiexec", "prterun")
PER_NODE_RE = re.compile(r"--(?:ntasks-per-node|tasks-per-node|nproc[_-]per[_-]node)[= ](?P<n>\d{1,4})\b")
# DeepSpeed's launcher: ``deepspeed --num_gpus 8 --num_nodes 2 train.py`` (one node when neither --num_nodes nor a
# hostfile says more)
OTHER_NODES_RE = re.compile(r"--nnodes|--rdzv[_-]endpoint|--master[_-]addr|--node[_-]rank")  # torchrun names nodes
DS_GPUS_RE = re.compile(r"(?:^|\s)--num_gpus[= ](?P<n>\d{1,4})\b")
DS_NODES_RE = re.compile(r"(?:^|\s)--num_nodes[= ](?P<n>\d{1,5})\b")
# accelerate's launcher: ``accelerate launch --num_processes 8 --num_machines 2 t.py`` (its --num_processes
# counts the processes of every machine); the default it notes: "`--num_machines` was set to a value of `1`"
ACCEL_PROCS_RE = re.compile(r"(?:^|\s)--num_processes[= ](?P<n>\d{1,7})\b")
ACCEL_MACHINES_RE = re.compile(r"(?:^|\s)--num_machines[= ](?P<n>\d{1,5})\b"
                               r"|`--num_machines` was set to a value of `(?P<d>\d{1,5})`")
DS_HOSTS_RE = re.compile(r"(?:^|\s)(?:--hostfile|-H|--include|-i)[= ]")
# the TCPStore server of init_process_group (torch 2.x) giving up on its clients: the barrier of the ranks' start-up
STORE_CLIENTS_RE = re.compile(r"Timed out after \d{1,9} seconds waiting for clients\. (?P<c>\d{1,7})/(?P<w>\d{1,7}) clients joined")
# c10d's own socket and store lines (socket.cpp, TCPStore.cpp), behind a glog head: "[c10d] " or "[c10d - debug] "
C10D_TAG_RE = re.compile(r"^\[c10d(?: - (?:debug|trace))?\] ?")
C10D_WHAT = (  # the first that matches says what the line is
    (StoreSocket.CONNECT_RETRY, re.compile(r"- retrying|has failed to connect to|failed to connect/validate")),
    (StoreSocket.CONNECT_TIMEOUT, re.compile(r"timed out after \S{1,20} while trying to connect to")),
    (StoreSocket.LISTEN_FAILED, re.compile(r"failed to listen on any local network address")),
    (StoreSocket.BIND_FAILED, re.compile(r"has failed to bind to|cannot be initialized on")),
    # (a store client's read that gave up: "waitForInput: socket SocketImpl(...) timed out after 1800000ms")
    (StoreSocket.WAIT_TIMEOUT, re.compile(r"wait timeout after|Socket Timeout|Timed out waiting \d{1,12}ms for|"
                                          r"waitForInput: socket .{0,300}timed out after")),
    (StoreSocket.PEER_GONE, re.compile(r"Connection reset by peer|Broken pipe|Connection closed by peer|"
                                       r"failed to recv, got 0 bytes")),
    (StoreSocket.CONNECTING, re.compile(r"will attempt to connect to|has connected to|has accepted a connection|"
                                        r"is listening on|started to listen")),
)
# the lines among them that are the rank's error (a glog E line): it gave up connecting, could not listen, timed out
# waiting for a key, or lost the store
C10D_FAILED = frozenset({StoreSocket.CONNECT_TIMEOUT, StoreSocket.LISTEN_FAILED, StoreSocket.WAIT_TIMEOUT,
                         StoreSocket.PEER_GONE})
C10D_PEER_RE = re.compile(r"\[(?P<h>[^\]\s]{1,255})\]:(?P<p>\d{1,5})|\((?P<h2>[^,\s()]{1,255}), ?(?P<p2>\d{1,5})\)"
                          r"|to host (?P<h3>[^\s:]{1,255}):(?P<p3>\d{1,5})")
# nccl-tests' own abort on a failed call ("Cuda failure common.cu:891 '...'" of 2018's tests, "Test NCCL failure
# common.cu:1012 'internal error'", behind "host: " at times), read here where the file is not nccl-tests' table
TEST_FAILURE_RE = re.compile(r"(?:^|: )(?:Test )?(?P<lib>NCCL|CUDA|Cuda) failure (?P<src>[\w./-]{1,200}:\d{1,6}) "
                             r"'(?P<msg>[^']{0,1000})'")
# the same check as NCCL's own examples spell it, copied into applications ("Failed, NCCL error
# .../nccl_utils.cc:296 'unhandled cuda error'", "Failed: Cuda error file.cu:41 'out of memory'")
APP_CHECK_RE = re.compile(r"\bFailed[,:] (?P<lib>NCCL|CUDA|Cuda) error (?P<src>[\w./-]{1,200}:\d{1,6}) '(?P<msg>[^']{0,1000})'")
# an NCCL call a framework reports failed ("ncclCommInitRank failed: unhandled cuda error", "NCCL operation
# ncclCommInitRank(&comm, nranks, id, rank) failed: ..."): the message names NCCL by its call
NCCL_CALL_FAILED_RE = re.compile(r"\bnccl[A-Z]\w{2,40}(?:\([^()]{0,300}\))? failed\b")
# exceptions of torch.distributed's store and sockets, read with or without a traceback above them
DIST_EXC_TYPES = ("DistNetworkError", "DistStoreError", "DistError", "RendezvousTimeoutError",
                  "RendezvousConnectionError")
SRUN_TASK_ENDED = "srun: task "  # LauncherExit.traceback of a SRUN_TASK_END_RE line: its host is a node of the job
# srun's report of a task's end ("srun: error: node7: task 3: Exited with exit code 1", "... tasks 0-3: Terminated"):
# the task number is a rank only when srun starts the ranks itself, so the record names none
SRUN_TASK_END_RE = re.compile(r"srun: error: (?P<host>[^\s:]{1,255}): tasks? (?P<t>[\d,-]{1,40}): (?:Exited with exit code "
                              r"(?P<code>\d{1,3})|(?P<sig>Terminated|Killed|Segmentation fault|Aborted|Bus error|Out Of Memory))")
SRUN_SIGNALS = {"Terminated": 15, "Killed": 9, "Segmentation fault": 11, "Aborted": 6, "Bus error": 7, "Out Of Memory": 9}
LAUNCHER_OK_RE = re.compile(r"worker group successfully finished|\bProcess \d{1,10} exits successfully")
# one search per line lets through only the lines that may hold a fact of the run's course (ends, progress, launcher
# commands and success) or of a stop from outside; the word lists above say which
RUN_GATE_RE = re.compile("|".join(re.escape(w) for w in FINISH_WORDS + PROGRESS_WORDS + LAUNCH_WORDS + ("successfully",)))
STOP_GATE_RE = re.compile("|".join(re.escape(w) for w in STOP_WORDS))
FINISH_GATE_RE = re.compile("|".join(re.escape(w) for w in FINISH_WORDS))
# the one search every line pays for the facts above: a line with none of their words skips them all
COURSE_GATE_RE = re.compile("|".join(re.escape(w) for w in FINISH_WORDS + PROGRESS_WORDS + LAUNCH_WORDS + STOP_WORDS
                                     + ("successfully",)))
LAUNCH_GATE_RE = re.compile("|".join(re.escape(w) for w in LAUNCH_WORDS))
FAILED_RE = re.compile(r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<lr>\d+) \(pid: (?P<pid>\d+)\)")
SUMMARY_KV_RE = re.compile(r"^\s*(?P<k>time|host|rank|exitcode|error_file|traceback)\s*:\s*(?P<v>.*)$")
SUMMARY_INDEX_RE = re.compile(r"^\[\d+\]:$")  # "[3]:", the head of one failure in torchrun's summary
SUMMARY_RANK_RE = re.compile(r"(-?\d+)(?: \(local_rank: (\d+)\))?")  # its "rank : 3 (local_rank: 3)" value
# an entry's exit code as only torchrun's summary writes it, its pid or its signal's name behind it: "-9 (pid: 4121)"
CUT_SUMMARY_EXITCODE_RE = re.compile(r"-?\d{1,4} \((?:pid: \d{1,10}|SIG[A-Z]{2,6})\)\s*")
SUMMARY_EXITCODE_RE = re.compile(r"(-?\d+)(?: \(pid: (\d+)\))?")  # its "exitcode : 1 (pid: 4121)" value
WATCHDOG_EXC_RE = re.compile(r"(?:Process group|NCCL) watchdog thread terminated with exception: (?P<err>.*)$")
ASYNC_EXC_RE = re.compile(r"raised the following async exception: (?P<err>.*)$")
# torch's NCCL error text: "NCCL error in: <file>:<line>, <reason>, NCCL version X" (ncclGetErrorWithVersion)
NCCL_ERROR_RE = re.compile(
    r"(?:NCCL error in: (?P<where>[^\s,]{1,300}), )?(?P<reason>[^,]{1,300}), NCCL version (?P<v>\d{1,3}\.\d{1,3}\.\d{1,3})"
)
NCCL_CODE_RE = re.compile(r"^nccl[A-Z]\w{2,40}: ")  # "ncclInvalidUsage: This usually reflects ..."
TORCH_VERSION_RE = re.compile(
    r"(?:PyTorch version|torch version|torch\.__version__)\s*[:=]\s*(?P<v>\d+\.\d+(?:\.\d+)?[\w.+-]{0,40})"
    r"|\btorch==(?P<v2>\d+\.\d+(?:\.\d+)?[\w.+-]{0,40})"
)
NCCL_PIP_RE = re.compile(
    r"(?:nvidia-nccl-cu\d+|\bnccl)==(?P<v>\d+\.\d+\.\d+)"  # pip lists, vLLM's "vLLM is using nccl==2.20.5"
    r"|NCCL version\s*[:=]\s*(?P<v2>\d+\.\d+\.\d+)"
)
DS_HOST_RE = re.compile(r"'[^']{1,255}': \[([\d, ]{0,100000})\]")  # one host of DeepSpeed's WORLD INFO DICT
DS_NNODES_RE = re.compile(r"\bnnodes=(\d{1,7}), num_local_procs=")
DIGITS_RE = re.compile(r"\d+")
WORLD_RE = re.compile(
    r"global_world_sizes=\[(?P<g>\d{1,7})"  # torchrun's rendezvous result
    r"|\bdist_world_size=(?P<d>\d{1,7})"  # DeepSpeed's launcher
    r"|GLOBAL_RANK: (?P<lr>\d{1,7}), MEMBER: \d{1,7}/(?P<l>\d{1,7})"  # Lightning
    r"|\bworld[_ ]size\s*[:=]\s*(?P<w>\d{1,7})\b"  # scripts and wrappers: "world_size=16", "world size: 16"
    r"|Completed store-based barrier for key:\S{1,200} with (?P<b>\d{1,7}) nodes"  # torch <= 1.13's init barrier
    r"|All distributed processes registered\. Starting with (?P<reg>\d{1,7}) processes"  # Lightning, every rank joined
    r"|\bSharding model on (?P<tgi>\d{1,7}) processes"  # text-generation-inference's launcher
    # JAX's jax.distributed: "Connected to coordination service at 10.0.0.1:8476 (process_index=0, process_count=512)"
    r"|coordination service\b.{0,300}\bprocess_count=(?P<jax>\d{1,7})"
    , re.IGNORECASE
)


def nccl_error_match(text: str) -> re.Match[str] | None:
    """``NCCL_ERROR_RE`` searched only in the 700 characters before ``, NCCL version``: never a scan of
    a whole long line from every offset."""
    i = text.find(", NCCL version ")
    if i < 0:
        return None
    return NCCL_ERROR_RE.search(text, max(0, i - 700), i + 40)


def normalize_nccl_version(v: str) -> str:
    """``21.0.3`` -> ``2.10.3``: torch 1.10 / 1.11 split NCCL's version code (21003) as if it were the old
    one-digit-minor form; every real major is 2 (or 3)."""
    parts = v.split(".")
    if len(parts) == 3 and parts[0].isdigit() and int(parts[0]) >= 20:
        code = int(parts[0]) * 1000 + int(parts[1]) * 100 + int(parts[2])
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return v


Head = tuple[str, int, str, "int | None", "str | None", "str | None", "str | None"]  # TorchRec's fields, in order


VLLM_QUEUE_WRITER = "message queue communication handle: Handle("  # vLLM's shm_broadcast, printed by rank 0
MAX_TAGGED = 1 << 16  # ranks one file's tags are remembered for (a tag names a rank of 7 digits at most)


@dataclass(slots=True)
class RankTagged(TorchRec):
    """A rank's first line under a launcher's rank tag (``[rank3]:``, ``[1,3]<stdout>:``, ``(... rank=3 pid=..)``),
    whatever the line says (a warning, a traceback line, a print): that rank has output in the input."""


@dataclass(slots=True)
class BarSeen(TorchRec):
    """The last line of a file that is a progress bar of any work (tqdm's ``38%|███▊      | 17356/45801``: a dataset's
    tokenizing, shards loading, steps), given once at the file's end: where some process was still working."""


# a tqdm bar: its percentage and its bar's left edge ("38%|", " 7%|")
BAR_RE = re.compile(r"\d{1,3}%\|")


@dataclass(slots=True)
class HeapWatch:
    """glibc's heap check (``HEAP_ABORT_RE``) and the native backtrace printed after it (OpenMPI's handler, UCX's,
    gdb's): when a frame of that report is inside NCCL (``libnccl``), NCCL's own code freed the corrupted block, and the
    check is the error of the process it aborts (``rules.cause.explain_heap``: no rank's code). A check with no NCCL
    frame after it (no report, or frames of other libraries) gives nothing: the abort stays the rank's."""

    pending: tuple[int, str, int | None] | None = None  # (line, the check's words, the rank its prefix named)

    def read(self, file: str, lineno: int, text: str, body: str, rank: int | None) -> DistError | None:
        if self.pending is not None:
            if lineno - self.pending[0] > HEAP_REPORT_LINES:
                self.pending = None
            elif "libnccl" in body and (f := NATIVE_FRAME_RE.match(body)) is not None:
                _, words, who = self.pending
                self.pending = None
                lib = (f.group("lib") or f.group("lib5") or f.group("file4") or f.group("file3") or "libnccl").rsplit("/", 1)[-1]
                return DistError(file, lineno, text, who if who is not None else rank, None, None, None, HEAP_ABORT_TYPE,
                                 f"glibc aborted the process on a corrupted heap ({words}), freed from NCCL's code "
                                 f"({lib[:120]})", None, [])
        if "(): " in body or "corrupt" in body:
            h = HEAP_ABORT_RE.match(body.strip())
            if h is not None:
                self.pending = (lineno, h.group(0), rank)
        return None


@dataclass
class _State:
    """What the stream remembers between lines."""

    file: str
    frames: dict[int | None, list[str]] = field(default_factory=dict)
    pending_last_error: dict[int | None, DistError] = field(default_factory=dict)
    awaiting_last_error: set[int | None] = field(default_factory=set)
    summary: dict[str, str] | None = None
    summary_root: bool = False
    summary_start: int = 0
    in_summary: bool = False
    spawn_rank: int | None = None  # "-- Process N terminated with the following error:" until its exception
    headed: int | None = None  # the rank such a head gave the last exception read (its bare lines after are its own)
    prompt_host: str | None = None  # the host of the last shell prompt read (a paste of several machines' consoles)
    crashed: set[int] = field(default_factory=set)  # ranks Composer's launcher said crashed (its "Rank N crashed ...")
    node_ranks: set[tuple[int, int, str]] = field(default_factory=set)  # (nnodes, node rank, machine) stated
    timeouts: set[tuple[int | None, int | str]] = field(default_factory=set)  # (rank, seq or op) already reported
    errors: set[tuple[int | None, str]] = field(default_factory=set)  # (rank, message) already reported
    versions: set[tuple[str | None, str | None]] = field(default_factory=set)
    worlds: set[tuple[int | None, int]] = field(default_factory=set)  # (rank, size) a program's own print stated
    nodes: set[int] = field(default_factory=set)  # node counts a launcher printed, given once each
    tagged: set[int] = field(default_factory=set)  # ranks a launcher's tag has named (RankTagged given)
    terminate: dict[int | None, str] = field(default_factory=dict)  # "terminate called after throwing 'T'", by rank
    last_error: DistError | None = None  # the last C++ abort read (what():), for the harness line that names it
    claims: dict[int, int] = field(default_factory=dict)  # Lightning's GLOBAL_RANK claims given per rank
    sbatch: dict[str, int] = field(default_factory=dict)  # an sbatch header's task options read so far
    course: bool = False  # the line being read has a word of the run's course (COURSE_GATE_RE)
    progress: int = 0  # the program's progress prints read (ProgressSeen, given once at the end)
    progress_first: int = 0
    progress_last: tuple[int, str, int | None] | None = None  # (line, text, rank) of the last
    bar_last: tuple[int, str, int | None] | None = None  # (line, text, rank) of the last progress bar of any work
    step_times: list[tuple[int, float, str]] = field(default_factory=list)  # (line, seconds, as printed) of steps' timings
    step_stride: int = 1  # one step time in this many is kept (MAX_STEP_TIMES bounds the list)
    step_seen: int = 0
    native: _Native | None = None  # a native crash report being read (its frames follow its announcement)
    c10d_errors: dict[int | None, str] = field(default_factory=dict)  # c10d's own error line last read, by rank
    fr: FrTraceText = field(default_factory=FrTraceText)  # the Flight Recorder analyser's report block being read
    tools: ToolLines | None = None  # other tools' lines: MPI / UCX, the kernel, stack dumps (``tool_lines``)
    ray_nodes: set[str] = field(default_factory=set)  # Ray workers' nodes by their prefix's ip ("": the driver's)
    ray_driver_rank: bool = False  # a line of the driver's own (no Ray prefix) tagged with a rank: the driver is a rank
    ray_ranks: WorkerRanks = field(default_factory=WorkerRanks)  # the rank each Ray worker stated
    heap: HeapWatch = field(default_factory=HeapWatch)  # glibc's heap check awaiting a frame inside NCCL
    agents: dict[int, set[int]] = field(default_factory=dict)  # torchrun agent pid: the worker pids it signals / reports
    exc_run: tuple[int, int | None, str] | None = None  # (line, rank, type) of the last exception read as an error:
    # processes printing one failure at once end their interleaved tracebacks in a run of exception lines, one each
    pid_ranks: dict[int, int] = field(default_factory=dict)  # RETURNN: a process's pid -> the rank it stated joining
    joining_pid: int | None = None  # RETURNN: the pid of the last "Torch: Hostname H, pid P, using GPU G." line
    agent_line: tuple[int, str] | None = None  # (line, text) of the agent's last such line
    launcher: LauncherView = field(default_factory=LauncherView)  # its launchers' banners and the ranks it shows
    pace: PaceReader = field(init=False)  # each run's pace and GPUs (``sources.pace``)
    tracebacks: bool = False  # a traceback's head was read (its exception line is the traceback reader's)
    failed: bool = False  # a failure or a stall was read (an error, a rank's end, a timeout, a mismatch)
    layout: LayoutLines = field(init=False)  # ranks joining from hosts, a config block (``program_facts``)

    def __post_init__(self) -> None:
        self.pace = PaceReader(self.file)
        self.layout = LayoutLines(self.file)


@dataclass
class _Native:
    """A native crash handler's report: its announcement (or its first frame) and the frames inside NCCL."""

    head: tuple[int, str, int | None]  # (line, text, rank) of its first line
    signal: int
    pid: int | None
    nccl: list[str] = field(default_factory=list)  # "func (file:line)" of each frame inside NCCL, innermost first
    quiet: bool = False  # the process's end is already given (a signal report): only frames inside NCCL add an error


def parse_torch_lines(lines: Iterable[tuple[int, str]], file: str) -> Iterator[Rec]:
    """Stream c10d, traceback, mp.spawn, torchrun and wrapper records out of (line number, text) pairs."""
    st = _State(file)
    st.tools = ToolLines(file)
    silence = LaunchSilence(file)
    last: tuple[int, str] | None = None  # the file's last line with text
    for lineno, raw in lines:
        text = raw[:MAX_LINE].rstrip("\r\n")
        if text:
            last = (lineno, text)
            if (quiet := silence.feed(lineno, text)) is not None:
                yield quiet
            for rec in _line(st, lineno, text):
                if not st.failed and isinstance(rec, FAILURE_RECORDS):
                    st.failed = True
                yield rec
    if last is not None and not st.failed:
        yield from _last_words(st, *last)
    if (quiet := silence.flush()) is not None:
        yield quiet
    yield from st.tools.flush()
    yield from _flush_native(st)
    yield from _flush_summary(st)
    yield from _one_agent_node(st)
    yield from _one_launcher_node(st)
    if st.progress_last is not None:
        n, text, rank = st.progress_last
        yield ProgressSeen(file, n, text, rank, None, None, None, st.progress, st.progress_first, tuple(st.step_times))
    if st.bar_last is not None:
        n, text, rank = st.bar_last
        yield BarSeen(file, n, text, rank, None, None, None)
    yield from st.pace.flush()
    yield from st.layout.flush()


# what a file says of a failure or a stall: with any of them read, its last line is no last word of its own
FAILURE_RECORDS = (DistError, LauncherExit, WatchdogTimeout, WatchdogFailure, CollectiveMismatch, DesyncReport,
                   MonitoredBarrierFailure, HeartbeatTimeout)


def _last_words(st: _State, lineno: int, text: str) -> Iterator[Rec]:
    """A console whose last line is an exception, printed bare (no traceback, no rank tag, a message the knowledge base
    does not know: a script's own ``UnboundLocalError: ...``), in a file that told of no failure or stall before it,
    ends with the program's death of it: its error, of no rank. Anywhere else such a line says nothing (a log goes on
    after a caught exception's print); in a file with a traceback, its exception line is the traceback reader's."""
    if st.tracebacks:
        return
    prefix_rank, _, body = split_tool_prefixes(text)
    m = EXC_RE.match(body.strip()) if not body.startswith(" ") else None
    if m is None or m.group("type").endswith(("KeyboardInterrupt", "SystemExit", "Warning")) or not m.group("msg"):
        return
    yield DistError(st.file, lineno, text, prefix_rank, None, None, None, m.group("type"), m.group("msg").strip(), None,
                    [])


def _agent_worker(st: _State, lineno: int, text: str, body: str, worker: int) -> None:
    """A worker process torchrun's agent names in its own log line (a closing signal sent, a failure reported)."""
    a = AGENT_HEAD_RE.match(body)
    if a is not None and len(st.agents) <= MAX_AGENTS:
        st.agents.setdefault(int(a.group("pid")), set()).add(worker)
        st.agent_line = (lineno, text)


def _one_agent_node(st: _State) -> Iterator[Rec]:
    """One torchrun agent whose own workers are as many as every world size the file states runs the whole job
    alone: one node (an agent of several nodes has only its node's share of the world)."""
    if len(st.agents) != 1 or st.agent_line is None:
        return
    workers = len(next(iter(st.agents.values())))
    if workers > 1 and {size for _, size in st.worlds} == {workers}:
        yield NodeCount(st.file, st.agent_line[0], st.agent_line[1], None, None, None, None, 1)


def _one_launcher_node(st: _State) -> Iterator[Rec]:
    """One node where the file shows one launcher running the whole world (``launcher_node``): a local rank tag of the
    world's last rank, or one launcher's banner with every rank of the world printing."""
    at = st.launcher.where
    if at is not None and st.launcher.one_node({size for _, size in st.worlds}, st.tagged):
        yield NodeCount(st.file, at[0], at[1], None, None, None, None, 1)


def _flush_summary(st: _State) -> Iterator[Rec]:
    if st.summary and ("exitcode" in st.summary or "rank" in st.summary):
        yield _launcher_exit(st.summary, st.file, st.summary_start, st.summary_root)
    st.summary = None


def _summary_line(st: _State, lineno: int, text: str, stripped: str) -> Iterator[Rec] | None:
    """torchrun's failure summary block: records to yield when the line belongs to it, else None."""
    if stripped.startswith("Root Cause (first observed failure)"):
        st.in_summary, st.summary_root = True, True
        return _flush_summary(st)
    if stripped in ("Failures:", "Other Failures:"):
        st.in_summary, st.summary_root = True, False
        return _flush_summary(st)
    if not st.in_summary:
        kv = SUMMARY_KV_RE.match(text) if "exitcode" in stripped else None
        if kv is not None and kv.group("k") == "exitcode" and CUT_SUMMARY_EXITCODE_RE.fullmatch(kv.group("v")):
            # an entry of the summary whose head was cut off (an excerpt that starts at "exitcode : -9 (pid: 4121)")
            st.in_summary, st.summary_root, st.summary, st.summary_start = True, False, {"exitcode": kv.group("v")}, lineno
            return iter(())
        return None
    if SUMMARY_INDEX_RE.match(stripped):
        out = list(_flush_summary(st))
        st.summary, st.summary_start = {}, lineno
        return iter(out)
    kv = SUMMARY_KV_RE.match(text)
    if kv and st.summary is not None:
        st.summary[kv.group("k")] = kv.group("v").strip()
        return iter(())
    if stripped.startswith(("=", "-")) and not stripped.startswith("-- Process"):
        out = list(_flush_summary(st))
        if stripped.startswith("="):
            st.in_summary = False
        return iter(out)
    if stripped == "<NO_OTHER_FAILURES>":
        return iter(())
    st.in_summary = False
    return _flush_summary(st)


def _launch_lines(st: _State, lineno: int, text: str, body: str) -> Generator[Rec, None, bool]:
    """What launchers say of the job's processes and machines: the raylet's report of a worker that died, each
    machine's node rank (under the shell prompt's or pdsh's host), a launcher refusing its own command line. Their
    records, and whether the line was one of those that nothing else reads."""
    if "A worker died or was killed while executing a task" in body or "killed due to memory pressure" in body:
        w = RAY_WORKER_PID_RE.search(body)  # the raylet's report of a worker process that died (not a Python error of it)
        yield LauncherExit(st.file, lineno, text, None, None, -9, int(w.group(1)) if w else None, None, None,
                           "Ray: a worker process died (killed from outside: the OOM killer, the node's memory monitor, "
                           "a forced stop; or a crash of its own)", False)
        return True
    if "ank " in body and ("crashed with exit code" in body or "exited with code" in body):
        if (c := COMPOSER_CRASH_RE.search(body)) is not None and len(st.crashed) < MAX_TAGGED:
            st.crashed.add(int(c.group("r")))  # Composer's launcher: the rank whose end stopped the others
            return True
        if (x := COMPOSER_EXIT_RE.search(body)) is not None:  # its report of each rank's end
            rank = int(x.group("r"))
            yield LauncherExit(st.file, lineno, text, rank, None, int(x.group("code")), int(x.group("pid")), None, None,
                               None, rank in st.crashed)
            return True
    if text.find("@", 0, 200) >= 0 and (ph := PROMPT_HOST_RE.match(text)) is not None:  # (no slice per line)
        st.prompt_host = ph.group("host")  # the machine whose console the lines after it are
    if "node rank: " in body or "node_rank=" in body:
        if (nr := NODE_RANK_RE.search(body)) is not None and len(st.node_ranks) < MAX_TAGGED:
            host = HOST_PREFIX_RE.match(text)  # pdsh's / DeepSpeed's "gpu003: " before the line
            machine = st.prompt_host or (host.group(1) if host else st.file)
            stated = (int(nr.group("n") or nr.group("n2")), int(nr.group("r") or nr.group("r2")), machine)
            if stated not in st.node_ranks:
                st.node_ranks.add(stated)
                yield NodeRankStated(st.file, lineno, text, None, None, None, None, *stated)
    if ": error: " in body and (a := LAUNCH_ARGS_RE.match(body.strip())) is not None:  # a launcher's argparse error
        yield LaunchMisuse(st.file, lineno, text, None, None, None, None, a.group("prog"), a.group("msg")[:300])
        return True
    if "not reachable via ssh" in body and (n := DS_SSH_RE.search(body)) is not None:
        yield LaunchMisuse(st.file, lineno, text, None, None, None, None, "deepspeed",
                           f"host {n.group('host')} of the hostfile is not reachable over passwordless ssh: the runner "
                           "launches nothing")
        return True
    if "Using IP address of " in body and (n := DS_NO_IP_RE.search(body)) is not None:
        yield LaunchMisuse(st.file, lineno, text, None, None, None, None, "deepspeed",
                           f"no IP address found for node {n.group('host')}: the launch command is built with an empty "
                           "--master_addr")
        return True
    return False


def _endings(st: _State, lineno: int, text: str, body: str, prefix_rank: int | None) -> Generator[Rec, None, bool]:
    """The lines that say how a process or the job ended or was stopped (a death signal, a scheduler's cancel, a
    launcher's or srun's exit report, a fatal signal, a warning or C++ abort text): their records, and whether the
    line was one of them (then nothing else reads it)."""
    st.course = COURSE_GATE_RE.search(body) is not None
    if st.course and STOP_GATE_RE.search(body):
        d = DEATH_SIGNAL_RE.search(body)
        if d:
            sig = d.group("sig") or d.group("sig2") or d.group("sig3") or ("SIGINT" if d.group("int") else "SIGTERM")
            yield LauncherStopped(st.file, lineno, text, None, None, None, None, SIGNAL_NAMES.get(sig, sig))
            return True
    if "CANCELLED AT" in body:
        c = SLURM_CANCEL_RE.search(body)
        if c:
            yield JobCancelled(st.file, lineno, text, None, None, None, None, c.group("scope"), c.group("why"),
                               c.group("host"))
            return True
    if "failed (exitcode:" in body:
        m = FAILED_RE.search(body)
        if m:
            _agent_worker(st, lineno, text, body, int(m.group("pid")))
            yield LauncherExit(st.file, lineno, text, None, int(m.group("lr")), int(m.group("code")),
                               int(m.group("pid")), None, None, None, False)
            return True
    if "exited with error code" in body:
        h = HARNESS_EXIT_RE.search(body)
        if h:
            i = int(h.group("i"))
            if st.last_error is not None and st.last_error.rank is None:
                st.last_error.rank = i  # the harness names the process whose C++ abort it printed just before
            yield LauncherExit(st.file, lineno, text, i, i, int(h.group("code")), None, None, None, None, False)
            return True
    if any(w in body for w in WARNING_WORDS):
        yield TorchWarning(st.file, lineno, text, prefix_rank, None, None, None, body.strip()[:500])
        return True
    if "terminate called after throwing an instance of" in body and "what():" not in body:
        tm = TERMINATE_RE.search(body)
        if tm:
            st.terminate[prefix_rank] = tm.group("type")
            return True
    if (yield from _launch_lines(st, lineno, text, body)):
        return True
    if "oom_kill event" in body and "slurmstepd" in body:  # the cgroup's OOM killer ended a process of the step
        yield LauncherExit(st.file, lineno, text, None, None, -9, None, None, None,
                           "slurmstepd: the step's cgroup out-of-memory handler killed a process", False)
        return True
    if "srun: error: " in body and ": task" in body:
        te = SRUN_TASK_END_RE.search(body)
        if te:
            code = int(te.group("code")) if te.group("code") else -SRUN_SIGNALS[te.group("sig")]
            if code != 0:
                yield LauncherExit(st.file, lineno, text, None, None, code, None, te.group("host"), None,
                                   f"{SRUN_TASK_ENDED}{te.group('t')} ended ({te.group('sig') or f'exit code {code}'})", False)
            return True
    if ("fault" in body or "error" in body or "Aborted" in body or "instruction" in body or "exception" in body) and (
            f := SHELL_FATAL_RE.match(body.strip())) is not None:
        sig = PY_FATAL_SIGNALS[f.group("what")]
        yield LauncherExit(st.file, lineno, text, prefix_rank, None, -sig, None, None, None,
                           f"Signal {sig} ({f.group('what')}): the shell's report of the process's end", False)
        return True
    if "Fatal Python error: " in body:
        f = PY_FATAL_RE.search(body)
        if f:
            sig = PY_FATAL_SIGNALS[f.group("what")]
            yield LauncherExit(st.file, lineno, text, prefix_rank, None, -sig, None, None, None,
                               f"Signal {sig} ({f.group('what')}): Python's fatal error handler", False)
            return True
    if "Caught signal " in body or "] Signal: " in body:
        x = signal_report(body.strip(), st.file, lineno, text)
        if x is not None:
            yield x
            if "Caught signal " in body and x.exitcode is not None:  # UCX's handler: its backtrace follows; frames inside
                st.native = _Native((lineno, text, prefix_rank), -x.exitcode, x.pid, quiet=True)  # NCCL name the crash
            return True
    if "noticed that process rank" in body:
        x = mpi_exit(text, st.file, lineno)
        if x is not None:
            yield x
            return True
    return False


def _line(st: _State, lineno: int, text: str) -> Iterator[Rec]:
    if st.in_summary and st.summary is not None and (SUMMARY_KV_RE.match(text) or SUMMARY_INDEX_RE.match(text.strip())):
        # an entry line of torchrun's failure summary ("  rank : 5 (local_rank: 5)", "[3]:"), six of its eight lines a
        # failed rank: nothing but the summary reads them (at 16,384 ranks, 98,000 lines kept off every other reader)
        yield from _summary_line(st, lineno, text, text.strip()) or ()
        return
    st.launcher.read(lineno, text)
    if text[:1] == "(" and "pid=" in text[:160]:
        yield from _ray_node(st, lineno, text)
    prefix_rank, task_label, body = split_tool_prefixes(text)
    if prefix_rank is None and text[:1] == "(":
        prefix_rank = st.ray_ranks.rank(text, body)  # a Ray worker's line: the rank it stated as it joined
    elif prefix_rank is not None and text[:1] != "(" and not st.ray_driver_rank:
        st.ray_driver_rank = True  # the driver's own torch line tagged "[rank0]:": the driver holds a rank
        yield from _ray_driver_node(st, lineno, text)
    elif text[:1] != "(" and not st.ray_driver_rank and VLLM_QUEUE_WRITER in text:
        st.ray_driver_rank = True  # vLLM's broadcast queue is made by its writer, rank 0: in the driver, a rank
        yield from _ray_driver_node(st, lineno, text)
    if prefix_rank is None and ("[rank" in body or "[default" in body):
        glued = GLUED_RANK_RE.search(body)  # another process's output glued in front of "[rank3]:"
        if glued:
            prefix_rank, body = int(glued.group(1)), body[glued.end():]
    if "%|" in body and BAR_RE.search(body):  # (a bar another record is glued behind counts too)
        st.bar_last = (lineno, text[:500], prefix_rank)
    st.pace.read(lineno, text, body)
    if (laid := st.layout.read(lineno, text, body)):
        yield from laid
    if st.tools is not None and (yield from st.tools.read(lineno, text, body, prefix_rank)):
        return
    if (st.heap.pending is not None or "(): " in body or "corrupt" in body) and (
            heap := st.heap.read(st.file, lineno, text, body, prefix_rank)) is not None:
        yield heap  # glibc's heap check, freed from NCCL's code: the process's error
        return
    if (st.native is not None or maybe_native(body)) and (yield from _native_line(st, lineno, text, body, prefix_rank)):
        return
    stripped = body.strip()
    summary = _summary_line(st, lineno, body, stripped)
    if summary is not None:
        yield from summary
        if st.in_summary or stripped.startswith(("Root Cause", "Failures:", "Other Failures:", "=")):
            return
    if "THCudaCheck FAIL" in body and (thc := THC_RE.search(body)) is not None:
        msg = f"CUDA error: {thc.group('msg').strip()}"  # torch 1.x's own report of a failed CUDA call
        if (prefix_rank, msg) not in st.errors:
            st.errors.add((prefix_rank, msg))
            yield DistError(st.file, lineno, text, prefix_rank, None, None, None, "THCudaCheck", msg, None, [])
        return
    if "closing signal" in body or "via signal" in body:
        m = SIGNAL_RE.search(body) or SPAWN_SIGNAL_RE.search(body)
        if m:
            _agent_worker(st, lineno, text, body, int(m.group("pid")))
            yield LauncherSignal(st.file, lineno, text, int(m.group("pid")), m.group("sig"))
            return
    if (yield from _endings(st, lineno, text, body, prefix_rank)):
        return
    if body.startswith("-- Process"):
        m = SPAWN_ERROR_RE.match(body)
        if m:
            st.spawn_rank = int(m.group("i"))
            return
    if (prefix_rank is None and "exception: Traceback" in body and "pid=" not in text[:len(text) - len(body)]
            and (tp := _sglang_traceback(body)) is not None):  # (inside a Ray worker, an engine's own TP rank: not the job's)
        st.spawn_rank = tp  # "[... DP3 TP3] Scheduler hit an exception: Traceback ...": the traceback after is TP3's
        st.frames[tp] = []
        return
    if ("pid " in body or "proc " in body or "Distributed: rank" in body) and _returnn_process(st, body):
        return
    g = GLOG_RE.match(body)
    if g is None and "] " in body and ("[E" in body or "[W" in body or "[I" in body or "[F" in body):
        g = GLOG_ANY_RE.search(body)  # a glog head glued behind a progress bar or another process's output
    sev = ts_text = None
    if g:
        sev = g.group("sev") or g.groupdict().get("sev2")
        md, t = g.group("md") or g.groupdict().get("md2"), g.group("t") or g.groupdict().get("t2")
        ts_text = f"{md.zfill(4)} {t}" if md else None  # torch 2.4+ drops the month's leading 0 (W311)
        body = body[g.end():]
    pgm = PG_RE.search(body) if "[PG " in body else None
    pg = pgm.group("pg") if pgm else None
    rank: int | None = None
    if pgm:
        rank = int(pgm.group("rank"))
    elif "[Rank " in body:
        rb = RANK_BRACKET_RE.search(body)
        if rb:
            rank = int(rb.group(1))
    if prefix_rank is not None and (rank is None or not task_label):
        rank = prefix_rank  # a launcher's rank tag is the global rank ([PG n Rank r] is the rank in group n);
        # srun's task number only stands in when the line names no rank of its own
    if rank is None:
        rank = st.spawn_rank
    head: Head = (st.file, lineno, text, rank, sev, ts_text, pg)
    said = False
    for rec in _facts(st, head, body, rank):
        said = True
        yield rec
    if prefix_rank is not None and not task_label and prefix_rank not in st.tagged and len(st.tagged) < MAX_TAGGED:
        st.tagged.add(prefix_rank)  # the first line a launcher tagged with this rank: the rank has output here
        if not said:  # (a record of the line itself already names it)
            yield RankTagged(st.file, lineno, text, prefix_rank, sev, ts_text, None)
    elif prefix_rank is None and (own := stated_rank(body)) is not None \
            and own not in st.tagged and len(st.tagged) < MAX_TAGGED:
        st.tagged.add(own)  # an untagged process stating its own rank as it joins (vLLM's driver): it has output here
        yield RankTagged(st.file, lineno, text, own, sev, ts_text, None)


def _sglang_traceback(body: str) -> int | None:
    """The rank of an SGLang scheduler's ``[2025-05-19 14:11:38 DP3 TP3] Scheduler hit an exception: Traceback (most
    recent call last):``: its tensor-parallel rank, the global rank where it runs no pipeline stage after the first
    (``PP0`` or none), as the head's rank is read elsewhere (``framework_lines``); None otherwise."""
    m = SGLANG_HEAD_RE.match(body)
    if m is None or int(m.group("pp") or 0) != 0 or "Traceback (most recent call last)" not in body:
        return None
    return int(m.group("tp"))


def _returnn_process(st: _State, body: str) -> bool:
    """RETURNN's lines of a process: as it joins, ``Torch: Hostname H, pid P, using GPU G.`` then ``Torch: Distributed:
    rank R, size S, ...`` (or both in ``Torch distributed initialized. Hostname H, pid P, rank R, ...``) tie the pid to
    its rank; its exception hook's ``Unhandled exception <class 'E'> in thread <...>, proc P.`` heads that process's
    exception block, whose error is then the rank's (None for a pid no join line named). True for the hook's line."""
    if (m := RETURNN_UNHANDLED_RE.match(body)) is not None:
        st.spawn_rank = st.pid_ranks.get(int(m.group("pid")))
        return True
    if (m := RETURNN_PID_RE.search(body)) is not None:
        st.joining_pid = int(m.group("pid"))
        if m.group("r") is not None and len(st.pid_ranks) < MAX_TAGGED:
            st.pid_ranks[st.joining_pid] = int(m.group("r"))
    elif st.joining_pid is not None and (m := RETURNN_RANK_RE.search(body)) is not None and len(st.pid_ranks) < MAX_TAGGED:
        st.pid_ranks[st.joining_pid] = int(m.group("r"))
        st.joining_pid = None
    return False



def _ray_node(st: _State, lineno: int, text: str) -> Iterator[Rec]:
    """The nodes Ray's worker prefixes name: Ray writes a worker's ``ip=`` only when it runs on another node than the
    driver's (``(RayTrainWorker pid=2231)`` the driver's node, ``(RayTrainWorker pid=1874, ip=10.0.0.12)`` another),
    so the workers' nodes are their distinct ips and the driver's when a worker's prefix names none; a ``NodeCount``
    each time one more is seen, from the second on (``model_build.ranks`` takes the largest). Only workers' prefixes (no actor name, or a
    ``GPU_ACTOR_RE`` one: Ray Train's and vLLM's workers, OpenRLHF's model actors): a trainer or controller actor holds
    no GPU of the job."""
    m = RAY_PREFIX_RE.match(text)
    while m is not None and m.group("actor") and not GPU_ACTOR_RE.search(m.group("actor")):
        # a process that forwards its own Ray workers' output (vLLM V1's ``(EngineCore_DP0 pid=3120) (RayWorkerWrapper
        # pid=2877, ip=10.0.0.2) ``): the worker's prefix is the next one
        m = RAY_PREFIX_RE.match(text, m.end())
    if m is None:
        return
    yield from _ray_count(st, lineno, text, m.group("ip") or "")
    yield from _ray_driver_node(st, lineno, text)


def _ray_count(st: _State, lineno: int, text: str, node: str) -> Iterator[Rec]:
    if node not in st.ray_nodes and len(st.ray_nodes) < MAX_RAY_NODES:
        st.ray_nodes.add(node)
        if len(st.ray_nodes) > 1:  # one node seen may be a cut log's: a count only once two are
            yield NodeCount(st.file, lineno, text, None, None, None, None, len(st.ray_nodes))


def _ray_driver_node(st: _State, lineno: int, text: str) -> Iterator[Rec]:
    """A driver that is itself a rank (vLLM's Ray executor runs rank 0 in the driver: its own lines tagged ``[rank0]:``
    with no Ray prefix, or its own ``vLLM message queue communication handle: Handle(connect_ip=...`` line, which the
    writer of the group's broadcast queue, rank 0, prints) runs on a node of the job, beside the nodes its workers'
    ``ip=`` name."""
    if st.ray_driver_rank and st.ray_nodes and "" not in st.ray_nodes:
        yield from _ray_count(st, lineno, text, "")


NATIVE_WORDS = (".c", "Segfault", "***", "received signal", "terminated with signal", "Process terminating with")


def maybe_native(body: str) -> bool:
    """The line may open or carry a native crash report (its announcement, a frame of a native source): the one gate
    of both the PyTorch log's reader and ``NativeWatch``."""
    return any(w in body for w in NATIVE_WORDS)


def _native_line(st: _State, lineno: int, text: str, body: str, rank: int | None) -> Generator[Rec, None, bool]:
    """A line of a native crash report (True: read, nothing else reads it); a line that ends the open report gives
    that report's records, and may begin the next one."""
    if _native(st, lineno, text, body, rank):
        return True
    if st.native is None:
        return False
    yield from _flush_native(st)
    return _native(st, lineno, text, body, rank)


class NativeWatch:
    """A native crash report (a handler's, gdb's, valgrind's) read out of another tool's lines, nccl-tests' output:
    ``read`` each line (True: it was the report's, nothing else reads it) and collect ``records``; ``flush`` at the
    end. The same reading as a PyTorch log's (``_native``)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.native: _Native | None = None
        self.records: list[Rec] = []

    def read(self, lineno: int, text: str) -> bool:
        if self.native is None and not maybe_native(text):
            return False
        if _native(self, lineno, text, text, None):
            return True
        if self.native is not None:
            self.records.extend(_flush_native(self))
            return _native(self, lineno, text, text, None)  # the line that ended it may begin the next report
        return False

    def flush(self) -> list[Rec]:
        self.records.extend(_flush_native(self))
        out, self.records = self.records, []
        return out


def _native(st: _State | NativeWatch, lineno: int, text: str, body: str, rank: int | None) -> bool:
    """A native crash report's line (its announcement, or one of its frames): read into ``st.native``, True. A report
    announced by its handler (``NATIVE_CRASH_RE``) or, unannounced, a handler's Python-like frame of a native source
    inside NCCL ('File "misc/cudawrap.cc", line 90, in ncclCuMemHostEnable()'): only crash handlers print those."""
    a = NATIVE_CRASH_RE.search(body) if maybe_native(body) else None
    if a is None and st.native is not None and (body.strip().startswith("====") or _chatter(st.native, body)):
        return True  # UCX's "==== backtrace (tid: N) ====" and its closing rule, gdb's own lines, inside the report
    if a is not None and st.native is not None:
        return False  # another report begins (another process's): the open one ends here
    if a is not None:
        sig = _SIGNALS.get(a.group("sig") or a.group("gsig") or a.group("vsig") or "SIGSEGV", 11)
        pid = a.group("pid") or a.group("vpid")
        st.native = _Native((lineno, text, rank), sig, int(pid) if pid else None)
        return True
    f = NATIVE_FRAME_RE.match(body)
    if f is None:
        return False
    file = (f.group("file") or f.group("file3") or f.group("lib") or f.group("file4") or f.group("lib5")
            or f.group("file6") or f.group("lib6") or "")
    func = (f.group("func") or f.group("func2") or f.group("func3") or f.group("func4") or f.group("func5")
            or f.group("func6") or "")
    inside = NCCL_FRAME_RE.search(f"{func} {file}") is not None
    if st.native is None:
        if not (inside and f.group("file") and NATIVE_SOURCE_RE.search(file)):
            return False
        st.native = _Native((lineno, text, rank), 11, None)
    if inside and len(st.native.nccl) < 8:
        at = f.group("line") or f.group("line6")
        where = f"{file.rsplit('/src/', 1)[-1]}:{at}" if at else file.rsplit("/", 1)[-1]
        st.native.nccl.append(f"{func} ({where})" if func else where)
    return True


def _chatter(n: _Native, body: str) -> bool:
    """gdb's and valgrind's own lines inside a report; valgrind's only under the reporting process's ``==pid==``."""
    c = GDB_CHATTER_RE.match(body)
    return c is not None and (c.group("vg") is None or n.pid is None or int(c.group("vg")) == n.pid)


def _flush_native(st: _State | NativeWatch) -> Iterator[Rec]:
    """The native crash report read so far, as the process's end by its signal (``LauncherExit``, code -signal), the
    frames inside NCCL named in its description."""
    n, st.native = st.native, None
    if n is None:
        return
    line, text, rank = n.head
    name = _SIGNAL_NAMES.get(n.signal, f"signal {n.signal}")
    where = ""
    if n.nccl:
        where = f"{NATIVE_IN_NCCL}{n.nccl[0]}" + (f", called from {n.nccl[-1]}" if len(n.nccl) > 1 else "")
    what = f"{_NATIVE_WORDS.get(n.signal, name)}{where} (a native crash report)"
    if n.quiet and not n.nccl:
        return
    if not n.quiet:
        yield LauncherExit(st.file, line, text, rank, None, -n.signal, n.pid, None, None,
                           f"Signal {n.signal} ({name}): {what}", False)
    yield DistError(st.file, line, text, rank, None, None, None, NATIVE_CRASH_TYPE, what, None, [])


def _c10d(st: _State, head: Head, msg: str, rank: int | None) -> Iterator[Rec]:
    """One of c10d's own socket / store lines (``C10dLine``); when it is a glog error (E, F) that ends the rank's
    rendezvous or store use (``C10D_FAILED``), also the rank's error (``DistError``, type ``c10d``)."""
    what = next((w for w, r in C10D_WHAT if r.search(msg)), StoreSocket.OTHER)
    p = C10D_PEER_RE.search(msg)
    peer = None
    if p is not None:
        peer = f"{p.group('h') or p.group('h2') or p.group('h3')}:{p.group('p') or p.group('p2') or p.group('p3')}"
    yield C10dLine(*head, what, peer)
    msg = msg.strip()
    if what in C10D_FAILED and head[4] in ("E", "F") and (rank, msg) not in st.errors:
        st.errors.add((rank, msg))
        st.c10d_errors[rank] = msg
        yield DistError(*head, "c10d", msg[:2000], None, [])


def _facts(st: _State, head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    if FrTraceText.wants(body.lstrip()):
        fr = st.fr.read(head, body.strip())
        if fr is not None:
            yield fr
            return
    if "restart" in body:
        again = restart_record(head, body)
        if again is not None:
            yield again
            return
    if body.startswith("GPU") and (links := gpu_links(head, body)) is not None:
        yield links  # a row of nvidia-smi topo -m
        return
    if (" failure " in body or " error " in body) and "'" in body and (
            t := TEST_FAILURE_RE.search(body) or APP_CHECK_RE.search(body)) is not None:
        if (rank, t.group("msg")) not in st.errors:
            st.errors.add((rank, t.group("msg")))
            yield DistError(*head, f"{t.group('lib').upper()} failure", t.group("msg").strip(" /"), None,
                            [t.group("src")])
        return
    if body.startswith("[c10d"):
        c = C10D_TAG_RE.match(body)
        if c is not None:
            yield from _c10d(st, head, body[c.end():], rank)
            return
    if "watchdog thread terminated" in body or "async exception" in body:
        yield from _watchdog_exception(st, head, body, rank)
        return
    if "WorkNCCL(" in body and "Watchdog caught collective operation timeout" in body:
        yield from _timeout(st, head, body, rank)
        return
    if "failure detected by watchdog" in body:
        m = FAILURE_RE.search(body)
        if m:
            yield WatchdogFailure(*head, int(m.group("seq")), int(m.group("e")), int(m.group("c")),
                                  int(m.group("s")) if m.group("s") else None)
        return
    if "enqueued NCCL work" in body:
        m = DUMP_SIGNAL_RE.search(body)
        if m:
            yield DumpSignal(*head, int(m.group("from")) if m.group("from") else rank, int(m.group("e")), int(m.group("c")))
            return
        m = OLD_FAILURE_RE.search(body)
        if m:
            yield WatchdogFailure(*head, int(m.group("seq")), int(m.group("e")), int(m.group("c")))
        return
    if "didn't finish collective #" in body or "but didn't join collective #" in body:
        j = DESYNC_JOINED_RE.search(body)
        if j is not None:
            ranks = [int(x) for x in j.group("ranks").replace(" ", "").split(",") if x]
            yield DesyncReport(*head, ranks, int(j.group("seq") or j.group("next")), None)
        return
    if "lagging ranks" in body or "Timeout at collective:" in body:
        lag = DESYNC_LAG_RE.search(body)
        at = DESYNC_AT_RE.search(body)
        ranks = [int(x) for x in lag.group("ranks").replace(" ", "").split(",") if x] if lag else []
        yield DesyncReport(*head, ranks, int(at.group("seq")) if at else None, at.group("op") if at else None)
        return
    if "Detected mismatch between collectives on ranks" in body:
        yield _mismatch(head, body, rank)
        return
    if "failed to pass monitoredBarrier" in body:
        m = BARRIER_RE.search(body)
        if m:
            ranks = [int(x) for x in m.group("ranks").replace(" ", "").split(",") if x]
            yield MonitoredBarrierFailure(*head, ranks, int(m.group("ms")))
        return
    if "store based barrier" in body:
        m = STORE_BARRIER_RE.search(body)
        if m:
            r = int(m.group("rank"))
            yield StoreBarrierWait(head[0], head[1], head[2], rank if rank is not None else r, head[4], head[5],
                                   head[6], m.group("key"), int(m.group("w")), int(m.group("c")),
                                   m.group("what").startswith("Timed out"))
    if "clients joined" in body:
        m = STORE_CLIENTS_RE.search(body)
        if m:  # the exception line goes on to the traceback reader below
            yield StoreBarrierWait(head[0], head[1], head[2], rank, head[4], head[5], head[6], "TCPStore clients",
                                   int(m.group("w")), int(m.group("c")), True)
    if "destroy" in body and any(w in body for w in PROGRAM_EXIT_WORDS):
        yield ProgramExit(*head)
        return
    if "Heartbeat monitor timed out" in body or "watchdog got stuck for" in body:
        yield HeartbeatTimeout(*head)
        return
    if ("collective mismatch" in body or "Mismatched collective" in body) and not EXC_RE.match(body.strip()):
        m = BACKEND_MISMATCH_RE.search(body)
        if m:  # a backend's abort on a mismatch, no exception line of Python's behind it
            yield from _backend_mismatch(st, head, body, rank, m)
            return
    if st.course and RUN_GATE_RE.search(body):
        if PROGRESS_RE.search(body):
            st.progress += 1
            st.progress_first = st.progress_first or head[1]
            st.progress_last = (head[1], head[2][:500], rank)
            if (t := STEP_TIME_RE.search(body)) is not None:
                _step_time(st, head[1], t)
        if FINISH_GATE_RE.search(body) or LAUNCH_GATE_RE.search(body) or "successfully" in body:
            yield from _run_facts(st, head, body, rank)
    yield from _versions_and_world(st, head, body, rank)
    yield from _traceback(st, head, body, rank)


def _step_time(st: _State, lineno: int, m: re.Match[str]) -> None:
    """Keep one step's time (seconds), one in ``step_stride``: at ``MAX_STEP_TIMES`` every other kept one is dropped
    and the stride doubles, so that a run of any length keeps its shape in a bounded list."""
    st.step_seen += 1
    if st.step_seen % st.step_stride:
        return
    v, unit = (m.group("v"), m.group("u")) if m.group("v") else (m.group("v2"), "ms") if m.group("v2") else (
        m.group("v3"), m.group("u3"))
    st.step_times.append((lineno, float(v) / 1000 if unit == "ms" else float(v), m.group(0)[-80:]))
    if len(st.step_times) >= MAX_STEP_TIMES:
        st.step_times[:] = st.step_times[::2]
        st.step_stride *= 2


def _run_facts(st: _State, head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    """What a line says of the run's course besides its progress (a line the gates let through): a rank's end, a
    launcher command, a launcher's success."""
    if FINISH_GATE_RE.search(body):
        yield from _finished(head, body, rank)
    if LAUNCH_GATE_RE.search(body):
        yield from _launched(st, head, body)
    if "successfully" in body and LAUNCHER_OK_RE.search(body):
        yield LauncherSucceeded(*head)


def _launched(st: _State, head: Head, body: str) -> Iterator[Rec]:
    """``LaunchedTasks`` of each launcher command on a line (``srun ... torchrun ...``: each its own arguments, up to
    the next): srun's and mpirun's task count (``-n``, ``--ntasks``, ``-np``, or ``-N`` x ``--ntasks-per-node``),
    torchrun's ``--nnodes`` x ``--nproc_per_node`` (one node when not given; an elastic range says nothing); an sbatch
    header's ``--ntasks`` / ``--nodes`` + ``--ntasks-per-node`` as its lines complete it."""
    yield from command_settings(head[0], head[1], head[2], body)  # the environment it sets for the job
    if ACCEL_DEFAULT_MACHINES in body and (d := ACCEL_MACHINES_RE.search(body)) is not None and d.group("d"):
        yield NodeCount(head[0], head[1], head[2], None, None, None, None, int(d.group("d")))
        return
    if any(w in body for w in ARGV_LAUNCH_WORDS):
        body = argv_words(body)
    found = list(LAUNCH_CMD_RE.finditer(body[:2000]))
    outer = any(not m.group("cmd").startswith(("torch", "deepspeed", "tune")) for m in found)  # srun / mpirun around it
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(body)
        args = body[m.start("args"):min(end, m.start("args") + 2000)]
        yield from _launch_count(st, head, m.group("cmd"), args)
        if m.group("cmd").startswith(TORCH_LAUNCHERS) and not outer and _one_node(" " + args):
            yield NodeCount(head[0], head[1], head[2], None, None, None, None, 1)


def argv_words(text: str) -> str:
    """``text`` with each Python argv list in it (``['torchrun', '--nnodes', '2']``) written as the command line it
    runs (`` torchrun --nnodes 2 ``), so that a launcher's arguments read the same either way."""
    return ARGV_LIST_RE.sub(lambda m: " " + " ".join(a or b for a, b in ARGV_ITEM_RE.findall(m.group(0))) + " ", text)


def _one_node(args: str) -> bool:
    """torchrun's arguments start one node's processes only: ``--standalone``, or ``--nproc_per_node`` with no
    ``--nnodes`` (its default is 1:1; ``--nnodes=1`` is read as a count already) and no rendezvous endpoint of
    another host's (a multi-node job names its nodes)."""
    if "--standalone" in args:
        return not NODES_RE.search(args) or bool(re.search(r"--nnodes[= ]1(?![\d:])", args))
    return bool(PER_NODE_RE.search(args)) and not OTHER_NODES_RE.search(args)


def _launch_count(st: _State, head: Head, cmd: str, args: str) -> Iterator[Rec]:
    tasks, nodes, per = (r.search(" " + args) for r in (TASKS_RE, NODES_RE, PER_NODE_RE))
    if cmd == "#SBATCH":
        if tasks is None and nodes is None and per is None:
            return
        for key, g in (("tasks", tasks), ("nodes", nodes), ("per", per)):
            if g is not None:
                st.sbatch[key] = int(g.group("n"))
        n = st.sbatch.get("tasks") or (st.sbatch["nodes"] * st.sbatch["per"] if {"nodes", "per"} <= st.sbatch.keys()
                                       else None)
        if nodes is not None and 0 < int(nodes.group("n")) <= 1 << 20:  # the allocation's nodes, as srun -N's
            yield NodeCount(head[0], head[1], head[2], None, None, None, None, int(nodes.group("n")))
        if n:
            yield LaunchedTasks(head[0], head[1], head[2], None, None, None, None, n, "srun")
        return
    if cmd == "deepspeed":
        yield from _deepspeed_launch(head, " " + args)
        return
    if cmd == "horovodrun":
        yield from _horovod_launch(head, " " + args)
        return
    if cmd.startswith("accelerate"):
        procs, machines = ACCEL_PROCS_RE.search(" " + args), ACCEL_MACHINES_RE.search(" " + args)
        n_machines = int(machines.group("n") or machines.group("d")) if machines is not None else 0
        if 0 < n_machines <= 1 << 20:
            yield NodeCount(head[0], head[1], head[2], None, None, None, None, n_machines)
        if procs is not None and 0 < int(procs.group("n")):
            yield LaunchedTasks(head[0], head[1], head[2], None, None, None, None, int(procs.group("n")),
                                "accelerate")
        return
    torch_launcher = cmd.startswith(TORCH_LAUNCHERS)
    if ELASTIC_RE.search(args):
        return
    if torch_launcher:
        n = int(per.group("n")) * (int(nodes.group("n")) if nodes else 1) if per else None
    else:
        n = int(tasks.group("n")) if tasks else (int(nodes.group("n")) * int(per.group("n")) if nodes and per else None)
    if nodes and cmd != "mpirun" and 0 < int(nodes.group("n")) <= 1 << 20:
        yield NodeCount(head[0], head[1], head[2], None, None, None, None, int(nodes.group("n")))
    elif cmd in MPI_LAUNCHERS and tasks is not None and (m := _mpi_nodes(int(tasks.group("n")), args)):
        yield NodeCount(head[0], head[1], head[2], None, None, None, None, m)
    if n:
        name = "torchrun" if torch_launcher else "srun" if cmd == "srun" else "mpirun"
        yield LaunchedTasks(head[0], head[1], head[2], None, None, None, None, n, name)


def _horovod_launch(head: Head, args: str) -> Iterator[Rec]:
    """``horovodrun -np 4 python train.py``: its processes (``-np``, under mpirun or Gloo: mpirun's count), and one
    node where it names no host (``-H``, ``--hostfile``, a discovery script): horovodrun's default is localhost."""
    tasks = HOROVOD_NP_RE.search(args)
    if tasks is None or not 0 < int(tasks.group("n")) <= 1 << 20:
        return
    yield LaunchedTasks(head[0], head[1], head[2], None, None, None, None, int(tasks.group("n")), "mpirun")
    if not HOROVOD_HOSTS_RE.search(args):
        yield NodeCount(head[0], head[1], head[2], None, None, None, None, 1)


def _mpi_nodes(tasks: int, args: str) -> int | None:
    """The nodes an MPI launcher's process count over its processes per node states (``mpiexec -n 8 --ppn 4``: 2,
    ``mpirun -np 16 -npernode 8``: 2), where the count is a whole number of nodes; None without a per-node count."""
    per = MPI_PER_NODE_RE.search(" " + args)
    if per is None or (per.group(0).lstrip().startswith("--map-by") and not per.group("ppr")):
        return None
    n = int(per.group("n"))
    return tasks // n if 0 < n <= tasks <= 1 << 20 and tasks % n == 0 else None


def _deepspeed_launch(head: Head, args: str) -> Iterator[Rec]:
    """``deepspeed --num_gpus 8 --num_nodes 2 train.py``: the nodes it names and its processes (GPUs x nodes; one
    node when it names no node count and no hostfile)."""
    gpus, nodes = DS_GPUS_RE.search(args), DS_NODES_RE.search(args)
    n_nodes: int | None = int(nodes.group("n")) if nodes else (None if DS_HOSTS_RE.search(args) else 1)
    if nodes is not None and n_nodes is not None and 0 < n_nodes <= 1 << 20:
        yield NodeCount(head[0], head[1], head[2], None, None, None, None, n_nodes)
    if gpus and n_nodes:
        yield LaunchedTasks(head[0], head[1], head[2], None, None, None, None, int(gpus.group("n")) * n_nodes,
                            "deepspeed")


def _finished(head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    """``RankFinished`` of a rank's own end print; a launcher's line (srun's ``task 2 done``) or one naming no rank is
    not one."""
    if body.lstrip().startswith(("srun:", "slurmstepd:")) or not FINISH_RE.search(body):
        return
    if rank is None:
        m = RANK_WORD_RE.search(body) or BRACKET_RANK_RE.match(head[2])
        rank = int(m.group(1)) if m else None
    if rank is not None:
        yield RankFinished(head[0], head[1], head[2], rank, head[4], head[5], head[6])


def _mismatch(head: Head, body: str, rank: int | None) -> CollectiveMismatch:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL's ``Detected mismatch between collectives on ranks. Rank 1 is running
    collective: CollectiveFingerPrint(SequenceNumber=731, OpType=ALLREDUCE, ...), but Rank 0 is running
    collective: CollectiveFingerPrint(SequenceNumber=731, OpType=BROADCAST, ...)``: the ranks, their
    fingerprints and sequence numbers. A line no prefix or ``[Rank N]`` tag gives a rank to is the first
    named rank's (torch names its own rank first)."""
    fps = MISMATCH_RE.findall(body)
    ranks = [int(r) for r, _ in fps]
    seqs = [int(m.group(1)) if (m := MISMATCH_SEQ_RE.match(fp)) else None for _, fp in fps]
    if rank is None and ranks and head[6] is None:
        head = (head[0], head[1], head[2], ranks[0], head[4], head[5], head[6])
    return CollectiveMismatch(*head, ranks, [fp for _, fp in fps], seqs, seqs[0] if seqs else None)


def _backend_mismatch(st: _State, head: Head, body: str, rank: int | None, m: re.Match[str]) -> Iterator[Rec]:
    """gloo's ``what():  [enforce fail at .../pair.cc:456] ... Is there a distributed collective mismatch
    in your code?`` (the C++ runtime's ``terminate called`` with no rank on it), NCCL's ``Mismatched
    collective detected``: an error of that rank whose kind is the mismatch (``rules.exits.MISMATCH_RE``)."""
    st.terminate.pop(rank, None)  # the "terminate called ..." before this what() is read here
    w = body.find("what():")
    msg = (body[w + len("what():"):] if w >= 0 else body).strip()[:500]
    if (rank, msg) in st.errors:
        return
    st.errors.add((rank, msg))
    yield DistError(*head, "gloo::EnforceNotMet" if "enforce fail" in msg else "collective mismatch", msg, None,
                    list(st.frames.pop(rank, [])))


def _timeout(st: _State, head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    m = WORK_RE.search(body)
    if m is None:
        return
    seq = int(m.group("seq")) if m.group("seq") else None  # torch before 1.11 printed no sequence number
    key = (rank, seq if seq is not None else m.group("op"))
    if key in st.timeouts:
        return
    st.timeouts.add(key)
    yield WatchdogTimeout(*head, seq, m.group("op"), int(m.group("ni")) if m.group("ni") else None,
                          int(m.group("no")) if m.group("no") else None, int(m.group("to")),
                          int(m.group("ran")) if m.group("ran") else None)


def _watchdog_exception(st: _State, head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    """``Process group watchdog thread terminated with exception: <error>`` and the older ``NCCL watchdog
    thread ...`` / ``... raised the following async exception: <error>``: a timeout inside is the timeout
    (once per rank and sequence number, however often it is echoed); any other error is the rank's error."""
    m = WATCHDOG_EXC_RE.search(body) or ASYNC_EXC_RE.search(body)
    if m is None:
        return
    err = m.group("err").strip()
    if "WorkNCCL(" in err and "Watchdog caught collective operation timeout" in err:
        yield from _timeout(st, head, err, rank)
        return
    if not err or (rank, err) in st.errors:
        return
    st.errors.add((rank, err))
    e = DistError(*head, "c10::DistBackendError", err, None, [])
    yield e
    yield from _nccl_version_of(st, head, err)
    if "NCCL error" in err:
        st.pending_last_error[rank] = e


def _nccl_version_of(st: _State, head: Head, text: str) -> Iterator[Rec]:
    if "NCCL version" in text:
        m = nccl_error_match(text)
        if m:
            yield from _version(st, head, None, normalize_nccl_version(m.group("v")))


def _version(st: _State, head: Head, torch: str | None, nccl: str | None) -> Iterator[Rec]:
    if (torch, nccl) not in st.versions:
        st.versions.add((torch, nccl))
        yield TorchVersionLine(*head, torch, nccl)


def _versions_and_world(st: _State, head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    """Versions and world sizes from wherever they are printed (collect_env, pip lists, launchers)."""
    # a program's own prints (RETURNN's, a script's) and its JSON record of its environment; a torch release they
    # state is kept once per file, as every other version line is (``_version``)
    for rec in chain(program_facts(*head[:3], body), json_record_facts(*head[:3], body)):
        if isinstance(rec, TorchVersionLine):
            yield from _version(st, head, rec.torch, rec.nccl)
        elif isinstance(rec, WorldSize):  # once per file and rank: a "[rank 0/8] step 10" print repeats every step
            if (rec.rank, rec.world_size) not in st.worlds and len(st.worlds) < MAX_TAGGED:
                st.worlds.add((rec.rank, rec.world_size))
                yield rec
        else:
            yield rec
    if "version" in body or "==" in body:
        m = TORCH_VERSION_RE.search(body)
        if m:
            yield from _version(st, head, m.group("v") or m.group("v2"), None)
        n = NCCL_PIP_RE.search(body)
        if n and not body.lstrip().startswith("NCCL version"):
            yield from _version(st, head, None, normalize_nccl_version(n.group("v") or n.group("v2")))
    if "WORLD INFO DICT" in body or "nnodes=" in body:
        yield from _deepspeed_world(st, head, body)
    if ("orld" in body or "MEMBER" in body or "barrier" in body or "registered" in body or "Sharding" in body
            or "process_count=" in body):
        w = WORLD_RE.search(body)
        if w:
            size = int(w.group("g") or w.group("d") or w.group("l") or w.group("w") or w.group("b") or w.group("reg")
                       or w.group("tgi") or w.group("jax"))
            r = int(w.group("lr")) if w.group("lr") else rank
            claim = w.group("lr") is not None  # Lightning's 'initializing ddp: GLOBAL_RANK: r': one process's claim
            if 0 < size <= 1 << 20 and ((r, size) not in st.worlds or claim and _claim_again(st, r)):
                st.worlds.add((r, size))
                kind = RankClaim if claim else GroupFormed if w.group("b") or w.group("reg") else WorldSize
                yield kind(head[0], head[1], head[2], r, head[4], head[5], head[6], size)


RAY_WORKER_PID_RE = re.compile(r"\bWorker PID: (\d{1,10})\b")
# Composer's launcher (composer.cli.launcher): "Rank 2 crashed with exit code -7.", then each rank's end, "Global rank 2
# (PID 2293) exited with code -7" (the others' -15: the launcher's SIGTERM once one crashed)
COMPOSER_CRASH_RE = re.compile(r"\bRank (?P<r>\d{1,7}) crashed with exit code -?\d{1,4}\b")
COMPOSER_EXIT_RE = re.compile(r"\bGlobal rank (?P<r>\d{1,7}) \(PID (?P<pid>\d{1,10})\) exited with code (?P<code>-?\d{1,4})\b")
# a launcher's argument parser refusing its command line: "launch.py: error: the following arguments are required: ...",
# "torchrun: error: unrecognized arguments: ..." (the program names launchers use; a script's own parser is not one)
LAUNCH_ARGS_RE = re.compile(r"^(?P<prog>launch\.py|run\.py|torchrun|deepspeed|accelerate(?:-launch)?|"
                            r"accelerate <command> \[<args>\] launch|torch\.distributed\.(?:run|launch)): error: "
                            r"(?P<msg>(?:the following arguments are required|unrecognized arguments|argument ).{0,400})$")
# a launcher's word of the node it runs as: LLaMA-Factory's "Multi-node training enabled: num nodes: 3, node rank: 0",
# DeepSpeed's "nnodes=2, num_local_procs=4, node_rank=1"
NODE_RANK_RE = re.compile(r"\bnum nodes: (?P<n>\d{1,5}), node rank: (?P<r>\d{1,5})\b"
                          r"|\bnnodes=(?P<n2>\d{1,5}), num_local_procs=\d{1,5}, node_rank=(?P<r2>\d{1,5})\b")
HOST_PREFIX_RE = re.compile(r"^([a-z0-9][\w.-]{0,254}): ")
# a shell prompt with its host before a command ("(train) root@gpu-a11:~# ", "user@node-2:/work$ "): the machine the
# lines after it ran on, in a paste of several machines' consoles
PROMPT_HOST_RE = re.compile(r"^(?:\([\w.-]{1,40}\)\s)?[\w.-]{1,64}@(?P<host>[\w.-]{1,64})(?::[^\s$#]{0,200})?[$#]\s")
# DeepSpeed's runner with no address for a node of its hostfile: "Using IP address of  for node trn-0" (two spaces)
DS_NO_IP_RE = re.compile(r"\bUsing IP address of\s{2}for node (?P<host>\S{1,255})")
# DeepSpeed's runner checks each hostfile host over ssh before it launches: "Using hostfile at hostfile but
# host=10.1.2.3 was not reachable via ssh. If you are running with a single node please remove hostfile or setup
# passwordless ssh."
DS_SSH_RE = re.compile(r"\bhost=(?P<host>\S{1,255}) was not reachable via ssh\b")
MAX_AGENTS = 64  # torchrun agents followed in one file (more: a concatenation of many nodes' logs)
MAX_CLAIMS = 4  # claims of one global rank given (two processes claiming it is the fault; more tell nothing new)


def _claim_again(st: _State, rank: int | None) -> bool:
    """A second (third ...) process announcing the same global rank ('initializing ddp: GLOBAL_RANK: 1' twice: srun
    started each task's processes with the same ranks) is given again, up to MAX_CLAIMS, so that the duplicate is
    seen; a rank's repeated world lines otherwise give one record."""
    if rank is None or len(st.claims) >= MAX_TAGGED:
        return False
    n = st.claims.get(rank, 1)
    if n >= MAX_CLAIMS:
        return False
    st.claims[rank] = n + 1
    return True


def _deepspeed_world(st: _State, head: Head, body: str) -> Iterator[Rec]:
    """DeepSpeed's launcher: ``WORLD INFO DICT: {'node-a': [0, 1], 'node-b': [0, 1]}`` (its hosts, and the world
    as the sum of their local ranks) and ``nnodes=2, num_local_procs=2, node_rank=0``."""
    nodes = [m.group(1) for m in DS_HOST_RE.finditer(body)] if "WORLD INFO DICT" in body else []
    n = DS_NNODES_RE.search(body)
    count = len(nodes) if nodes else (int(n.group(1)) if n else 0)
    if 0 < count <= 1 << 20 and count not in st.nodes:
        st.nodes.add(count)
        yield NodeCount(*head, count)
    size = sum(len(DIGITS_RE.findall(ranks)) for ranks in nodes)
    if 0 < size <= 1 << 20 and (None, size) not in st.worlds:
        st.worlds.add((None, size))
        yield WorldSize(head[0], head[1], head[2], None, head[4], head[5], head[6], size)


def _traceback(st: _State, head: Head, body: str, rank: int | None) -> Iterator[Rec]:
    fm = FRAME_RE.match(body)
    if fm:
        frames = st.frames.setdefault(rank, [])
        if len(frames) >= 2 * MAX_FRAMES:  # the innermost kept: a million frames are no million strings
            del frames[:-MAX_FRAMES]
        frames.append(f"{fm.group('file')}:{fm.group('line')} in {fm.group('func')}")
        return
    if body.startswith("Traceback (most recent call last)"):
        st.frames[rank] = []
        st.tracebacks = True
        return
    owner = _last_error_owner(st, rank)
    if body.strip() == "Last error:":
        if owner in st.pending_last_error:
            st.awaiting_last_error.add(owner)
        return
    if owner in st.awaiting_last_error:
        st.awaiting_last_error.discard(owner)
        err = st.pending_last_error.pop(owner, None)
        if err is not None:
            err.last_error = body.strip()
        return
    if owner in st.pending_last_error and NCCL_CODE_RE.match(body):
        return  # "ncclInvalidUsage: This usually reflects ..." between the exception and "Last error:"
    stripped = body.strip()
    # (a traceback whose frames the paste left out ends at its exception's line, whatever the class is called)
    em = (EXC_RE.match(stripped) or (TRACEBACK_END_RE.match(stripped) if st.frames.get(rank, None) == [] else None)
          if not body.startswith(" ") else None)
    if em:
        yield from _exception(st, head, body, rank, em)
        return
    if rank in st.terminate and stripped.startswith("what():") and ", NCCL version" not in body:
        yield from _what(st, head, stripped[len("what():"):].strip(), rank)
        return
    if "NCCL version" in body and ", NCCL version" in body:
        m = nccl_error_match(body)
        if m and not NCCL_CODE_RE.match(body):  # an NCCL error quoted without its exception type
            what = body.rfind("what():", 0, m.end())
            msg, last = split_last_error(body[max(m.start(), what + len("what():") if what >= 0 else 0):].strip())
            yield from _version(st, head, None, normalize_nccl_version(m.group("v")))
            if (rank, msg) not in st.errors:
                st.errors.add((rank, msg))
                err = DistError(*head, "NCCL error", msg, last, list(st.frames.pop(rank, [])))
                yield err
                if last is None:
                    st.pending_last_error[rank] = err


def _last_error_owner(st: _State, rank: int | None) -> int | None:
    """The rank whose NCCL error an unheaded line goes on (``Last error:`` and the line after it): the line's own rank,
    or, for a line with none, the rank of the block a head named (``[... TP1] Scheduler hit an exception``, mp.spawn's
    ``-- Process 1 terminated``: its lines after the exception bare) while its error awaits its last error."""
    if rank is None and st.headed is not None and st.headed in st.pending_last_error:
        return st.headed
    return rank


def _what(st: _State, head: Head, msg: str, rank: int | None) -> Iterator[Rec]:
    """The C++ runtime's ``terminate called after throwing an instance of 'c10::CUDAError'`` and, on the next line,
    ``what():  CUDA error: uncorrectable NVLink error detected ...``: the process's error, of that type."""
    etype = st.terminate.pop(rank)
    if msg and (rank, msg) not in st.errors:
        st.errors.add((rank, msg))
        st.last_error = DistError(*head, etype, msg[:2000], None, list(st.frames.pop(rank, [])))
        yield st.last_error


def split_last_error(msg: str) -> tuple[str, str | None]:
    """An exception's message and the ``Last error:`` NCCL gave, when one pasted line holds both (the
    watchdog's lines, ``what():`` and ``Last error: NET/IB : Got completion ...`` joined by a copy from a
    terminal or a log collector): (message, last error), else (message, None)."""
    i = msg.find("Last error:")
    if i < 0:
        return msg, None
    last = msg[i + len("Last error:"):].strip()
    head = msg[:i]
    m = nccl_error_match(head)  # "..., NCCL version 2.14.3 ncclRemoteError: A call failed ...": the code's
    # explanation between the error and its last error is a line of its own when nothing is glued
    return (head[:m.end()] if m else head).strip(), last or None


def _exception(st: _State, head: Head, body: str, rank: int | None, em: re.Match[str]) -> Iterator[Rec]:
    etype, msg = em.group("type"), (em.group("msg") or "").strip()
    if etype.endswith(("ProcessRaisedException", "ProcessExitedException")) or (
            etype == "Exception" and msg.startswith("process ") and SPAWN_EXIT_RE.match(msg) is not None):
        # (torch <= 1.7's mp.spawn raised a bare Exception: "process 0 terminated with signal SIGKILL")
        st.frames.pop(rank, None)  # mp.spawn's parent re-raising a child's failure: the child's own is the error
        m = SPAWN_EXIT_RE.search(msg)
        if m:
            i = int(m.group("i"))
            code = int(m.group("code")) if m.group("code") else -_SIGNALS.get(m.group("sig") or "", 0) or None
            yield LauncherExit(st.file, head[1], head[2], i, i, code, None, None, None,
                               f"Signal ({m.group('sig')})" if m.group("sig") else None, False)
        return
    run_on = st.exc_run is not None and st.exc_run == (head[1] - 1, rank, etype)
    # (a traceback whose frames the paste left out, its head and its exception line alone, is a traceback still)
    if not (rank in st.frames or "DistBackendError" in etype or "NCCL" in msg or etype.endswith(DIST_EXC_TYPES)
            or ("nccl" in msg and NCCL_CALL_FAILED_RE.search(msg))
            or ((rank is not None or _bare_cuda_error(st, msg)) and _known_failure(msg))
            or (_not_said(st, msg) and _dist_failure(f"{etype}: {msg}"))
            or run_on):
        return
    st.exc_run = (head[1], rank, etype)  # the next line, the same exception type: another process's, back to back
    prev = st.c10d_errors.get(rank)
    if prev and msg.startswith(prev.rstrip(".")):  # c10d's own error line said it already, as the exception does
        st.frames.pop(rank, None)
        return
    st.headed = rank if rank is not None and rank == st.spawn_rank else None
    st.spawn_rank = None
    if (rank, msg) in st.errors and not st.frames.get(rank):
        return  # the same error already read (a watchdog echo, a wrapper printing it again)
    st.errors.add((rank, msg))
    if rank is None and msg.startswith("[") and (u := UNIQUEID_RANK_RE.match(msg)):
        rank = int(u.group("rank"))  # "[1] is setting up NCCL communicator and retreiving ncclUniqueId from [0] ..."
        head = (head[0], head[1], head[2], rank, head[4], head[5], head[6])
    msg, last = split_last_error(msg)
    err = DistError(*head, etype, msg, last, list(st.frames.pop(rank, [])))
    yield err
    yield from _nccl_version_of(st, head, msg)
    if last is None and ("NCCL error" in body or "DistBackendError" in etype):
        st.pending_last_error[rank] = err


# a CUDA error as an exception's message, the runtime's or torch's wording of any release ("CUDA error: an illegal memory
# access was encountered", torch <= 1.4's "cuda runtime error (39) : uncorrectable ECC error encountered at ..."): with
# no traceback and no rank, still the process's error where the knowledge base knows it as a failure (not an OOM: a
# bare OOM line is as often a logger's repeat of one read already)
CUDA_MSG_RE = re.compile(r"(?i)CUDA error\b|cuda runtime error \(\d{1,4}\)")


def _bare_cuda_error(st: _State, msg: str) -> bool:
    """An untagged exception line's message is a CUDA error (``CUDA_MSG_RE``) no ranked line of this file said already
    (a launcher's repeat of a rank's error is no second failure)."""
    return CUDA_MSG_RE.match(msg) is not None and _not_said(st, msg)


def _dist_failure(text: str) -> bool:
    """An untagged exception line whose message the knowledge base knows as a failure of torch's distributed set-up or
    of a launcher (``failures.DIST_AREAS``: c10d's port in use, a backend not built): the error of a process the text
    does not name. Other known messages (a CUDA error, an out-of-memory) untagged are a launcher's repeat as often."""
    entry = classify(text[:2000])
    return entry is not None and entry.kind != EntryKind.NOTE and entry.area in DIST_AREAS


def _not_said(st: _State, msg: str) -> bool:
    """An untagged exception's message no line of this file said already (a launcher's repeat of a rank's error is no
    second failure): with a message the knowledge base knows, the error of a process the text does not name."""
    return not any(m == msg for _, m in st.errors)


def _known_failure(msg: str) -> bool:
    """A rank's exception printed without its traceback (a launcher's ``[rank3]: RuntimeError: CUDA error: system not
    yet initialized``) is its error when the knowledge base knows the message as a failure (not a note)."""
    entry = classify(msg[:2000]) if msg else None
    return entry is not None and entry.kind != EntryKind.NOTE


def signal_report(body: str, file: str, lineno: int, text: str) -> LauncherExit | None:
    """UCX's ``[host:pid:0:tid] Caught signal 11 (Segmentation fault: ...)`` and OpenMPI's ``[host:pid] Signal: Aborted
    (6)``: the process (host, pid) dies of that signal; its rank is the one its NCCL lines give (by pid)."""
    m = SIGNAL_REPORT_RE.match(body)
    if m is None:
        return None
    sig = int(m.group("sig") or m.group("sig2"))
    name = _SIGNAL_NAMES.get(sig, f"signal {sig}")
    return LauncherExit(file, lineno, text, None, None, -sig, int(m.group("pid")), m.group("host"), None,
                        f"Signal {sig} ({name}) received by PID {m.group('pid')}", False)


def mpi_exit(text: str, file: str, lineno: int) -> LauncherExit | None:
    """``mpirun noticed that process rank 37 with PID 71120 on node h exited on signal 6 (Aborted).`` (and PRRTE's
    ``prterun noticed ...``): the process that ended the job (the launcher's root cause), its exit as a signal in
    torchrun's terms (code -6, SIGABRT). Public: the nccl-tests parser reads the same line under mpirun."""
    m = MPI_NOTICED_RE.search(text) if "noticed that process rank" in text else None
    if m is None:
        return None
    sig = int(m.group("sig"))
    name = _SIGNAL_NAMES.get(sig, f"signal {sig}")
    return LauncherExit(file, lineno, text, int(m.group("rank")), None, -sig, int(m.group("pid")),
                        m.group("host"), None, f"Signal {sig} ({name}) received by PID {m.group('pid')}", True)


_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGABRT": 6, "SIGBUS": 7, "SIGFPE": 8,
            "SIGKILL": 9, "SIGSEGV": 11, "SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15}
_SIGNAL_NAMES = {n: name for name, n in _SIGNALS.items()}
# a native crash report's error (DistError type) and its description, "<the signal's words> inside NCCL at <frame>",
# which the rules read back (rules.facts: an abort inside NCCL is no stall; detectors.config: NCCL ran there)
NATIVE_CRASH_TYPE = "native crash"
NATIVE_IN_NCCL = " inside NCCL at "
NATIVE_ABORT = "Aborted"  # SIGABRT's words
_NATIVE_WORDS = {11: "Segmentation fault", 7: "Bus error", 6: NATIVE_ABORT, 8: "Floating point exception",
                 4: "Illegal instruction"}


# a rank's wait in the store for its group's NCCL unique id, its store error included (rules.hang.unique_id_wait reads
# it): a terminal that wraps the exception's line cuts it before the error
UID_WAIT_FACT_RE = re.compile(r"ncclUniqueId from \[\d{1,7}\] via c10d key-value store by key '[^']{0,200}', but "
                              r"store->get\('[^']{0,200}'\) got error:")
FACT_RES = (WORK_RE, FAILURE_RE, OLD_FAILURE_RE, DUMP_SIGNAL_RE, WATCHDOG_EXC_RE, ASYNC_EXC_RE, DESYNC_LAG_RE,
            DESYNC_AT_RE, BARRIER_RE, UID_WAIT_FACT_RE)
_FACT_WORDS = ("WorkNCCL(", "watchdog", "NCCL work", "async exception", "NCCL version", "lagging ranks",
               "Timeout at collective", "monitoredBarrier", "ncclUniqueId")


def torch_line_facts(text: str) -> int:
    """How many of the forms this parser reads facts from ``text`` holds (0: none): the test that decides
    whether a hard-wrapped line's pieces are joined (the join must read at least what the first piece does)."""
    if not any(w in text for w in _FACT_WORDS):
        return 0
    _, body = strip_tool_prefixes(text.rstrip("\r\n"))
    return sum(1 for r in FACT_RES if r.search(body)) + (nccl_error_match(body) is not None)


def _launcher_exit(kv: dict[str, str], file: str, lineno: int, root: bool) -> LauncherExit:
    rank = local = code = pid = None
    rm = SUMMARY_RANK_RE.match(kv.get("rank", ""))
    if rm:
        rank = int(rm.group(1))
        local = int(rm.group(2)) if rm.group(2) else None
    em = SUMMARY_EXITCODE_RE.match(kv.get("exitcode", ""))
    if em:
        code = int(em.group(1))
        pid = int(em.group(2)) if em.group(2) else None
    text = "; ".join(f"{k}: {v}" for k, v in kv.items())
    return LauncherExit(file, lineno, text, rank, local, code, pid, kv.get("host"), kv.get("time"),
                        kv.get("traceback"), root)
