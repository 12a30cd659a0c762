"""`ncclscope doctor`: is this machine and environment ready for torch.distributed + NCCL?

``facts.gather`` looks at the machine (the only I/O); ``checks`` are pure functions over the
facts; ``report`` turns the result into JSON or rich renderables (printing is the CLI's job).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .checks import Check, SettingRow, Status, advice_from_checks, explain_settings, overall, run_checks
from .facts import Facts, gather

__all__ = ["Check", "DoctorReport", "Facts", "SettingRow", "Status", "diagnose", "report_from_facts"]


@dataclass(frozen=True, slots=True)
class DoctorReport:
    host: str
    checks: tuple[Check, ...]
    settings: tuple[SettingRow, ...]
    advice: tuple[str, ...]
    status: Status

    @property
    def exit_code(self) -> int:
        return 1 if self.status is Status.FAIL else 0

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "status": self.status.value, "checks": [c.to_json() for c in self.checks],
                "settings": [s.to_json() for s in self.settings], "advice": list(self.advice)}


def report_from_facts(f: Facts) -> DoctorReport:
    checks = run_checks(f)
    return DoctorReport(f.hostname, tuple(checks), tuple(explain_settings(f.env)), tuple(advice_from_checks(checks)),
                        overall(checks))


def diagnose(env: dict[str, str] | None = None, probe_network: bool = True) -> DoctorReport:
    return report_from_facts(gather(env, probe_network))
