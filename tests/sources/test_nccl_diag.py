"""NCCL's diagnostics lines (2.31+) and RAS answers: read, judged by ``rules.consistency``, found by ``detectors.diag``.

The fixtures are written here in the shapes NCCL's format strings print (own hosts, pids, hashes and values):

- NVIDIA/nccl v2.31.2-1, commit 889806836097808572f87a2019eefd01f27aae68: ``src/ras/diagnostics.cc``
  (``rasDiagnosticsFormatLine``: ``"%s:%d NCCL DIAG %s"``; ``=== RAS Diagnostics ===``; ``RAS diagnostics completed in
  %.1f ms across %d %s``), ``src/ras/diagnostics_checks_common.h`` (``[OK]   `` / ``[INFO] ``, rank sets of at most 8),
  ``src/ras/diagnostics_checks_common.cc`` (``{a,b,...} (N=%d)``, ``%s: diagnostics incomplete, gathered %d/%d ranks
  in comm 0x%lx/0x%lx/0x%lx``), ``src/ras/diagnostics_gpu.cc`` (GPU inventory, CUDA driver version, ECC, NVLink:
  ``found %d link(s) per device``), ``src/ras/diagnostics_env.cc`` (NCCL environment), ``src/diagnostics.cc`` and
  ``src/diagnostics/p2p.cc`` (active diagnostics: ``=== NCCL Diagnostics ===``, ``p2p: %s directed GPU P2P edges
  verified``, the failed-pair lines), ``src/ras/client_support.cc`` (``BUSY: diagnostics already in progress``,
  ``ERROR: Invalid profiler mask value '%s'``, ``OK``), ``docs/userguide/source/troubleshooting/ras.rst``;
- NVIDIA/nccl commit 42f326f5dcd2cb8789bbe096984570967da721e1 (after 2.31): ``src/ras/diagnostics_gpu.cc``'s later
  NVLink line (``%d links per GPU, all active at consistent speed``, ``inconsistent link speeds``); v2.32.3-1, commit
  12df1a11afad322be5a204a2db890161cbf8131d: ``NVIDIA graphics driver version`` and the checks read as ``other``.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ncclscope.analysis import analyze_paths
from ncclscope.diag_model import DiagCheck, DiagLevel, DiagProblem, DiagSource
from ncclscope.model import Evidence, FindingKind, Severity
from ncclscope.rules.consistency import Aspect, FoundBy, Observation, Trouble, differing, from_diagnostics
from ncclscope.sources.nccl_diag import NcclCudaDriver, NcclDiag, parse_diag_line, results_of
from ncclscope.sources.nccl_log import parse_nccl_line
from ncclscope.sources.ras import parse_ras_replies
from ncclscope.sources.route import Route, route_lines

H = "gpu-n07:31337 NCCL DIAG "
C = "0x6b1f03c2d94e8a75"

RAS_REPORT = [
    f"{H}=== RAS Diagnostics ===",
    f"{H}[OK]   GPU inventory: 8x NVIDIA H200 per node consistent across 16 ranks in comm {C}",
    (f"{H}[INFO] CUDA driver version: mismatch across 16 ranks in comm {C}, rank(s) {{8,9,10,11,12,13,14,15}} differ "
    "from rank 0 (13000)"),
    f"{H}[INFO] ECC: uncorrected volatile errors on rank(s) {{11}} (worst=3) across 16 ranks in comm {C}",
    f"{H}[INFO] NVLink: inactive link(s) on rank(s) {{4,5}} across 16 ranks in comm {C}",
    f"{H}[INFO] NCCL environment: mismatch across 16 ranks in comm {C} for NCCL_IB_HCA",
    f"{H}[INFO] NCCL environment: NCCL_IB_HCA=mlx5_0,mlx5_3 on rank(s) {{0,1,2,3,4,5,6,7}}",
    f"{H}[INFO] NCCL environment: NCCL_IB_HCA=(unset) on rank(s) {{8,9,10,11,12,13,14,15}}",
    f"{H}[INFO] NCCL environment: 1 NCCL_* env var(s) differ across ranks in comm {C}",
    f"{H}RAS diagnostics completed in 41.7 ms across 16 ranks",
]

ACTIVE_REPORT = [
    f"{H}=== NCCL Diagnostics ===",
    (f"{H}[INFO] p2p: write mismatch srcRank=2 srcCudaDev=2 srcNvmlDev=2 dstRank=6 dstCudaDev=6 dstNvmlDev=6 path=NVL "
    "handle=CUMEM_POSIX_FD expected=0x0000000200000006 got=0x0000000000000000 verify=0x0000000000000000; check the "
    "single-node NVLink topology and peer-access state with 'nvidia-smi topo -m' and 'nvidia-smi topo -p2p n'"),
    f"{H}[INFO] p2p: 55/56 directed GPU P2P edges verified",
    f"{H}NCCL diagnostics completed in 188.4 ms across 8 ranks",
]


@pytest.mark.parametrize(("body", "level", "check", "problem", "fields"), [
    ("=== RAS Diagnostics ===", DiagLevel.NONE, DiagCheck.REPORT, DiagProblem.NONE, {"source": DiagSource.RAS}),
    ("=== NCCL Diagnostics ===", DiagLevel.NONE, DiagCheck.REPORT, DiagProblem.NONE, {"source": DiagSource.ACTIVE}),
    ("RAS diagnostics completed in 12.3 ms across 8 RAS peers", DiagLevel.NONE, DiagCheck.REPORT, DiagProblem.NONE,
     {"nranks": 8}),
    ("ERROR: diagnostics summary failed (3)", DiagLevel.ERROR, DiagCheck.REPORT, DiagProblem.FAILED, {"value": "3"}),
    (f"[OK]   GPU inventory: 4x NVIDIA A100-SXM4-80GB per node consistent across 8 ranks in comm {C}", DiagLevel.OK,
     DiagCheck.GPU_INVENTORY, DiagProblem.NONE, {"comm": C, "nranks": 8}),
    (f"[INFO] GPU inventory: count mismatch across 8 ranks in comm {C}, rank(s) {{4,5,6,7}} differ from rank 0 (8)",
     DiagLevel.INFO, DiagCheck.GPU_INVENTORY, DiagProblem.DIFFERS,
     {"key": "count", "ranks": (4, 5, 6, 7), "reference_rank": 0, "value": "8"}),
    ((f"[INFO] GPU inventory: model mismatch across 8 ranks in comm {C}, rank(s) {{7}} differ from rank 0 "
     "(NVIDIA H100 80GB HBM3)"), DiagLevel.INFO, DiagCheck.GPU_INVENTORY, DiagProblem.DIFFERS,
     {"key": "model", "ranks": (7,), "value": "NVIDIA H100 80GB HBM3"}),
    (f"[INFO] GPU inventory: unavailable via NVML across 8 ranks in comm {C}", DiagLevel.INFO, DiagCheck.GPU_INVENTORY,
     DiagProblem.UNAVAILABLE, {}),
    ((f"[INFO] CUDA driver version: mismatch across 24 ranks in comm {C}, rank(s) {{8,9,10,11,12,13,14,15,...}} (N=16) "
     "differ from rank 0 (12090)"), DiagLevel.INFO, DiagCheck.CUDA_DRIVER, DiagProblem.DIFFERS,
     {"key": None, "ranks": (8, 9, 10, 11, 12, 13, 14, 15), "ranks_total": 16, "value": "12090", "nranks": 24}),
    ((f"[INFO] NVIDIA graphics driver version: mismatch across 8 ranks in comm {C}, rank(s) {{3}} differ from rank 0 "
     "(580.82.07)"), DiagLevel.INFO, DiagCheck.NVIDIA_DRIVER, DiagProblem.DIFFERS, {"value": "580.82.07"}),
    (f"[OK]   ECC: no uncorrected volatile errors across 8 ranks in comm {C}", DiagLevel.OK, DiagCheck.ECC,
     DiagProblem.NONE, {}),
    ((f"[INFO] ECC: corrected volatile errors at or above threshold 100 on rank(s) {{1}} (worst=412) across 8 ranks in "
     f"comm {C}"), DiagLevel.INFO, DiagCheck.ECC, DiagProblem.ECC_CORRECTED, {"ranks": (1,), "value": "412"}),
    ((f"[INFO] ECC: no uncorrected volatile errors across 6 of 8 ranks in comm {C} (ECC counters unavailable via NVML "
     "on 2 ranks)"), DiagLevel.INFO, DiagCheck.ECC, DiagProblem.UNAVAILABLE, {}),
    (f"[INFO] ECC: diagnostics incomplete, gathered 7/8 ranks in comm {C}/0x51/0x9e", DiagLevel.INFO, DiagCheck.ECC,
     DiagProblem.INCOMPLETE, {"value": "7", "nranks": 8}),
    (f"[OK]   NVLink: found 18 link(s) per device, all active across 8 ranks in comm {C}", DiagLevel.OK,
     DiagCheck.NVLINK, DiagProblem.NONE, {}),
    (f"[OK]   NVLink: 18 links per GPU, all active at consistent speed across 8 ranks in comm {C}", DiagLevel.OK,
     DiagCheck.NVLINK, DiagProblem.NONE, {}),
    (f"[INFO] NVLink: link-count mismatch across 8 ranks in comm {C}, rank(s) {{2}} differ from rank 0 (18)",
     DiagLevel.INFO, DiagCheck.NVLINK, DiagProblem.DIFFERS, {"key": "link-count", "value": "18"}),
    (f"[INFO] NVLink: inconsistent link speeds on rank(s) {{6}} across 8 ranks in comm {C}", DiagLevel.INFO,
     DiagCheck.NVLINK, DiagProblem.LINK_SPEED, {"ranks": (6,)}),
    (f"[OK]   NCCL environment: NCCL_* env vars consistent across 8 ranks in comm {C}", DiagLevel.OK,
     DiagCheck.NCCL_ENV, DiagProblem.NONE, {}),
    ("[INFO] NCCL environment: NCCL_ALGO=Ring;allreduce:Tree on rank(s) {0,2}", DiagLevel.INFO, DiagCheck.NCCL_ENV,
     DiagProblem.DIFFERS, {"key": "NCCL_ALGO", "value": "Ring;allreduce:Tree", "ranks": (0, 2)}),
    ("[INFO] NCCL environment: 2 rank(s) had >16384 bytes of NCCL_* env vars; comparison may be partial",
     DiagLevel.INFO, DiagCheck.NCCL_ENV, DiagProblem.INCOMPLETE, {}),
    ("[OK]   p2p: all 56 directed GPU P2P edges verified (skipped indirect=4)", DiagLevel.OK, DiagCheck.P2P,
     DiagProblem.NONE, {"value": "56/56", "source": DiagSource.ACTIVE}),
    (("[INFO] p2p: peer-memory import failed srcRank=0 srcCudaDev=0 srcNvmlDev=0 dstRank=1 dstCudaDev=1 dstNvmlDev=1 "
     "path=PHB handle=LEGACY_CUDA_IPC reason=import; check CUDA IPC support, GPU visibility, and process or container "
     "isolation"), DiagLevel.INFO, DiagCheck.P2P, DiagProblem.P2P_FAILED,
     {"ranks": (0,), "peer": 1, "value": "PHB", "key": "peer-memory import failed"}),
    ("[INFO] p2p: setup failed on rank 3 result=1", DiagLevel.INFO, DiagCheck.P2P, DiagProblem.FAILED, {"ranks": (3,)}),
    (("[INFO] p2p: temporarily enabled context-wide CUDA peer access rank=0 cudaDev=0; avoid concurrent CUDA use on "
     "this context until diagnostics completes"), DiagLevel.INFO, DiagCheck.P2P, DiagProblem.NOTICE, {}),
    ("[INFO] transport detect returned 3", DiagLevel.INFO, DiagCheck.TRANSPORT, DiagProblem.FAILED, {"value": "3"}),
    (f"[INFO] IOMMU mode: unavailable across 8 ranks in comm {C}", DiagLevel.INFO, DiagCheck.OTHER,
     DiagProblem.UNAVAILABLE, {"source": DiagSource.UNKNOWN}),
])
def test_each_form_reads_to_its_fields(body: str, level: DiagLevel, check: DiagCheck, problem: DiagProblem,
                                       fields: dict) -> None:
    rec = parse_diag_line(H + body, "rank0.out", 41)
    assert rec is not None
    r = rec.result
    assert (r.level, r.check, r.problem) == (level, check, problem)
    for name, want in fields.items():
        assert getattr(r, name) == want, name
    assert (rec.host, rec.pid, r.host, r.pid, r.file, r.line) == ("gpu-n07", 31337, "gpu-n07", 31337, "rank0.out", 41)


@pytest.mark.parametrize("text", [
    "[rank0]:gpu-n07:31337 NCCL DIAG [OK]   ECC: no uncorrected volatile errors across 2 ranks in comm 0xab",
    "[default0]:gpu-n07:31337 NCCL DIAG [OK]   ECC: no uncorrected volatile errors across 2 ranks in comm 0xab",
    "[1,0]<stdout>:gpu-n07:31337 NCCL DIAG [OK]   ECC: no uncorrected volatile errors across 2 ranks in comm 0xab\n",
])
def test_behind_a_launchers_prefix(text: str) -> None:
    rec = parse_diag_line(text)
    assert rec is not None and (rec.host, rec.pid, rec.result.check) == ("gpu-n07", 31337, DiagCheck.ECC)


def test_a_pasted_report_without_its_head_has_no_process() -> None:
    rec = parse_diag_line("NCCL DIAG [OK]   p2p: all 56 directed GPU P2P edges verified")
    assert rec is not None and (rec.host, rec.pid, rec.result.problem) == ("", 0, DiagProblem.NONE)


@pytest.mark.parametrize("text", [
    "gpu-n07:31337 NCCL DIAG hello",  # no tag, no header
    "gpu-n07:31337 NCCL DIAG [MAYBE] GPU inventory: ...",  # a tag NCCL never prints
    "the docs say each line starts with NCCL DIAG and a tag",  # prose naming it
    "gpu-n07:31337:31337 [0] NCCL INFO NCCL_RUN_DIAGNOSTICS set by environment to 1",
])
def test_other_lines_are_not_diagnostics(text: str) -> None:
    assert parse_diag_line(text) is None


def test_the_nccl_line_parser_hands_diag_lines_over() -> None:
    rec = parse_nccl_line(RAS_REPORT[3], "out.log", 4)
    assert isinstance(rec, NcclDiag) and rec.result.problem is DiagProblem.ECC_UNCORRECTED
    info = parse_nccl_line("gpu-n07:31337:31337 [0] NCCL INFO NCCL_RUN_RAS_DIAGNOSTICS set by environment to 1")
    assert info is not None and not isinstance(info, NcclDiag)


def test_the_driver_nccl_saw() -> None:
    """``INFO(NCCL_INIT, "cudaDriverVersion %d", driverVersion)`` (``src/misc/cudawrap.cc``, 2.13.4+)."""
    for _ in range(2):  # the second read comes from the parser's memo of plain messages
        rec = parse_nccl_line("gpu-n07:31337:31337 [0] NCCL INFO cudaDriverVersion 12090", "r.log", 7)
        assert isinstance(rec, NcclCudaDriver) and (rec.version, rec.cuda, rec.pid, rec.line) == (12090, "12.9", 31337, 7)
    assert parse_nccl_line("gpu-n07:31337:31337 [0] NCCL INFO cudaDriverVersion twelve") is None


def test_a_report_is_never_joined_as_hard_wrapped_lines() -> None:
    """Consecutive report lines of falling width (80-200 columns) are each a line of their own; so is one followed
    by the application's shorter line, when the join would read the same results."""
    lines = [*RAS_REPORT, "epoch 0 step 10 loss 2.31"]
    routed = list(route_lines(enumerate(lines, 1), "out.log"))
    assert [n for route, n, _, _ in routed if route is Route.NCCL] == list(range(1, len(RAS_REPORT) + 1))
    assert routed[-1][1:3] == (len(lines), lines[-1])


