"""The knowledge base of failures (ncclscope/nccl/failures.toml) and the nccl_warn detector that reads it.

Per entry: its pattern matches every example it stores (one a release form) and classify() picks it for
them; no other entry's pattern matches them unless the overlap is declared; the pattern stays linear on
adversarial lines built from its own examples. Then the file's rules (ids, areas, links) and the loader's
errors, and the detector on NCCL logs in the real shape: a known WARN becomes a finding with cause, fix,
link and evidence; an unknown WARN followed by a failing return chain becomes an error that quotes it.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.detectors import nccl_warn
from ncclscope.model import Severity
from ncclscope.nccl import failures as F
from ncclscope.nccl.prefilter import required_literals

ENTRIES = F.entries()
IDS = [e.id for e in ENTRIES]
# CPU seconds of this thread per pattern and line: a linear search over 256 kB takes milliseconds, a backtracking
# one minutes. CPU time, not the wall clock: on a loaded machine the wall clock counts other processes' turns
LIMIT_S = 1.5


def test_at_least_120_entries_and_every_area_covered():
    assert len(ENTRIES) >= 120
    assert {e.area for e in ENTRIES} == set(F.AREAS)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_pattern_matches_each_release_form_it_cites(entry):
    assert entry.examples, "an entry stores at least one example message"
    for ex in entry.examples:
        assert entry.pattern.search(ex.text), f"{entry.id} misses its {ex.release} form: {ex.text!r}"
        got = F.classify(ex.text)
        assert got is entry, f"{ex.text!r} classified as {got and got.id} (an earlier entry wins: reorder)"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_pattern_matches_no_other_entrys_examples_unless_declared(entry):
    for other in ENTRIES:
        if other is entry or entry.id in other.overlaps or other.id in entry.overlaps:
            continue
        for ex in other.examples:
            assert not entry.pattern.search(ex.text), f"{entry.id} also matches {other.id}'s {ex.text!r}"


def test_declared_overlaps_name_real_entries_that_do_overlap():
    by_id = {e.id: e for e in ENTRIES}
    for e in ENTRIES:
        for o in e.overlaps:
            assert o in by_id, f"{e.id} declares an unknown entry {o}"
            pair = (e, by_id[o])
            assert any(a.pattern.search(x.text) for a, b in (pair, pair[::-1]) for x in b.examples), \
                f"{e.id} declares an overlap with {o} that no example shows"


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_release_form_has_an_example(entry):
    assert list(entry.releases) == list(dict.fromkeys(x.release for x in entry.examples))


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_entry_fields(entry):
    assert entry.releases and all(r.strip() for r in entry.releases)
    assert entry.link.startswith("https://")
    if entry.link.startswith("https://github.com/NVIDIA/nccl/blob/"):
        assert "#L" in entry.link, "a link into NCCL's source names the line"
    assert len(entry.cause) > 20 and len(entry.fix) > 10
    assert entry.kind in F.KINDS and entry.severity in F.SEVERITIES


def _pumps(entry: F.Entry, n: int) -> list[str]:
    """Lines that make a backtracking pattern slow: its own examples repeated whole, cut short (so the
    last step fails every time), their first half repeated, and runs of one character class."""
    out = [" " * n, "a" * n, "1" * n, "<" * n, "a " * (n // 2)]
    for ex in entry.examples:
        t = ex.text
        out += [(t + " ") * (n // (len(t) + 1)), t[:-1] * (n // max(1, len(t) - 1)),
                t[: len(t) // 2] * (n // max(1, len(t) // 2))]
    return out


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_pattern_is_linear_on_adversarial_lines(entry):
    for line in _pumps(entry, 256 * 1024):
        t0 = time.thread_time()
        entry.pattern.search(line)
        assert time.thread_time() - t0 < LIMIT_S, f"{entry.id} backtracks on {line[:60]!r}..."


def test_classify_reads_a_bounded_prefix():
    tail = "NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129"
    assert F.classify(tail).id == "ib-retry-exceeded"
    assert F.classify("x" * F.MAX_TEXT + tail) is None


@pytest.mark.parametrize("pattern,want", [
    (r"ab?cde", ("cde",)), (r"x\d{1,3}yyyy", ("yyyy",)), (r"(?:a|b)ccc|dddd", ("ccc", "dddd")),
    (r"[abc]{2}zzz+q", ()), (r"foo\.bar\(\)", ("foo.bar()",)), (r"Got (?:x|y) completion", (" completion",)),
    (r"\w{1,30} : invalid", (" : invalid",)), (r"ab|c", ()), (r"(?:a[)|]b)cccc|dddd", ("cccc", "dddd")),
    (r"x[(]yyyy", ("yyyy",)), (r"[]|]zzzz", ("zzzz",)), (r"q[^)\n]{0,9}\) failed", (") failed",)),
])
def test_required_literals_are_conservative(pattern, want):
    assert required_literals(pattern) == want


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_prefilter_keeps_every_example(entry):
    lits = required_literals(entry.pattern.pattern)
    for ex in entry.examples:
        assert not lits or any(lit in ex.text.lower() for lit in lits), (entry.id, lits)


# -- the loader's rules ------------------------------------------------------------------------------------
GOOD = """
[[entry]]
id = "a"
area = "socket"
pattern = 'boom \\d+'
releases = ["NCCL 2.4-2.30"]
cause = "something broke on purpose"
fix = "stop breaking it"
link = "https://example.invalid/a"
examples = [{ release = "NCCL 2.4-2.30", text = "boom 1" }]
"""


def test_parse_reads_an_entry():
    (e,) = F.parse(GOOD)
    assert (e.id, e.kind, e.severity, e.meaning, e.hint) == ("a", "error", "error", "something broke on purpose",
                                                              "stop breaking it")


@pytest.mark.parametrize("edit,says", [
    (lambda s: s.replace('fix = "stop breaking it"\n', ""), "missing fix"),
    (lambda s: s.replace("'boom \\d+'", "'boom ('"), "does not compile"),
    (lambda s: s.replace('area = "socket"', 'area = "weather"'), "unknown"),
    (lambda s: s.replace('area = "socket"', 'area = "socket"\nseverity = "warning"'), "kind 'note'"),
    (lambda s: s + s, "duplicate ids a"),
    (lambda s: s.replace('{ release = "NCCL 2.4-2.30", text = "boom 1" }', '{ text = "boom 1" }'), "needs a release"),
    (lambda s: s.replace("[[entry]]", "[[entry]\n"), "failures.toml"),
])
def test_parse_names_the_bad_entry(edit, says):
    with pytest.raises(F.KnowledgeBaseError, match=says):
        F.parse(edit(GOOD))


# -- the detector on NCCL logs in the real shape ---------------------------------------------------------
def _log(host: str, pid: int, rank: int, lines: list[str], version: str = "2.21.5+cuda12.4") -> str:
    head = [f"{host}:{pid}:{pid + 100} [{rank}] NCCL INFO Bootstrap : Using eth0:10.20.0.{5 + rank}<0>",
            f"{host}:{pid}:{pid + 100} [{rank}] NCCL INFO NCCL version {version}",
            (f"{host}:{pid}:{pid + 100} [{rank}] NCCL INFO comm 0x55a1c0 rank {rank} nranks 2 cudaDev {rank} "
             f"nvmlDev {rank} busId 1b000 commId 0x8f21c3a9 - Init START")]
    return "\n".join(head + [ln.format(h=f"{host}:{pid}:{pid + 190} [{rank}]") for ln in lines]) + "\n"


def _write(tmp_path: Path, logs: dict[str, str]) -> Path:
    for name, text in logs.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def _warn_findings(path: Path):
    a = analyze_paths([path])
    return a.run, [f for f in nccl_warn.detect(a.run)], a.findings


UNKNOWN = ["{h} misc/frobnicate.cc:42 NCCL WARN Frobnicator lost widget 77 on channel 3",
           "{h} NCCL INFO misc/frobnicate.cc:50 -> 3",
           "{h} NCCL INFO init.cc:1400 -> 3"]


def test_unknown_warn_with_failing_chain_is_an_error_that_quotes_it(tmp_path):
    _, fs, all_findings = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, UNKNOWN)}))
    (f,) = fs
    assert f.kind == "error" and f.severity == Severity.ERROR and f.ranks == (0,)
    assert "Frobnicator lost widget 77 on channel 3" in f.message and "not in the knowledge base" in f.message
    assert "misc/frobnicate.cc:50 -> 3" in f.message and f.data["chain"][:1] == ["misc/frobnicate.cc:50 -> 3"]
    assert f.evidence[0].line == 4 and f.evidence[1].text.endswith("misc/frobnicate.cc:50 -> 3")
    assert f in all_findings  # registered: analyze runs it


def test_unknown_warn_without_a_chain_is_not_reported(tmp_path):
    _, fs, _ = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, UNKNOWN[:1])}))
    assert fs == []


def test_chain_of_another_rank_in_one_file_is_not_this_warns(tmp_path):
    text = _log("nodea", 1201, 0, UNKNOWN[:1]) + "nodea:1202:1392 [1] NCCL INFO comm 0x55a1c1 rank 1 nranks 2 " \
        "cudaDev 1 nvmlDev 1 busId 3b000 commId 0x8f21c3a9 - Init START\nnodea:1202:1392 [1] NCCL INFO init.cc:1400 -> 3\n"
    _, fs, _ = _warn_findings(_write(tmp_path, {"both.log": text}))
    assert fs == []


SHM = [("{h} misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to 9637892 bytes, "
        "error: No space left on device (28)"),
       "{h} NCCL INFO misc/shmutils.cc:112 -> 2",
       "{h} NCCL INFO transport/shm.cc:114 -> 2"]


def test_known_warn_on_two_ranks_is_one_finding_with_cause_fix_link(tmp_path):
    path = _write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, SHM), "rank1.log": _log("nodea", 1202, 1, SHM)})
    _, fs, all_findings = _warn_findings(path)
    (f,) = fs
    assert [g for g in all_findings if any("failed to extend" in x.text for x in g.evidence)] == [f]  # said once
    e = F.by_id("shm-extend")
    assert f.ranks == (0, 1) and f.data["entry"] == "shm-extend" and f.data["count"] == 2
    assert f.data["cause"] == e.cause and f.data["fix"] == e.fix and f.data["link"] == e.link
    assert e.cause in f.message and "failed to extend /dev/shm/nccl-Ab12Cd" in f.message
    assert e.fix in f.hint and e.link in f.hint
    assert "NCCL WARN Error: failed to extend" in f.evidence[0].text
    assert f.data["chain"] == ["misc/shmutils.cc:112 -> 2", "transport/shm.cc:114 -> 2"]


def test_older_wordings_are_known(tmp_path):
    lines = ["{h} transport/net_ib.cc:818 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
             "{h} NCCL INFO transport/net_ib.cc:930 -> 2",
             "{h} enqueue.cc:520 NCCL WARN Error : no algorithm/protocol available",
             "{h} NCCL INFO enqueue.cc:600 -> 3"]
    _, fs, _ = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, lines, "2.7.8+cuda11.0")}))
    assert [f.data["entry"] for f in fs] == ["ib-retry-exceeded", "algo-unavailable"]


def test_a_setting_named_in_the_warn_is_left_to_the_config_detector(tmp_path):
    lines = ["{h} NCCL INFO NCCL_ALGO set by environment to Tree",
             ("{h} enqueue.cc:1990 NCCL WARN Error : no algorithm/protocol available for function AllGather with "
              "datatype ncclInt8. NCCL_ALGO was set to Tree."),
             "{h} NCCL INFO enqueue.cc:2100 -> 3"]
    _, fs, all_findings = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, lines, "2.28.9+cuda13.0")}))
    assert fs == []
    assert any(f.kind == "config" and "NCCL_ALGO" in f.message for f in all_findings)


def test_known_bad_release_is_a_note(tmp_path):
    _, fs, _ = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, [], "2.19.3+cuda12.3")}))
    (f,) = fs
    assert f.kind == "note" and f.severity == Severity.WARNING and f.data["entry"] == "release-2.19-cumem"
    _, fs, _ = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, [], "2.20.5+cuda12.4")}))
    assert fs == []


def test_loopback_matters_only_across_hosts(tmp_path):
    lo = ["{h} NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>"]
    one = tmp_path / "one"
    one.mkdir()
    _, fs, _ = _warn_findings(_write(one, {"rank0.log": _log("nodea", 1201, 0, lo), "rank1.log": _log("nodea", 1202, 1, lo)}))
    assert fs == []
    two = tmp_path / "two"
    two.mkdir()
    _, fs, _ = _warn_findings(_write(two, {"rank0.log": _log("nodea", 1201, 0, lo), "rank1.log": _log("nodeb", 1202, 1, lo)}))
    (f,) = fs
    assert f.data["entry"] == "env-loopback-chosen" and f.ranks == (0, 1) and f.severity == Severity.WARNING


def test_connection_refused_with_lo_chosen_names_the_loopback(tmp_path):
    lines = ["{h} misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 127.0.1.1<43761> failed : Connection refused",
             "{h} NCCL INFO misc/socket.cc:567 -> 2",
             "{h} NCCL INFO bootstrap.cc:274 -> 2"]
    _, fs, _ = _warn_findings(_write(tmp_path, {"rank1.log": _log("nodeb", 1202, 1, lines, "2.18.6+cuda12.2")}))
    (f,) = fs
    assert f.data["entry"] == "socket-loopback-refused" and "NCCL_SOCKET_IFNAME" in f.hint


def test_cached_findings_are_keyed_on_the_knowledge_base(monkeypatch):
    """A new entry changes findings: the analysis cache must see failures.toml (and the vocabularies the
    parsers use must be in the parse key)."""
    from ncclscope import cache
    seen: list[Path] = []
    monkeypatch.setattr(cache, "_digest", lambda paths: seen.extend(paths) or "x")
    monkeypatch.setattr(cache, "_ADIGEST", None)
    monkeypatch.setattr(cache, "_DIGEST", None)
    cache.analysis_digest()
    assert any(p.name == "failures.toml" and p.is_file() for p in seen)
    seen.clear()
    cache.code_digest()
    assert {"ops.py", "dtypes.py"} <= {p.name for p in seen if p.parent.name == "nccl"}


def test_unknown_warn_echoed_by_ranks_on_other_hosts_is_one_finding(tmp_path):
    def lines(peer: str) -> list[str]:
        return [f"{{h}} misc/frobnicate.cc:42 NCCL WARN Frobnicator lost widget from {peer}",
                "{h} NCCL INFO misc/frobnicate.cc:50 -> 3"]
    path = _write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, lines("nodeb")),
                             "rank1.log": _log("nodeb", 1202, 1, lines("nodea"))})
    _, fs, _ = _warn_findings(path)
    (f,) = fs
    assert f.ranks == (0, 1) and f.data["count"] == 2


def test_p2p_level_loc_is_a_note_with_its_line(tmp_path):
    lines = ["{h} NCCL INFO NCCL_P2P_LEVEL set by environment to LOC"]
    _, fs, _ = _warn_findings(_write(tmp_path, {"rank0.log": _log("nodea", 1201, 0, lines)}))
    (f,) = fs
    assert f.data["entry"] == "env-p2p-level-off" and f.data["settings"] == ["NCCL_P2P_LEVEL"]
    assert f.evidence and f.evidence[0].text.endswith("NCCL_P2P_LEVEL set by environment to LOC")


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_classify_in_area_gives_classify_s_answer_only_for_its_area(entry):
    """classify_in_area (the environment detector's fast path) is classify restricted to one area: on every
    example of the knowledge base it answers classify's entry when that entry is of the area asked, else None."""
    for ex in entry.examples:
        full = F.classify(ex.text)
        for area in ("environment", entry.area):
            got = F.classify_in_area(ex.text, area)
            assert got is (full if full is not None and full.area == area else None), (ex.text, area)
