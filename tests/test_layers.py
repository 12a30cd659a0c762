"""The import graph holds to ARCHITECTURE.md's layering rule: a module imports from its own layer or a lower
one, never a higher one (imports inside functions count too), with no cycle between packages, and the hook
imports nothing of ncclscope. A new module must be given a layer here and in ARCHITECTURE.md."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (layer, order within the layer): lowest first, as ARCHITECTURE.md's table
LAYERS: dict[str, tuple[int, int]] = {
    "nccl": (1, 0), "model": (1, 1), "fr_model": (1, 1), "diag_model": (1, 1), "safe_io": (1, 0), "safe_pickle": (1, 1), "archive": (1, 2),
    "text_safety": (1, 0), "text_fit": (1, 0), "input_names": (1, 1), "alerts_file": (1, 1), "gc_pause": (1, 0),
    "malloc": (1, 0),
    "ports": (1, 0), "schema": (1, 0), "__init__": (1, 0),
    "sources": (2, 0), "ingest": (2, 1), "stdin_input": (2, 2),
    "model_build": (3, 0), "metrics": (3, 0),
    "rules": (4, 0), "detectors": (4, 1), "verdict": (4, 2),
    "result": (5, 0), "report": (5, 1), "cache": (5, 1),
    "analysis": (6, 0),
    "live": (7, 0), "export": (7, 0), "doctor": (7, 0), "perf": (7, 0), "synth": (7, 0), "compare": (7, 0),
    "diff": (7, 0),
    "dashboard": (8, 0), "run_dashboard": (8, 0), "launch": (8, 1),
    "commands": (9, 0), "cli": (9, 1), "consoles": (9, 0), "__main__": (9, 2),
}
OUTSIDE = {"hook"}  # copied into the training processes: imports nothing of ncclscope


def _unit(path: Path) -> tuple[str, str]:
    """(the top-level unit a file belongs to, its dotted module name under ncclscope)."""
    if path.is_relative_to(ROOT / "dashboard"):
        rel = path.relative_to(ROOT / "dashboard").with_suffix("")
        return "dashboard", ".".join(("dashboard", *rel.parts))
    rel = path.relative_to(ROOT / "analyzer").with_suffix("")
    return rel.parts[0], ".".join(rel.parts)


def _imports(path: Path, module: str) -> set[str]:
    """The top-level ncclscope units ``path`` imports (absolute ``ncclscope.x`` or relative)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                target = [*base, *(node.module.split(".") if node.module else [])]
                names = [target] if node.module else [[*base, a.name] for a in node.names]
            elif node.module and node.module.startswith("ncclscope"):
                names = [node.module.split(".")[1:] or [a.name for a in node.names][:1]]
            else:
                continue
            for t in names:
                if t:
                    out.add(t[0])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("ncclscope."):
                    out.add(a.name.split(".")[1])
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in [*sorted((ROOT / "analyzer").rglob("*.py")), *sorted((ROOT / "dashboard").rglob("*.py"))]:
        unit, module = _unit(path)
        graph.setdefault(unit, set()).update(u for u in _imports(path, module) if u != unit)
    return graph


def test_every_unit_has_a_layer() -> None:
    units = set(_graph()) - OUTSIDE
    assert units <= set(LAYERS), f"give these a layer here and in ARCHITECTURE.md: {sorted(units - set(LAYERS))}"


def test_no_import_runs_up_a_layer() -> None:
    up = [f"{a} {LAYERS[a]} imports {b} {LAYERS[b]}" for a, targets in _graph().items() if a in LAYERS
          for b in targets if b in LAYERS and LAYERS[b] > LAYERS[a]]
    assert not up, "\n".join(sorted(up))


def test_the_hook_imports_nothing_of_ncclscope() -> None:
    assert not (_graph().get("hook", set()) - {"hook"})


def test_no_cycle_between_units() -> None:
    graph = _graph()
    state: dict[str, int] = {}

    def visit(u: str, path: list[str]) -> None:
        state[u] = 1
        for v in sorted(graph.get(u, ())):
            assert state.get(v) != 1, "cycle: " + " -> ".join([*path, u, v])
            if v not in state:
                visit(v, [*path, u])
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u, [])