def test_results_in_order_once_with_the_reports_source() -> None:
    recs = [parse_diag_line(t, "a.log", i) for i, t in enumerate(ACTIVE_REPORT, 1)]
    dup = parse_diag_line(ACTIVE_REPORT[2], "a.log", 3)  # read twice (a RAS session pasted before a log)
    out = results_of([r for r in (*recs, dup) if r is not None])
    assert [r.line for r in out] == [1, 2, 3, 4]
    assert all(r.source is DiagSource.ACTIVE for r in out)


def test_ras_session_answers() -> None:
    session = "\n".join(["SERVER PROTOCOL 2", "OK", "ERROR: Invalid profiler mask value 'coll,kernels'",
                         "ERROR: Unknown CONTROL subcommand 'PROFILE_MASK all'", "BUSY: diagnostics already in progress",
                         "ERROR: diagnostics only supports text output", *RAS_REPORT[:2]])
    out = {r.line: r.result for r in parse_ras_replies(session, "ras.txt")}
    assert (out[2].check, out[2].problem) == (DiagCheck.RAS_REPLY, DiagProblem.NONE)
    assert (out[3].problem, out[3].key, out[3].value) == (DiagProblem.REFUSED, "CONTROL PROFILER_MASK", "coll,kernels")
    assert (out[4].problem, out[4].key) == (DiagProblem.REFUSED, "CONTROL")
    assert (out[5].problem, out[5].key) == (DiagProblem.BUSY, "DIAGNOSTICS")
    assert (out[6].problem, out[6].key) == (DiagProblem.REFUSED, "DIAGNOSTICS")
    assert out[8].check is DiagCheck.GPU_INVENTORY and 1 not in out


