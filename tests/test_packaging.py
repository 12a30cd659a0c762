"""Installed under one name: ``pip install .`` puts ``ncclscope`` into site-packages and nothing else.

The source folders stay ``analyzer/`` and ``dashboard/`` (the project's layout); pyproject.toml maps
them to ``ncclscope`` and ``ncclscope.dashboard``. A package folder missing from that list would be
left out of the wheel, so the list is checked against the tree.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
from conftest import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SOURCE_DIRS = {"ncclscope": ROOT / "analyzer", "ncclscope.dashboard": ROOT / "dashboard"}


def _packages_in_tree() -> set[str]:
    found = set()
    for name, base in SOURCE_DIRS.items():
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            if "__pycache__" not in rel:
                found.add(".".join((name, *rel)))
    return found


def test_every_package_folder_is_listed_in_pyproject():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert _packages_in_tree() <= listed, sorted(_packages_in_tree() - listed)
    assert listed <= _packages_in_tree(), sorted(listed - _packages_in_tree())


def test_no_module_imports_the_source_folder_names():
    offenders = []
    for base in (ROOT / "analyzer", ROOT / "dashboard", ROOT / "tests", ROOT / "benchmarks"):
        for p in base.rglob("*.py"):
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                s = line.strip()
                if s.startswith(("import analyzer", "from analyzer", "import dashboard", "from dashboard")):
                    offenders.append(f"{p.relative_to(ROOT)}:{n}: {s}")
    assert not offenders, offenders


@pytest.mark.slow
def test_wheel_holds_ncclscope_alone(tmp_path):
    src = tmp_path / "src"  # a copy, so that the build's own folders stay out of the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("analyzer", "dashboard"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(tmp_path), str(src)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    (wheel,) = tmp_path.glob("ncclscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"ncclscope"}, tops
    for must in ("ncclscope/__main__.py", "ncclscope/hook/sitecustomize.py", "ncclscope/schema/report.schema.json",
                 "ncclscope/dashboard/app.py", "ncclscope/dashboard/assets/style.css", "ncclscope/py.typed"):
        assert must in names, must
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "ncclscope = ncclscope.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_python_dash_m_ncclscope_runs_the_cli():
    p = subprocess.run([sys.executable, "-m", "ncclscope", "--help"], capture_output=True, text=True, timeout=600,
                       cwd="/")
    assert p.returncode == 0 and "analyze" in p.stdout, p.stderr


def test_doctor_imports_no_pandas_and_no_detector():
    code = ("import sys, io, contextlib\nfrom ncclscope.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['doctor', '--json'])\n    except SystemExit:\n        pass\n"
            "bad = sorted(m for m in sys.modules if m == 'pandas' or m.startswith(('ncclscope.detectors', 'pandas.')))\n"
            "print(' '.join(bad))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd="/")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "", f"ncclscope doctor imported: {p.stdout.strip()}"


def test_a_missing_dependency_is_named_not_reported_as_an_internal_error():
    """The sources run with a Python that lacks a dependency (no `pip install`): one line naming the package and
    how to install, not 'internal error ... please report it'."""
    code = ("import sys; sys.modules['pandas'] = None; from ncclscope.cli import main; "
            "sys.exit(main(['analyze', '--json', '--no-cache', 'samples/gpu_hang']))")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       check=False)
    assert p.returncode == 3 and not p.stdout, p
    assert "the package 'pandas' is not installed" in p.stderr and "internal error" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
