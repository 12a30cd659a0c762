"""The NCCL vocabularies: one spelling of each collective and datatype, busbw factors by any spelling,
and the knowledge package importing nothing from the rest of ncclscope."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ncclscope.nccl.busbw import busbw_factor, has_busbw_factor
from ncclscope.nccl.dtypes import NCCL_DTYPES, canonical_dtype
from ncclscope.nccl.ops import NCCL_OPS, canonical_op, torch_name

PKG = Path(__file__).resolve().parents[2] / "analyzer" / "nccl"


@pytest.mark.parametrize("spelling", ["AllReduce", "allreduce", "all_reduce", "nccl:all_reduce", "OpType.ALLREDUCE",
                                      "all_reduce_perf", "allreduce_coalesced", " all_reduce "])
def test_every_spelling_of_allreduce_is_one_name(spelling):
    assert canonical_op(spelling) == "allreduce"
    assert torch_name(spelling) == "all_reduce"


@pytest.mark.parametrize("spelling,want", [("reduce_scatter_tensor", "reducescatter"), ("_reduce_scatter_base", "reducescatter"),
                                           ("all_gather_into_tensor", "allgather"), ("alltoall_base", "alltoall"),
                                           ("all_to_all_single", "alltoall"), ("all2all", "alltoall"),
                                           ("gloo:broadcast", "broadcast"), ("bcast", "broadcast")])
def test_torch_variants_map_to_their_collective(spelling, want):
    assert canonical_op(spelling) == want


def test_nccl_log_names_are_canonical_already():
    for logged, name in NCCL_OPS.items():
        assert canonical_op(logged) == name


@pytest.mark.parametrize("op,n,factor", [("AllReduce", 8, 1.75), ("all_reduce", 2, 1.0), ("allgather", 4, 0.75),
                                         ("ReduceScatter", 4, 0.75), ("all_to_all", 8, 0.875), ("broadcast", 8, 1.0),
                                         ("Reduce", 3, 1.0)])
def test_busbw_factor_by_any_spelling(op, n, factor):
    assert busbw_factor(op, n) == pytest.approx(factor)
    assert has_busbw_factor(op)


@pytest.mark.parametrize("op", ["send", "Recv", "barrier"])
def test_no_factor_for_point_to_point(op):
    assert not has_busbw_factor(op)
    with pytest.raises(ValueError):
        busbw_factor(op, 4)


def test_perf_and_model_share_the_factor():
    from ncclscope.perf import bw
    assert bw.busbw_factor is busbw_factor
    assert bw.canonical_op("allreduce") == "all_reduce"


@pytest.mark.parametrize("name,want", [("torch.float32", "float32"), ("Float", "float32"), ("half", "float16"),
                                       ("torch.bfloat16", "bfloat16"), ("Long", "int64"), (None, None),
                                       (float("nan"), None)])
def test_canonical_dtype(name, want):
    assert canonical_dtype(name) == want


def test_nccl_dtype_codes_are_canonical_names():
    for code, (name, size) in NCCL_DTYPES.items():
        assert canonical_dtype(name) == name and size in (1, 2, 4, 8), code


def test_package_imports_nothing_above_it():
    """ncclscope.nccl sits below everything: only the standard library and its own modules."""
    for path in PKG.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, f"{path.name} imports {'.' * node.level}{node.module}"
                assert node.level == 1 or not (node.module or "").startswith(("ncclscope", "pandas", "numpy")), \
                    f"{path.name} imports {node.module}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    assert not a.name.startswith(("ncclscope", "pandas", "numpy", "torch")), f"{path.name}: {a.name}"


def test_detectors_take_busbw_from_the_knowledge_package_not_perf():
    """The detectors and metrics ask ncclscope.nccl for busbw factors; importing them pulls in no
    `ncclscope perf` (the sweep's torch code)."""
    import subprocess
    import sys
    code = "import sys, ncclscope.detectors, ncclscope.metrics.busbw; print('ncclscope.perf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_metrics_factor_is_one_for_point_to_point():
    from ncclscope.metrics.busbw import factor
    assert factor("allreduce", 4) == pytest.approx(1.5) and factor("send", 4) == 1.0 and factor("allgather", 0) == 1.0