# --- the rule ----------------------------------------------------------------------------------------------

def _results(lines: list[str]) -> list:
    return results_of([r for r in (parse_diag_line(t, "rank0.out", i) for i, t in enumerate(lines, 1)) if r])


def test_nccls_report_gives_one_problem_each() -> None:
    found = from_diagnostics(_results(RAS_REPORT))
    by = {(p.trouble, p.aspect): p for p in found}
    assert len(found) == 4
    drv = by[(Trouble.DIFFERS, Aspect.CUDA_DRIVER)]
    assert drv.ranks == (8, 9, 10, 11, 12, 13, 14, 15) and drv.comm == C and drv.nranks == 16
    assert "ranks 8-15 differ from rank 0 (13000)" in drv.message and [e.line for e in drv.evidence] == [3]
    assert by[(Trouble.ECC_ERRORS, None)].ranks == (11,) and by[(Trouble.ECC_ERRORS, None)].severity is Severity.ERROR
    assert by[(Trouble.LINK_DOWN, None)].ranks == (4, 5)
    env = by[(Trouble.DIFFERS, Aspect.NCCL_SETTING)]
    assert env.key == "NCCL_IB_HCA" and [e.line for e in env.evidence] == [6, 7, 8]
    assert env.groups == (("mlx5_0,mlx5_3", tuple(f"rank {r}" for r in range(8))),
                          ("(unset)", tuple(f"rank {r}" for r in range(8, 16))))
    assert all(p.found_by is FoundBy.NCCL for p in found)


