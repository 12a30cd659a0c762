"""c10d's own socket and store lines (socket.cpp, TCPStore.cpp, ``[c10d]`` / ``[c10d - debug]``), torch.distributed's
store and network exceptions with or without a traceback, a crash handler's native stack through NCCL's sources, and
nccl-tests' own failure lines: each is read (``torch_log``), so an input that names c10d or NCCL is never 'nothing
readable'; the error lines among them are the rank's error."""
from __future__ import annotations

from pathlib import Path

import pytest
from class_cases import check
from ncclscope.analysis import analyze_paths
from ncclscope.input_names import InputError
from ncclscope.sources import records as R
from ncclscope.sources.torch_log import parse_torch_lines


def _recs(*lines: str) -> list[R.Rec]:
    return list(parse_torch_lines(list(enumerate((ln + "\n" for ln in lines), 1)), "x.log"))


@pytest.mark.parametrize("line, what, peer", [
    (("[I1107 09:12:01.118402 140221 socket.cpp:751] [c10d - debug] The client socket will attempt to connect to an IPv4 "
     "address of (10.9.3.21, 29500)."), R.StoreSocket.CONNECTING, "10.9.3.21:29500"),
    (("[W1107 09:12:31.120115 140221 socket.cpp:719] [c10d] The client socket has failed to connect to [trainer-0.svc]:29500 "
     "(errno: 110 - Connection timed out)."), R.StoreSocket.CONNECT_RETRY, "trainer-0.svc:29500"),
    (("[W TCPStore.cpp:358] [c10d] TCP client failed to connect/validate to host 10.0.0.4:29500 - retrying (try=2, "
     "timeout=1800000ms, delay=1412ms): The client socket has timed out after 1800000ms while trying to connect to "
     "(10.0.0.4, 29500)."), R.StoreSocket.CONNECT_RETRY, "10.0.0.4:29500"),
    ("[W socket.cpp:436] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
     R.StoreSocket.BIND_FAILED, ":::29500"),
])
def test_c10d_socket_lines_are_read(line, what, peer):
    recs = [r for r in _recs(line) if isinstance(r, R.C10dLine)]
    assert len(recs) == 1 and recs[0].what is what and recs[0].peer == peer, recs
    assert not any(isinstance(r, R.DistError) for r in _recs(line)), "a retry or a warning is no error of the rank"


def test_c10d_error_lines_are_the_ranks_error_once():
    """The E line and the exception that repeats it are one error."""
    recs = _recs("[E1107 09:27:01.125550 140221 socket.cpp:957] [c10d] The client socket has timed out after 900s while "
                 "trying to connect to (10.9.3.21, 29500).",
                 "Traceback (most recent call last):",
                 '  File "/w/train.py", line 41, in <module>',
                 "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect "
                 "to (10.9.3.21, 29500).")
    errs = [r for r in recs if isinstance(r, R.DistError)]
    assert [e.exc_type for e in errs] == ["c10d"], errs
    assert [r.what for r in recs if isinstance(r, R.C10dLine)] == [R.StoreSocket.CONNECT_TIMEOUT]


@pytest.mark.parametrize("line", [
    "torch.distributed.DistStoreError: wait timeout after 300000ms, keys: /ckpt_written",
    ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: "
    "29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"),
])
def test_distributed_exceptions_are_read_without_a_traceback(line):
    errs = [r for r in _recs(line) if isinstance(r, R.DistError)]
    assert len(errs) == 1 and errs[0].exc_type.endswith(("DistStoreError", "DistNetworkError")), errs


