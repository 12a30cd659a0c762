"""Malicious pickles are refused with a clear message and nothing in them runs.

Every payload here would create a marker file if any callable in it were called; each test
asserts the refusal and that the marker does not exist.
"""
from __future__ import annotations

import copyreg
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from ncclscope.safe_pickle import loads_plain


class Reduce:
    """Pickles as ``fn(*args)``: what an attacker's ``__reduce__`` does."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    m = tmp_path / "PWNED"
    yield m
    assert not m.exists(), "a payload ran"


def _refused(data: bytes, marker: Path, words: str = "refused") -> str:
    with pytest.raises(ValueError) as e:
        loads_plain(data)
    assert not marker.exists(), "a payload ran"
    assert words in str(e.value), str(e.value)
    return str(e.value)


def _payloads(m: Path) -> dict[str, object]:
    import subprocess as sp

    return {
        "os.system": Reduce(os.system, f"touch {m}"),
        "eval": Reduce(eval, f"open({str(m)!r}, 'w').close()"),
        "exec": Reduce(exec, f"open({str(m)!r}, 'w').close()"),
        "subprocess.Popen": Reduce(sp.Popen, ["touch", str(m)]),
        "inside a real-looking dump": {"version": "2.10", "entries": [{"state": Reduce(os.system, f"touch {m}")}]},
    }


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("name", ["os.system", "eval", "exec", "subprocess.Popen", "inside a real-looking dump"])
def test_reduce_payloads_refused_at_every_protocol(name, protocol, marker):
    data = pickle.dumps(_payloads(marker)[name], protocol=protocol)
    msg = _refused(data, marker)
    assert "not plain data" in msg and "." in msg.split("asks for", 1)[-1]


def test_refusal_names_what_was_asked_for(marker):
    msg = _refused(pickle.dumps(Reduce(os.system, f"touch {marker}")), marker)
    assert msg == f"refused: the pickle asks for {os.system.__module__}.system, which is not plain data"


def _stack_global(module: str, name: str) -> bytes:
    """Protocol 4 STACK_GLOBAL, which resolves dotted names; then a call with the marker command."""
    def s(x: str) -> bytes:
        return b"\x8c" + bytes([len(x)]) + x.encode()
    return b"\x80\x04" + s(module) + s(name) + b"\x93(VCMD\ntR."


HAND_MADE = {
    # getattr(__import__('os'), 'system')('touch M'): a gadget chain through allowed-looking builtins
    "getattr gadget": b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(Vos\ntRVsystem\ntR(VCMD\ntR.",
    "Python 2 module name": b"c__builtin__\neval\n(VCMD\ntR.",
    "dotted name through an allowed class (protocol 4)": _stack_global("collections", "OrderedDict.__init__.__globals__"),
    "dotted name on builtins.set": _stack_global("builtins", "set.__init__.__class__.__call__"),
    "module with a trailing space": b"cbuiltins \neval\n(VCMD\ntR.",
    "INST opcode": b"(VCMD\nios\nsystem\n.",
    "OBJ opcode": b"(cos\nsystem\nVCMD\no.",
    "copyreg reconstructor": b"ccopyreg\n_reconstructor\n(cos\nsystem\ncbuiltins\nobject\nNtR.",
    "_codecs.decode": b"c_codecs\ndecode\n(VCMD\nVrot13\ntR.",
    "_codecs.encode with another codec": b"c_codecs\nencode\n(VCMD\nVzlib_codec\ntR.",
    "bytearray of a huge size": b"cbuiltins\nbytearray\n(I1000000000000\ntR.",
    "bytes of a huge size": b"cbuiltins\nbytes\n(I1000000000000\ntR.",
    "set of a string": b"cbuiltins\nset\n(VCMD\ntR.",
    "OrderedDict of a string": b"ccollections\nOrderedDict\n(VCMD\ntR.",
    "attributes set on a dict (BUILD)": b"ccollections\nOrderedDict\n)R}Vx\nI1\nsb.",
}


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_hand_made_gadgets_refused(name, marker):
    data = HAND_MADE[name].replace(b"CMD", f"touch {marker}".encode())
    _refused(data, marker)


def test_extension_registry_goes_through_find_class(marker):
    copyreg.add_extension("os", "system", 0x7ff0)
    try:
        data = b"\x80\x02\x83\xf0\x7f(X" + len(f"touch {marker}").to_bytes(4, "little") + \
            f"touch {marker}".encode() + b"tR."
        _refused(data, marker)
    finally:
        copyreg.remove_extension("os", "system", 0x7ff0)


class PidPickler(pickle.Pickler):
    def persistent_id(self, obj):
        return "payload" if obj == "secret" else None


def test_persistent_ids_refused(marker):
    import io

    buf = io.BytesIO()
    PidPickler(buf, protocol=2).dump({"entries": ["secret"]})
    assert "persistent ids" in _refused(buf.getvalue(), marker)
    assert "persistent ids" in _refused(b"Pfoo\n.", marker)


LENGTH_BOMBS = {
    "BINUNICODE 4 GB": b"\x80\x04X\xf0\xff\xff\xffabc.",
    "BINBYTES8 2**62": b"\x80\x04\x8e" + (2**62).to_bytes(8, "little") + b"abc.",
    "BYTEARRAY8 1 TB": b"\x80\x05\x96" + (2**40).to_bytes(8, "little") + b"abc.",
    "FRAME 2**60": b"\x80\x04\x95" + (2**60).to_bytes(8, "little") + b"N.",
    "LONG_BINPUT to slot 2**32-1": b"\x80\x02]r\xff\xff\xff\xff.",
    "LONG_BINPUT to slot 2**27": b"\x80\x02]r\x00\x00\x00\x08.",
    "PUT to slot 10**11": b"(lp99999999999\n.",
    "LONG4 of 2 GB": b"\x80\x02\x8b\xff\xff\xff\x7f\x00.",
    "BINSTRING negative": b"T\xff\xff\xff\xffabc.",
}


@pytest.mark.parametrize("name", sorted(LENGTH_BOMBS))
def test_huge_length_prefixes_refused_fast(name, marker):
    """Refused before anything is allocated or read: CPU time of this thread (the wall clock of a loaded machine
    counts other processes' turns); reading a claimed length would take seconds or exhaust memory."""
    t = time.thread_time()
    _refused(LENGTH_BOMBS[name], marker, words="")
    assert time.thread_time() - t < 0.5


def test_shared_reference_bomb_refused(marker):
    x: object = ["laugh"] * 10
    for _ in range(9):  # 10**10 leaves from a few hundred bytes
        x = [x] * 10
    data = pickle.dumps({"entries": x}, protocol=4)
    assert len(data) < 2000
    t = time.thread_time()  # CPU time, not the wall clock: expanding the references would take hours of it
    assert "pickle bomb" in _refused(data, marker)
    assert time.thread_time() - t < 2


def test_one_large_memoised_bytes_object_repeated_refused(marker):
    """64 references to one 32 MB object: 2 KB of pickle beyond the object, 2 GB to whoever reads each."""
    big = b"\x00" * (32 << 20)
    data = pickle.dumps({"entries": [{"frames": big} for _ in range(64)]}, protocol=4)
    assert len(data) < (33 << 20)
    assert "counted at every reference" in _refused(data, marker)
    # the same object a few times stays well within the budget
    assert loads_plain(pickle.dumps({"entries": [big, big]}, protocol=4))["entries"][1] is not None


def test_self_containing_and_deep_structures_refused(marker):
    loop: list = []
    loop.append(loop)
    assert "contains itself" in _refused(pickle.dumps({"entries": loop}), marker)
    deep = b"\x80\x02" + b"]" * 50_000 + b"a" * 49_999 + b"."
    assert "deeper than" in _refused(deep, marker)


def test_plain_data_loads_at_every_protocol():
    import collections

    obj = {"entries": [{"input_sizes": [[2, 3]], "state": "completed", "b": b"\x00\xff", "e": b"", "ba": bytearray(b"x"),
                        "s": {1, 2}, "f": frozenset({3}), "c": 1 + 2j, "o": collections.OrderedDict(a=1), "t": (1, None),
                        "big": 2**100, "x": -1.5, "u": "é"}]}
    for p in range(pickle.HIGHEST_PROTOCOL + 1):
        assert loads_plain(pickle.dumps(obj, protocol=p)) == obj


def test_real_dumps_still_load(corpus):
    for pkl in sorted(corpus.glob("*/fr_end_rank*.pkl")):
        twin = json.loads(pkl.with_suffix(".json").read_text())
        got = loads_plain(pkl.read_bytes())
        assert len(got["entries"]) == len(twin["entries"]) and got["pg_config"] == twin["pg_config"], pkl


# --- the whole CLI on a real run with a malicious dump added -------------------------------------

def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ncclscope", "analyze", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)


def test_malicious_dump_in_real_run_is_named_and_skipped(corpus, tmp_path):
    marker = tmp_path / "PWNED"
    run = tmp_path / "hang_rank1_stuck"
    shutil.copytree(corpus / "hang_rank1_stuck", run)
    clean = json.loads(_cli(str(run), "--json").stdout)
    evil = run / "fr_timeout_rank7"
    evil.write_bytes(pickle.dumps(Reduce(os.system, f"touch {marker}"), protocol=4))
    evil.chmod(0o644)
    p = _cli(str(run), "--json")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    got = json.loads(p.stdout)
    assert (got["verdict"], got["culprit_ranks"], got["stuck"]) == (clean["verdict"], clean["culprit_ranks"],
                                                                   clean["stuck"]) == ("hang", [1], got["stuck"])
    assert any("fr_timeout_rank7" in pr and "refused" in pr for pr in got["problems"]), got["problems"]
    text = _cli(str(run))
    assert text.returncode == 0 and "Traceback" not in text.stderr
    assert "fr_timeout_rank7" in text.stdout and "refused" in text.stdout and "VERDICT: HANG" in text.stdout
    assert not marker.exists(), "the malicious dump ran"
