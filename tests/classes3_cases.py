"""The second round of fault-class cases (tests/data/classes3/<case>/): logs in the shapes public threads show, one
class of misreading each (crash vs config_error both ways, the MPI runtime's and UCX's own words, evidence outside
NCCL's lines: the kernel's log, stack dumps, the program's prints, one process driving two GPUs; hints that name the
setting), checked against tests/data/classes3/EXPECTED.jsonl like the first round (``class_cases.check``: the wild
set's fields, and the ``transports``, ``certainty`` and ``headline`` words a line may add)."""
from __future__ import annotations

from class_cases import CaseSet
from wild_cases import DATA

CLASSES3 = DATA / "classes3"
_SET = CaseSet(CLASSES3)
CASES, analysis, check, folder = _SET.cases, _SET.analysis, _SET.check, _SET.folder