def test_p2p_failures_are_one_problem_with_each_pair() -> None:
    found = from_diagnostics(_results(ACTIVE_REPORT))
    assert len(found) == 1
    p = found[0]
    assert (p.trouble, p.ranks) == (Trouble.P2P_FAILED, (2, 6))
    assert "55/56 directed GPU P2P pairs verified" in p.message and "rank 2 -> 6 over NVL (write mismatch)" in p.message
    assert sorted(e.line for e in p.evidence) == [2, 3]


def test_a_clean_report_names_nothing() -> None:
    clean = [f"{H}=== RAS Diagnostics ===",
             f"{H}[OK]   NCCL environment: NCCL_* env vars consistent across 8 ranks in comm {C}",
             f"{H}[OK]   p2p: all 56 directed GPU P2P edges verified", f"{H}RAS diagnostics completed in 3.0 ms across 8 ranks"]
    assert from_diagnostics(_results(clean)) == []


def test_compared_values_differ_and_unset_only_where_the_whole_environment_is_listed() -> None:
    def o(who: str, key: str, value: str, listing: bool) -> Observation:
        return Observation(Aspect.NCCL_SETTING, who, value, Evidence(f"{who}.txt", 1, f"{key}={value}"), key=key,
                           rank=int(who[5:]), listing=listing)

    obs = [o("rank 0", "NCCL_DEBUG", "INFO", True), o("rank 0", "NCCL_P2P_LEVEL", "NVL", True),
           o("rank 1", "NCCL_DEBUG", "INFO", True), o("rank 2", "NCCL_DEBUG", "WARN", False)]
    found = {p.key: p for p in differing(obs)}
    assert set(found) == {"NCCL_DEBUG", "NCCL_P2P_LEVEL"}  # rank 2 lists nothing whole: its lack says nothing
    assert found["NCCL_DEBUG"].ranks == (2,) and "'INFO' on ranks 0-1; 'WARN' on rank 2" in found["NCCL_DEBUG"].message
    assert found["NCCL_P2P_LEVEL"].groups == (("NVL", ("rank 0",)), ("(unset)", ("rank 1",)))
    assert differing([obs[0], obs[2]]) == []


