"""The CLI loads a subcommand's module only when it is named: ``analyze`` starts without run, serve, watch,
bench, diff, doctor, export or perf, and ``--help`` still lists every command."""
from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner
from ncclscope.cli import cli

COMMANDS = {"analyze", "bench", "diff", "doctor", "export", "perf", "run", "serve", "watch"}


def test_importing_the_cli_loads_no_subcommand_module() -> None:
    code = "import sys, ncclscope.cli; print(sorted(m for m in sys.modules if m.startswith('ncclscope.commands.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True).stdout
    assert out.strip() == "[]"


def test_help_lists_every_command_and_each_one_resolves() -> None:
    res = CliRunner().invoke(cli, ["--help"])
    assert res.exit_code == 0
    listed = {line.split()[0] for line in res.output.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == COMMANDS
    for name in sorted(COMMANDS):
        sub = CliRunner().invoke(cli, [name, "--help"])
        assert sub.exit_code == 0 and f"Usage: cli {name}" in sub.output, (name, sub.output[-500:])


def test_an_unknown_command_is_a_usage_error() -> None:
    res = CliRunner().invoke(cli, ["analyse-this"])
    assert res.exit_code == 2 and "No such command" in res.output
