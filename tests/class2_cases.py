"""The second round's fault-class cases (tests/data/classes2/<case>/): logs written in the shapes public threads show,
one class of misreading each (failures read as a hang, slow runs read healthy, who is missing, two runs in one
console, a framework's echo over an init hang), checked like tests/data/classes/ (``class_cases``): the wild set's
fields plus the communicators' ``transports``, the decision's ``certainty`` and words its ``headline`` holds."""
from __future__ import annotations

from class_cases import CaseSet
from wild_cases import DATA

CLASSES2 = DATA / "classes2"
_SET = CaseSet(CLASSES2)
CASES, analysis, check, folder = _SET.cases, _SET.analysis, _SET.check, _SET.folder
