"""`ncclscope doctor [RUN_DIR]`: versions, GPUs and links, network, NCCL settings, launch variables; with RUN_DIR,
whether the ranks of a run folder agree (settings, NCCL versions, GPUs, drivers, NCCL's own diagnostics)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command("doctor")
@click.argument("run_dir", metavar="[RUN_DIR]", required=False,
                type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("--no-network", is_flag=True, help="Do not resolve MASTER_ADDR or probe MASTER_PORT.")
def command(run_dir: Path | None, as_json: bool, no_network: bool) -> None:
    """Check this machine and environment for torch.distributed + NCCL (exit 1 on a FAIL).

    With RUN_DIR: check instead that the ranks of that run folder agree with each other: NCCL release and NCCL_*
    settings per rank (NCCL's lines, environment listings), drivers and GPUs per node (saved nvidia-smi output),
    and what NCCL's own diagnostics (2.31+ NCCL DIAG lines) found.
    """
    if run_dir is not None:
        from ..doctor.run_dir import check_run_dir

        report = check_run_dir(run_dir)
    else:
        from ..doctor import diagnose

        report = diagnose(probe_network=not no_network)
    if as_json:
        out = report.to_json()
        if run_dir is not None:
            out["run_dir"] = str(run_dir)
        sys.stdout.write(json.dumps(out, indent=1, default=str) + "\n")
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
