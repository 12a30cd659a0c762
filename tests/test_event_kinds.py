"""Every LogEvent kind the model builds is a ``model.EventKind`` member: the records ``model_build.events`` keeps as
their class (every TorchRec it does not name), each NcclNet kind a parser writes, the unread-line counts and the hook's
events. A record class or a parser's kind without a member is a bug this test names."""
from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import ncclscope.sources as sources_pkg
import pytest
from conftest import SAMPLES

from ncclscope.analysis import analyze_paths
from ncclscope.model import EventKind
from ncclscope.model_build.events import HOOK_EVENTS, net_kind
from ncclscope.sources import records as R
from ncclscope.sources.hook_jsonl import HookType

ROOT = Path(__file__).resolve().parents[1]
EVENTS_PY = ROOT / "analyzer" / "model_build" / "events.py"
KINDS = {k.value for k in EventKind}


def _all_subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _all_subclasses(sub)
    return out


def _named_in_builder() -> set[str]:
    """The record classes ``_torch_event`` names in an ``isinstance`` (each given its own kind there)."""
    tree = ast.parse(EVENTS_PY.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            arg = node.args[1]
            names.add(arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", ""))
    return names


def test_every_record_kept_as_its_class_has_a_member() -> None:
    for info in pkgutil.walk_packages(sources_pkg.__path__, "ncclscope.sources."):
        importlib.import_module(info.name)  # every parser module, so that each record class is defined
    named = _named_in_builder()
    handled = [c for c in _all_subclasses(R.TorchRec) if c.__name__ in named]
    kept = sorted(c.__name__ for c in _all_subclasses(R.TorchRec) if not any(issubclass(c, h) for h in handled))
    assert kept, "no record is kept as its class: the test no longer reads the builder"
    assert [k for k in kept if k not in KINDS] == []


def test_every_tool_event_kind_has_a_member() -> None:
    kinds = [v for k, v in vars(R).items() if k.endswith("_EVENT") and isinstance(v, str)]
    assert kinds and [k for k in kinds if k not in KINDS] == []


NET_KIND_RE = re.compile(r"Ncc\w*\(\*base, \"([a-z_]+)\"")


def test_every_nccl_net_kind_a_parser_writes_has_a_member() -> None:
    written = {m for p in (ROOT / "analyzer" / "sources").glob("*.py") for m in NET_KIND_RE.findall(p.read_text())}
    assert {"network", "plugin", "launch", "service_closed", "init_timings", "speed_guess"} <= written
    assert sorted(k for k in written if net_kind(k) is EventKind.NCCL_NET_OTHER) == []
    assert net_kind("ib") is EventKind.NCCL_NET_IB and net_kind("socket") is EventKind.NCCL_NET_SOCKET
    assert net_kind("ofi") is EventKind.NCCL_NET_OTHER  # NET/OFI : Using ...: a network without a member of its own


def test_the_unread_counts_and_the_hook_events_have_members() -> None:
    assert {f"{k}_unread" for k in ("nccl", "pytorch")} <= KINDS
    assert set(HOOK_EVENTS) == {HookType.ERROR, HookType.EXIT, HookType.STALL, HookType.DESYNC}
    assert all(v.value == f"hook_{k.value}" for k, v in HOOK_EVENTS.items())


def test_an_unknown_word_is_no_member() -> None:
    with pytest.raises(ValueError):
        EventKind("nccl_warning")


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.is_dir()))
def test_the_samples_events_are_members(name: str) -> None:
    run = analyze_paths([SAMPLES / name], cache=False).run
    assert run.events and all(type(e.kind) is EventKind for e in run.events)
