"""The compiled COLL reader's module: built once into the user's cache, loaded without numba, refused
when someone else could have written it, and replaced by numba's JIT when it cannot be built."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncclscope.sources.coll import kernel_build as coll_build

ROOT = Path(__file__).resolve().parents[2]

# ``compiles``: the build processes started (``kernel_build`` runs the compiler in a child of its own), counted
# rather than timed: a load is an import, a compile is that child
PROBE = """
import json, subprocess, sys
from ncclscope.sources.coll import kernel as coll_kernel
builds = []
_run = subprocess.run
def _counted(args, *a, **k):
    builds.extend(1 for x in args if "kernel_build" in str(x))
    return _run(args, *a, **k)
subprocess.run = _counted
armed = coll_kernel.arm(build={build})
fn = coll_kernel.ready()
block = b"node0:1:1 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 42 datatype 7 op 0 root 0 comm 0x3 [nranks=2]\\n"
cols = coll_kernel.read_coll_columns_compiled(block) if fn else None
print(json.dumps(dict(armed=armed, compiles=len(builds), numba="numba" in sys.modules,
                      kind=type(fn).__name__, count=None if cols is None else cols.count.tolist())))
"""


def probe(env: dict[str, str], build: bool = True) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE.format(build=build)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def kernel_env(tmp_path):
    env = dict(os.environ, NCCLSCOPE_KERNEL_DIR=str(tmp_path / "kernels"))
    env.pop("NCCLSCOPE_NO_JIT", None)
    return env


def test_built_once_then_loaded_without_numba(kernel_env, tmp_path):
    first = probe(kernel_env)  # builds it (a child process of this one's child)
    assert first["armed"] and first["count"] == [42] and first["kind"] == "builtin_function_or_method"
    assert first["compiles"] == 1  # the count sees a build
    assert not first["numba"]  # the build ran in a process of its own
    built = list((tmp_path / "kernels").glob("*/ncclscope_coll_kernel*"))
    assert len(built) == 1 and not built[0].stat().st_mode & 0o022
    made = (built[0].stat().st_ino, built[0].stat().st_mtime_ns)
    again = probe(kernel_env)
    assert again["armed"] and again["count"] == [42] and not again["numba"]
    assert again["compiles"] == 0  # a module import, not a compile
    now = list((tmp_path / "kernels").glob("*/ncclscope_coll_kernel*"))
    assert [(p.stat().st_ino, p.stat().st_mtime_ns) for p in now] == [made]  # the same file, not rebuilt


def test_not_built_for_small_inputs(kernel_env, tmp_path):
    got = probe(kernel_env, build=False)  # nothing there and no building: the numpy reader, at once
    assert not got["armed"] and not got["numba"] and got["compiles"] == 0
    assert not list((tmp_path / "kernels").glob("*/ncclscope_coll_kernel*"))


def test_a_module_others_could_write_is_refused(kernel_env, tmp_path):
    assert probe(kernel_env)["armed"]
    folder = next((tmp_path / "kernels").iterdir())
    module = coll_build.module_path(folder)
    module.chmod(0o777)
    assert coll_build.load(folder) is None
    module.chmod(0o700)
    folder.chmod(0o777)
    assert coll_build.load(folder) is None
    folder.chmod(0o700)
    assert coll_build.load(folder) is not None


def test_loaded_through_checked_descriptors_never_by_path_again(kernel_env, tmp_path, monkeypatch):
    """A linked module or folder is refused; and the bytes loaded are the ones read from the checked
    descriptor: a file swapped in at that path afterwards is never what runs."""
    assert probe(kernel_env)["armed"]
    folder = next((tmp_path / "kernels").iterdir())
    module = coll_build.module_path(folder)
    linked = tmp_path / "linked"
    os.symlink(folder, linked)
    assert coll_build.load(linked) is None  # the folder is a link
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    os.symlink(module, coll_build.module_path(other))
    assert coll_build.load(other) is None  # the module is a link
    good = module.read_bytes()
    real_read = coll_build.read_private_module

    def read_then_swap(f: Path) -> bytes | None:
        data = real_read(f)
        module.write_bytes(b"not a module")  # swapped once the check is done
        return data

    monkeypatch.setattr(coll_build, "read_private_module", read_then_swap)
    try:
        fn = coll_build.load(folder)
    finally:
        module.write_bytes(good)
    assert fn is not None and callable(fn)


def test_numba_jit_when_it_cannot_be_built(kernel_env):
    env = dict(kernel_env, NCCLSCOPE_KERNEL_BUILD="0")
    got = probe(env)
    assert got["armed"] and got["count"] == [42] and got["numba"] and got["kind"] == "CPUDispatcher"


def test_no_jit_means_numpy(kernel_env):
    got = probe(dict(kernel_env, NCCLSCOPE_NO_JIT="1"))
    assert not got["armed"] and not got["numba"]


def test_a_batch_pickles_its_columns_as_one_buffer_and_loads_them_as_views():
    """A parse worker sends thousands of batches: each travels as one out-of-band buffer (not seven
    arrays), and comes back with every column equal, of its type, and a view of that buffer."""
    import pickle

    import numpy as np
    from ncclscope.sources.coll.batch import NcclCollBatch

    n = 5
    b = NcclCollBatch("r0.log", 7, "", "h", 11, 11, None, [("h", 11)], np.zeros(n, np.int32), ["0xc"],
                      np.zeros(n, np.int32), ["AllReduce"], np.zeros(n, np.int16), np.arange(n, dtype=np.int64) * 3,
                      np.full(n, 7, np.int16), np.linspace(1.0, 2.0, n), np.arange(7, 7 + n, dtype=np.int64))
    bufs: list[pickle.PickleBuffer] = []
    head = pickle.dumps(b, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1
    back = pickle.loads(head, buffers=[bytearray(x.raw()) for x in bufs])
    for name in ("proc", "comm", "op", "count", "datatype", "tss", "lines"):
        got, want = getattr(back, name), getattr(b, name)
        assert got.dtype == want.dtype and (got == want).all() and not got.flags.owndata
    assert (back.file, back.line, back.procs, back.comms, back.ops) == (b.file, b.line, b.procs, b.comms, b.ops)
    assert pickle.loads(pickle.dumps(b)).lines.tolist() == b.lines.tolist()  # in band too
    with pytest.raises(ValueError, match="cut short"):
        pickle.loads(head, buffers=[bytearray(bufs[0].raw())[:-8]])
