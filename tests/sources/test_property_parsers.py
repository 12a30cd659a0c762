"""Property tests: no parser, nor parse_file / ingest, lets an exception escape on any input.

Two kinds of input: hypothesis' own strategies (any text, any bytes, any JSON), and the mutation
engine of the standalone fuzz targets (``tests/fuzz/fuzz_*.py``: real corpus lines cut, spliced,
with junk, NUL, invalid UTF-8, CRLF, huge numbers), driven by hypothesis' seeds. The number of
inputs per parser is ``NCCLSCOPE_PROPERTY_EXAMPLES`` (default below; docs/when-things-go-wrong.md
lists the totals). Inputs are derandomised in CI so a failure reproduces; the fuzz scripts explore.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
import fuzz_env  # noqa: E402
import fuzz_fr  # noqa: E402
import fuzz_ingest  # noqa: E402
import fuzz_inspector  # noqa: E402
import fuzz_jsonl  # noqa: E402
import fuzz_nccl  # noqa: E402
import fuzz_nccl_tests  # noqa: E402
import fuzz_pickle  # noqa: E402
import fuzz_ras  # noqa: E402
import fuzz_torch  # noqa: E402
import fuzz_xml  # noqa: E402

from conftest import CORPUS, SAMPLES, corpus_names  # noqa: E402

from ncclscope.analysis import analyze_run  # noqa: E402
from ncclscope.model_build import build_run  # noqa: E402
from ncclscope.ingest import InputError, Parsed, ingest, iter_lines, parse_file  # noqa: E402
from ncclscope.safe_pickle import loads_plain  # noqa: E402
from ncclscope.sources.flight_recorder import parse_fr_json  # noqa: E402
from ncclscope.sources.hook_jsonl import parse_jsonl  # noqa: E402
from ncclscope.sources.nccl_log import parse_nccl_line  # noqa: E402
from ncclscope.sources.ras import parse_ras_text  # noqa: E402
from ncclscope.sources.topo_xml import parse_topo_xml  # noqa: E402
from ncclscope.sources.torch_log import parse_torch_lines  # noqa: E402

N = int(os.environ.get("NCCLSCOPE_PROPERTY_EXAMPLES", "200"))  # per parser, mutation inputs
N_DEEP = max(3, N // 20)  # inputs that also go through model, detectors and report (slow: ~0.2 s each)
N_STRAT = max(10, N // 2)  # per hypothesis strategy
PROFILE = dict(deadline=None, derandomize=os.environ.get("NCCLSCOPE_PROPERTY_RANDOM") != "1", database=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

TARGETS = {"nccl": fuzz_nccl, "torch": fuzz_torch, "flight_recorder": fuzz_fr, "jsonl": fuzz_jsonl,
           "ras": fuzz_ras, "topo_xml": fuzz_xml, "nccl_tests": fuzz_nccl_tests, "env": fuzz_env,
           "parse_file": fuzz_ingest, "safe_pickle": fuzz_pickle, "inspector": fuzz_inspector}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_mutated_real_inputs_never_crash_the_parser(name):
    @settings(max_examples=N, **PROFILE)
    @given(st.randoms(use_true_random=False))
    def run(rng):
        TARGETS[name].one(rng, deep=False)

    run()


@pytest.mark.parametrize("name", sorted(set(TARGETS) - {"topo_xml", "safe_pickle"}))
def test_mutated_real_inputs_never_crash_model_detectors_report(name):
    @settings(max_examples=N_DEEP, **PROFILE)
    @given(st.randoms(use_true_random=False))
    def run(rng):
        TARGETS[name].one(rng, deep=True)

    run()


# --- hypothesis' own strategies ----------------------------------------------------------------------
PREFIXES = ["", "h:1:2 [0] NCCL INFO ", "NCCL version ", "h:1:2 [0] a.cc:1 NCCL WARN ", "[rank0]:",
            "[rank1]:[E1129 19:37:36.29 ProcessGroupNCCL.cpp:1849] [PG ID 0 PG GUID 0(default_pg) Rank 1] ",
            "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 ", "h:1:2 [0] NCCL INFO Channel 00/0 : "]
line_st = st.builds(lambda a, b: a + b, st.sampled_from(PREFIXES), st.text(max_size=300))
json_st = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                       lambda kids: st.lists(kids, max_size=4) | st.dictionaries(
                           st.sampled_from(["entries", "pg_status", "pg_config", "version", "type", "seq", "rank",
                                            "op_type", "pgs", "collective_seq_id", "input_sizes", "x"]), kids,
                           max_size=5), max_leaves=25)


@settings(max_examples=N_STRAT, **PROFILE)
@given(line_st)
def test_any_text_line_nccl(line):
    parse_nccl_line(line, "f", 1)


@settings(max_examples=N_STRAT, **PROFILE)
@given(st.lists(line_st, max_size=20))
def test_any_text_lines_torch(lines):
    list(parse_torch_lines(list(enumerate(lines, 1)), "stderr.log"))
    parse_ras_text("\n".join(lines), "ras.txt")


@settings(max_examples=N_STRAT, **PROFILE)
@given(st.lists(json_st, max_size=8))
def test_any_json_lines_hook(objs):
    lines = [(i, json.dumps(o)) for i, o in enumerate(objs, 1)]
    recs = list(parse_jsonl(lines, "ncclscope-rank0.jsonl"))
    fuzz_jsonl.analyze_parsed([Parsed("ncclscope-rank0.jsonl", "jsonl", recs)]) if recs and len(objs) % 5 == 0 else None


@settings(max_examples=N_STRAT, **PROFILE)
@given(json_st)
def test_any_json_flight_recorder(obj):
    try:
        parse_fr_json(json.dumps(obj).encode(), "fr_rank0.json")
    except ValueError:
        pass


@settings(max_examples=N_STRAT, **PROFILE)
@given(st.binary(max_size=2000))
def test_any_bytes_pickle_and_xml(data):
    for fn in (loads_plain, lambda d: parse_topo_xml(d, "topo.xml")):
        try:
            fn(data)
        except ValueError:
            pass


_TMP = Path(tempfile.mkdtemp(prefix="ncclscope-prop-"))
atexit.register(shutil.rmtree, _TMP, True)
chunk_st = st.one_of(st.binary(max_size=200), st.sampled_from([b"\x00", b"\r\n", b"\n", b"\xff\xfe", b"\x80\x04",
                                                               b"{", b"<system", b"NCCL INFO ", b"\xe2\x82"]),
                     line_st.map(lambda s: s.encode("utf-8", "surrogatepass")))


@settings(max_examples=N_STRAT, **PROFILE)
@given(st.lists(chunk_st, max_size=30), st.sampled_from(["x.log", "fr_timeout_rank0", "a.jsonl", "env.txt", "t.xml"]))
def test_any_file_parse_file_never_raises(chunks, name):
    path = _TMP / name
    path.write_bytes(b"".join(chunks))
    p = parse_file(path, name)
    assert isinstance(p, Parsed) and (p.problem is None or isinstance(p.problem, str))


@settings(max_examples=max(5, N // 20), **PROFILE)
@given(st.lists(st.tuples(st.sampled_from(["a.log", "b.jsonl", "fr_rank1", "env.txt", "c.json"]),
                          st.lists(chunk_st, max_size=10)), min_size=1, max_size=4))
def test_any_folder_ingest_reads_or_says_why(files):
    with tempfile.TemporaryDirectory(dir=_TMP) as d:
        for name, chunks in files:
            (Path(d) / name).write_bytes(b"".join(chunks))
        try:
            fuzz_ingest.analyze_parsed(ingest([Path(d)], workers=1))
        except InputError as e:
            assert "\n" not in str(e)


# --- real files cut short, with CRLF, with a megabyte line ----------------------------------------------------

def _records(path: Path) -> list[tuple[str, int, str]]:
    return [(type(r).__name__, r.line, r.text.rstrip("\r\n")) for r in parse_file(path, path.name).records]


@pytest.fixture(scope="module")
def real_log() -> Path:
    """A real rank log: the corpus' hang run when ../shared is there, else the bundled sample's."""
    run = CORPUS / "hang_rank1_stuck"
    return sorted((run if run.is_dir() else SAMPLES / "gpu_hang").glob("*.nccl.log"))[0]


@settings(max_examples=max(10, N // 10), **PROFILE)
@given(st.floats(0, 1))
def test_log_cut_anywhere_keeps_every_whole_line_before_the_cut(real_log, cut):
    data = real_log.read_bytes()
    k = int(len(data) * cut)
    path = _TMP / "cut.nccl.log"
    path.write_bytes(data[:k])
    full = _records(real_log)
    got = _records(path)
    whole = data[:k].count(b"\n")  # lines 1..whole are complete
    assert [r for r in got if r[1] <= whole] == [r for r in full if r[1] <= whole]


def test_crlf_and_nul_do_not_change_what_is_read(real_log, tmp_path):
    data = real_log.read_bytes()
    crlf = tmp_path / "crlf.nccl.log"
    crlf.write_bytes(data.replace(b"\n", b"\r\n"))
    nul = tmp_path / "nul.nccl.log"
    nul.write_bytes(data.replace(b"NCCL INFO", b"NCCL INFO\x00", 1).replace(b"\n", b"\x00\n", 3))
    assert _records(crlf) == _records(real_log)
    assert len(_records(nul)) == len(_records(real_log))


def test_megabyte_line_and_invalid_utf8_leave_the_other_lines_alone(real_log, tmp_path):
    lines = real_log.read_bytes().split(b"\n")
    lines.insert(5, b"junk \xff\xfe\xc0 " * 100_000)  # 1.4 MB, invalid UTF-8
    lines.insert(9, b"NCCL INFO " + b"\xe2\x82" * 10)
    f = tmp_path / "big.nccl.log"
    f.write_bytes(b"\n".join(lines))
    # line 6 is the junk line and line 10 the short one; the real lines after each move down by one
    got = [(t, ln if ln < 6 else ln - 1 if ln < 10 else ln - 2, x) for t, ln, x in _records(f) if ln not in (6, 10)]
    want = _records(real_log)
    assert len(got) == len(want)
    assert max(len(t) for _, t in iter_lines(f)) <= 64 * 1024


@pytest.mark.parametrize("count,dt", [("9" * 19, "7"), ("99999999999999999999", "7"), ("10", "9999999999"),
                                      ("9223372036854775807", "7")])
def test_coll_lines_with_impossible_numbers(tmp_path, count, dt):
    """Found by fuzz_nccl: such lines overflowed the int64 / int32 columns of the collectives table."""
    line = (f"vm:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count {count} datatype {dt} "
            "op 0 root 0 comm 0x5 [nranks=2] stream 0x1\n")
    init = "vm:1:1 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x9 - Init COMPLETE\n"
    f = tmp_path / "vm.1.nccl.log"
    f.write_text(init + line * 3 + line.replace(count, "10", 1))
    fuzz_nccl.analyze_parsed([parse_file(f, f.name)])


# --- whole runs damaged the way real logs are: the verdict holds -----------------------------------------
# Every sample run (always) and corpus run (when ../shared is there), each of its text logs wrapped at a
# random width, behind a random tool prefix, with another process's output glued in front of a random
# line, or cut after its last fact: no crash, and the same verdict, culprits and stuck collective.

N_VERDICT = max(2, N // 60)  # damaged copies per run and kind of damage (each is a whole analysis)
RUNS = sorted([("samples", p.name) for p in SAMPLES.iterdir() if p.is_dir()]
              + [("corpus", name) for name in corpus_names() if (CORPUS / name).is_dir()])
GLUE = ["step 20 loss 0.00009", "Epoch 3:  45%|####5     | 9/20 [00:03<00:04,  2.61it/s]", "INFO:root:saved ckpt ",
        "\x1b[32mok\x1b[0m ", "tensor([0.1000, 0.2000]) "]
PREFIX_FORMS = ["2026-09-17T13:40:02.{i:07d}Z ", "2026-09-17T13:40:02.{i:09d}Z stderr F ", "[{i}] ", "gpu007: ",
                "  | 2026-08-23T22:22:51.874Z | ", "2026-09-17 13:40:02 ", "(TrainWorker pid=4411) ",
                "trainer.node1 [stderr] "]


def _run_dir(kind: str, name: str) -> Path:
    return (SAMPLES if kind == "samples" else CORPUS) / name


def _verdict(path: Path) -> tuple:
    d = analyze_run(build_run(ingest([path], workers=1))).decision
    return d.verdict.value, tuple(sorted(d.culprit_ranks)), (d.stuck.pg, d.stuck.seq) if d.stuck else None


_BASELINE: dict[tuple[str, str], tuple] = {}


def _baseline(kind: str, name: str) -> tuple:
    if (kind, name) not in _BASELINE:
        _BASELINE[(kind, name)] = _verdict(_run_dir(kind, name))
    return _BASELINE[(kind, name)]


def _fact_lines(path: Path) -> list[int]:
    """Line numbers that give records (COLL batches: every row's)."""
    out: list[int] = []
    for r in parse_file(path, path.name).records:
        lines = getattr(r, "lines", None)
        out += [int(x) for x in lines] if lines is not None else [r.line]
    return out


def _damage(rng, how: str, data: bytes, path: Path) -> bytes:
    lines = data.split(b"\n")
    if how == "wrap":
        width = rng.randint(80, 200)
        out = []
        for ln in lines:
            out += [ln[i:i + width] for i in range(0, max(len(ln), 1), width)]
        return b"\n".join(out)
    if how == "prefix":
        form = rng.choice(PREFIX_FORMS)
        return b"\n".join((form.format(i=i).encode() + ln) if ln else ln for i, ln in enumerate(lines, 1))
    if how == "glue":
        facts = _fact_lines(path)
        if not facts:
            return data
        k = rng.choice(facts) - 1
        lines[k] = rng.choice(GLUE).encode() + lines[k]
        return b"\n".join(lines)
    facts = _fact_lines(path)  # cut: after the last line that gives a record, so every fact stays
    keep = rng.randint(max(facts, default=0), len(lines))
    return b"\n".join(lines[:keep])


@pytest.mark.parametrize("how", ["wrap", "prefix", "glue", "cut"])
@pytest.mark.parametrize("kind,name", RUNS, ids=[f"{k}-{n}" for k, n in RUNS])
def test_damaged_run_keeps_its_verdict(kind, name, how, tmp_path_factory):
    src = _run_dir(kind, name)
    want = _baseline(kind, name)

    @settings(max_examples=N_VERDICT, **PROFILE)
    @given(st.randoms(use_true_random=False))
    def run(rng):
        dest = tmp_path_factory.mktemp("damaged") / name
        shutil.copytree(src, dest)
        for p in dest.rglob("*"):
            p.chmod(0o644 if p.is_file() else 0o755)
        (dest / "report.json").unlink(missing_ok=True)
        logs = sorted(p for p in dest.rglob("*.log") if p.is_file())
        for p in rng.sample(logs, rng.randint(1, len(logs))) if logs else []:
            p.write_bytes(_damage(rng, how, p.read_bytes(), p))
        assert _verdict(dest) == want, (how, [p.name for p in logs])

    run()
