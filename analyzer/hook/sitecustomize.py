"""ncclscope's ``sitecustomize``: put on ``PYTHONPATH`` by ``ncclscope run``.

It costs an unrelated Python process one meta-path finder: when (and only when) a process imports
``torch.distributed`` with ``NCCLSCOPE_RUN_DIR`` set, the finder hands the module to
``_ncclscope_hook.tracer`` (copied next to this file), which wraps the collectives and starts
tracing once a process group exists. Then it runs the next ``sitecustomize`` on ``sys.path``
(the user's own), exactly as Python would have without us. Nothing here may raise.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_TARGET = "torch.distributed"


class _DistributedFinder(importlib.abc.MetaPathFinder):
    """Wraps the loader of ``torch.distributed`` so the tracer sees the module once it is executed."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            spec = importlib.util.find_spec(fullname)
        except Exception:  # noqa: BLE001
            return None
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if spec is None or exec_module is None:
            return spec

        def exec_and_hook(module: ModuleType) -> None:
            exec_module(module)
            try:
                from _ncclscope_hook import tracer

                tracer.on_distributed_imported(module)
            except Exception as e:  # noqa: BLE001
                try:
                    sys.stderr.write(f"ncclscope hook: not active ({type(e).__name__}: {e})\n")
                except Exception:  # noqa: BLE001, S110
                    pass

        try:
            loader.exec_module = exec_and_hook  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001
            return spec
        return spec


def _install() -> None:
    if not os.environ.get("NCCLSCOPE_RUN_DIR") or os.environ.get("NCCLSCOPE_HOOK_OFF"):
        return
    if _TARGET in sys.modules:
        try:
            from _ncclscope_hook import tracer

            tracer.on_distributed_imported(sys.modules[_TARGET])
        except Exception:  # noqa: BLE001, S110
            pass
        return
    sys.meta_path.insert(0, _DistributedFinder())


def _chain() -> None:
    """Run the ``sitecustomize`` that ours shadows, as ``site`` would have."""
    paths = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    try:
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
    except Exception:  # noqa: BLE001
        return
    if spec is None or spec.loader is None or os.path.abspath(str(spec.origin)) == os.path.abspath(__file__):
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - what site.py itself does with a broken sitecustomize
        sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{type(e).__name__}: {e}\n")


try:
    _install()
except Exception:  # noqa: BLE001, S110
    pass
_chain()
