"""What an analysis gives: the run model, its findings and the decision made from them.

Below both the pipeline that makes it (``analysis.py``) and everything that shows it (``report.py``,
``export/``, the dashboard), so none of those has to import the pipeline for its type.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .model import Finding, Run

if TYPE_CHECKING:
    from .verdict import Decision


@dataclass
class Analysis:
    run: Run
    findings: list[Finding]
    decision: Decision
    # with analyze_paths(defer_store=True): writes the cache entry; call it once the report is out
    pending_store: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def finish(self) -> None:
        """Write what was deferred (the cache entry), once."""
        store, self.pending_store = self.pending_store, None
        if store is not None:
            store()
