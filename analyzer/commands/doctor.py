"""`ncclscope doctor`: versions, GPUs and links, network, NCCL settings, launch variables."""
from __future__ import annotations

import json
import sys

import click


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--no-network", is_flag=True, help="Do not resolve MASTER_ADDR or probe MASTER_PORT.")
def command(as_json: bool, no_network: bool) -> None:
    """Check this machine and environment for torch.distributed + NCCL (exit 1 on a FAIL)."""
    from ..doctor import diagnose

    report = diagnose(probe_network=not no_network)
    if as_json:
        sys.stdout.write(json.dumps(report.to_json(), indent=1, default=str) + "\n")
    else:
        from ..consoles import full_line_console
        from ..doctor.render import render_report

        console = full_line_console(highlight=False)
        for part in render_report(report):
            console.print(part)
    if report.exit_code:
        # click (standalone_mode=False) turns Exit into a return value that cli.main drops; SystemExit
        # reaches the process exit status.
        raise SystemExit(report.exit_code)