# --- the detector, through analyze -----------------------------------------------------------------------------

INIT = ("gpu-n07:31337:31401 [0] NCCL INFO comm 0x55e0c1d2a000 rank {r} nranks 16 cudaDev {d} nvmlDev {d} busId 1b000 "
        f"commId {C} - Init COMPLETE")


def test_analyze_says_what_nccls_diagnostics_found(tmp_path: Path) -> None:
    log = tmp_path / "rank0.out"
    log.write_text("\n".join(["gpu-n07:31337:31337 [0] NCCL INFO NCCL version 2.31.2+cuda13.0",
                              INIT.format(r=0, d=0), *RAS_REPORT, "training step 1 done"]) + "\n")
    a = analyze_paths([tmp_path], cache=False)
    diag = [f for f in a.findings if f.data.get("source") == FoundBy.NCCL.value]
    kinds = sorted((f.kind.value, f.severity.value) for f in diag)
    assert kinds == [("config", "warning"), ("config", "warning"), ("note", "error"), ("transport", "warning")]
    for f in diag:
        assert f.evidence and all(e.file == "rank0.out" and "NCCL DIAG" in e.text for e in f.evidence)
    env = next(f for f in diag if f.data.get("settings") == ["NCCL_IB_HCA"])
    assert env.kind is FindingKind.CONFIG and env.ranks == tuple(range(8, 16))  # the world's communicator
    assert [e.line for e in env.evidence] == [8, 9, 10]
    assert a.decision.verdict.value != "crash"  # what the set-up shows decides no verdict by itself


# --- damaged lines ------------------------------------------------------------------------------------------


PROFILE = {"deadline": None, "derandomize": True, "database": None, "suppress_health_check": [HealthCheck.too_slow]}


@settings(max_examples=300, **PROFILE)
@given(st.sampled_from(RAS_REPORT + ACTIVE_REPORT), st.integers(0, 400), st.integers(0, 400),
       st.text(max_size=40))
def test_a_damaged_line_never_raises(line: str, cut: int, at: int, junk: str) -> None:
    """A report line cut short, or with anything spliced in, reads to a record or to None, and a record's fields keep
    their types; the rule then takes whatever was read."""
    for text in (line[:cut], line[:at] + junk + line[at:]):
        rec = parse_diag_line(text, "x", 1)
        if rec is not None:
            r = rec.result
            assert all(isinstance(x, int) for x in r.ranks) and (r.nranks is None or isinstance(r.nranks, int))
            from_diagnostics([r])
            assert parse_nccl_line(text) is not None