def test_a_native_crash_report_through_nccl_is_one_end_of_the_process():
    recs = _recs("!!!!!!! Segfault encountered !!!!!!!",
                 '  File "<unknown>", line 0, in cuMemCreate',
                 '  File "misc/cudawrap.cc", line 90, in ncclCuMemHostEnable()',
                 '  File "/dvs/p4/build/sw/gpgpu/nccl/gitfusion/stable/src/init.cc", line 1852, in ncclCommInitRank',
                 "INFO 03-11 10:02:15 [core.py:88] shutting down")
    ends = [r for r in recs if isinstance(r, R.LauncherExit)]
    errs = [r for r in recs if isinstance(r, R.DistError)]
    assert [(e.exitcode, e.line) for e in ends] == [(-11, 1)]
    assert len(errs) == 1 and "ncclCuMemHostEnable() (misc/cudawrap.cc:90)" in errs[0].message
    assert "ncclCommInitRank (init.cc:1852)" in errs[0].message


def test_python_frames_alone_are_no_native_crash():
    recs = _recs("Traceback (most recent call last):", '  File "/w/train.py", line 41, in <module>',
                 "ValueError: bad value")
    assert not any(isinstance(r, R.LauncherExit) for r in recs)


def test_an_application_check_of_nccl_tests_is_read():
    """2018's nccl-tests spelled its CUDA check 'Cuda failure'."""
    errs = [r for r in _recs("Cuda failure common.cu:891 'CUDA driver version is insufficient for CUDA runtime version'")
            if isinstance(r, R.DistError)]
    assert len(errs) == 1 and errs[0].exc_type == "CUDA failure"


def test_text_naming_none_of_nccl_c10d_or_a_launcher_is_still_nothing_readable(tmp_path: Path):
    p = tmp_path / "notes.txt"
    p.write_text("shopping list\neggs\nmilk\n")
    with pytest.raises(InputError):
        analyze_paths([p], cache=False)


@pytest.mark.parametrize("name", ["c10d_debug_store_unreachable", "c10d_store_port_in_use",
                                  "segfault_stack_in_nccl_cumem_init"])
def test_cases_of_c10d_and_native_lines(name):
    check(name)


def test_gdb_report_of_a_fatal_signal_names_the_frames_inside_nccl():
    recs = _recs('Thread 1 "python" received signal SIGSEGV, Segmentation fault.',
                 "#0  0x00007f1f0ba9b33c in pathDistance (links=<optimized out>) at graph/topo.cc:618",
                 "#2  0x00007f1f0ba9c1aa in ncclCommInitRank () from /usr/lib/x86_64-linux-gnu/libnccl.so.2")
    ends = [r for r in recs if isinstance(r, R.LauncherExit)]
    errs = [r for r in recs if isinstance(r, R.DistError)]
    assert [e.exitcode for e in ends] == [-11]
    assert "pathDistance (topo.cc:618)" in errs[0].message and "ncclCommInitRank" in errs[0].message


@pytest.mark.parametrize("line, etype", [
    ("Failed, NCCL error /src/utils/nccl_utils.cc:296 'unhandled cuda error (run with NCCL_DEBUG=INFO for details)'",
     "NCCL failure"),
    ("Failed: Cuda error test.cu:41 'out of memory'", "CUDA failure"),
    ("horovod.common.exceptions.HorovodInternalError: ncclCommInitRank failed: unhandled cuda error",
     "horovod.common.exceptions.HorovodInternalError"),
])
def test_a_failed_nccl_call_or_check_is_read_without_a_traceback(line, etype):
    errs = [r for r in _recs(line) if isinstance(r, R.DistError)]
    assert [e.exc_type for e in errs] == [etype], errs


@pytest.mark.parametrize("line, code", [
    ("Segmentation fault (core dumped)", -11),
    ("train.sh: line 4:  4711 Segmentation fault      (core dumped) python train.py", -11),
    ("Bus error", -7),
])
def test_the_shells_report_of_a_fatal_signal_is_the_processs_end(line, code):
    assert [r.exitcode for r in _recs(line) if isinstance(r, R.LauncherExit)] == [code]


def test_a_fatal_signal_named_inside_a_sentence_is_no_end():
    assert not [r for r in _recs("a Segmentation fault happened in an earlier run") if isinstance(r, R.LauncherExit)]
