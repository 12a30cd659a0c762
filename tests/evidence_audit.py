"""Which findings lack real evidence: a finding must carry a line of its input (a file the input holds, a line
number from 1), never an empty tuple nor a made-up location.

Two exceptions, each a class:
- by the file's format: a Flight Recorder dump (a pickle, or the JSON of one) has no lines a user can open at a
  number, so evidence from it names the dump as a whole with line 0 and a rendering of the entry; such evidence
  counts when the file is one of the input's dumps;
- by the finding's kind: ``internal`` is a detector that failed (``detectors.run_detectors``), a fact about
  ncclscope, not about the input, so it has no line of the input to carry.

Run as a script, it analyses every bundled run (samples/, tests/data/fault_runs/, tests/data/wild/ and the
real corpus when present) and prints each finding without such evidence, and each evidence line that names
no input file or line 0 outside a dump; it exits 1 when it printed any.

    .venv/bin/python tests/evidence_audit.py [FOLDER ...]
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"


def input_sets(corpus: Path | None = None) -> Iterator[tuple[str, list[Path]]]:
    """(name, paths) of every bundled run: each sample, each fault run, each wild case; then each run of
    ``corpus`` when it is given and present."""
    for name in json.loads((ROOT / "samples" / "EXPECTED.json").read_text()):
        yield f"samples/{name}", [ROOT / "samples" / name]
    for p in sorted((DATA / "fault_runs").iterdir()):
        if p.is_dir():
            yield f"fault_runs/{p.name}", [p]
    yield from wild_sets()
    if corpus is not None:
        yield from corpus_sets(corpus)


def corpus_sets(corpus: Path) -> Iterator[tuple[str, list[Path]]]:
    """(name, paths) of each run of the real corpus; none when it is absent."""
    if (corpus / "EXPECTED.json").is_file():
        for name in json.loads((corpus / "EXPECTED.json").read_text()):
            yield f"corpus/{name}", [corpus / name]


def wild_sets() -> Iterator[tuple[str, list[Path]]]:
    sys.path.insert(0, str(HERE))
    from wild_cases import table  # the wild table, loaded as the wild tests load it

    for want in table.load_expected():
        yield f"wild/{want['case']}", table.case_inputs(want["case"])


def evidence_faults(analysis: Any) -> list[str]:
    """One line per finding of ``analysis`` without real evidence, and per evidence line that names no input
    file, or line 0 of a file that is no Flight Recorder dump. Empty when every finding is supported."""
    from ncclscope.model import FindingKind, Format

    formats = {str(f): fmt for f, fmt in analysis.run.files}
    out: list[str] = []
    for f in analysis.findings:
        if f.kind is FindingKind.INTERNAL:
            continue
        what = f"{f.kind.value}: {f.message[:90]}"
        good = 0
        for e in f.evidence:
            if e.file not in formats:
                out.append(f"{what}: evidence names no input file: {e.file!r}:{e.line}")
            elif e.line >= 1 or (e.line == 0 and formats[e.file] is Format.FLIGHT_RECORDER):
                good += 1
            else:
                out.append(f"{what}: evidence at line {e.line} of {e.file} ({formats[e.file].value})")
        if not good:
            out.append(f"{what}: no evidence from the input" if not f.evidence else f"{what}: no real evidence line")
    return out


def audit(sets: list[tuple[str, list[Path]]]) -> dict[str, list[str]]:
    """name -> its faults, for the sets with any (an input the analysis refuses has no findings)."""
    from ncclscope.analysis import analyze_paths
    from ncclscope.input_names import InputError

    out: dict[str, list[str]] = {}
    for name, paths in sets:
        try:
            faults = evidence_faults(analyze_paths(paths, cache=False))
        except InputError:
            continue
        if faults:
            out[name] = faults
    return out


def main(argv: list[str]) -> int:
    if argv:
        sets = [(a, [Path(a)]) for a in argv]
    else:
        sets = list(input_sets(ROOT.parent / "shared" / "corpus"))
    bad = audit(sets)
    for name, faults in bad.items():
        for line in faults:
            print(f"{name}: {line}")
    print(f"{len(sets)} inputs, {len(bad)} with findings lacking evidence, {sum(map(len, bad.values()))} lines",
          file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
