"""`ncclscope run --inspector PLUGIN.so`: the environment that loads NCCL's Inspector plugin and points its
output at the run folder; the user's own settings win; a missing plugin is a usage error."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ncclscope.cli import main
from ncclscope.launch import RunOptions, inspector_env, job_env, merge_env, run_job


def test_inspector_env_loads_the_plugin_into_the_run_folder(tmp_path):
    env = inspector_env(Path("/opt/insp/libnccl-profiler-inspector.so"), tmp_path)
    assert env["NCCL_PROFILER_PLUGIN"] == "/opt/insp/libnccl-profiler-inspector.so"
    assert env["NCCL_INSPECTOR_ENABLE"] == "1" and env["NCCL_INSPECTOR_DUMP_DIR"] == str(tmp_path)
    assert int(env["NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS"]) > 0  # -1 writes nothing after 2.30
    assert env["NCCL_INSPECTOR_DUMP_VERBOSE"] == "1" and env["NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES"] == "0"
    assert env["NCCL_INSPECTOR_ENABLE_PROXY"] == "1" and env["NCCL_INSPECTOR_DUMP_PROXY_STEPS"] == "0"


def test_job_env_adds_the_plugin_and_its_log_subsystem_only_when_asked(tmp_path):
    plain = job_env(RunOptions(command=("true",), run_dir=tmp_path), None)
    assert "NCCL_PROFILER_PLUGIN" not in plain and "PROFILE" not in plain["NCCL_DEBUG_SUBSYS"]
    so = tmp_path / "p.so"
    env = job_env(RunOptions(command=("true",), run_dir=tmp_path, coll=True, inspector=so), None)
    assert env["NCCL_PROFILER_PLUGIN"] == str(so) and env["NCCL_DEBUG_SUBSYS"] == "INIT,ENV,NET,GRAPH,COLL,PROFILE"


def test_users_own_inspector_settings_win(tmp_path):
    wanted = job_env(RunOptions(command=("true",), run_dir=tmp_path, inspector=tmp_path / "p.so"), None)
    env, applied, kept = merge_env({"NCCL_INSPECTOR_DUMP_PROXY_STEPS": "1", "NCCL_INSPECTOR_DUMP_DIR": "/x"}, wanted)
    assert env["NCCL_INSPECTOR_DUMP_PROXY_STEPS"] == "1" and env["NCCL_INSPECTOR_DUMP_DIR"] == "/x"
    assert kept == {"NCCL_INSPECTOR_DUMP_PROXY_STEPS": "1", "NCCL_INSPECTOR_DUMP_DIR": "/x"}
    assert applied["NCCL_INSPECTOR_ENABLE"] == "1"


def test_the_job_sees_the_settings_and_they_are_recorded(tmp_path):
    so = tmp_path / "libnccl-profiler-inspector.so"
    so.write_bytes(b"\x7fELF")
    run_dir = tmp_path / "run"
    probe = "import json, os; print(json.dumps({k: v for k, v in os.environ.items() if 'INSPECTOR' in k or 'PROFILER' in k}))"
    out = tmp_path / "out.txt"
    with out.open("wb") as f:
        code = run_job(RunOptions(command=(sys.executable, "-c", probe), run_dir=run_dir, hook=False, inspector=so,
                                  quiet=True), note=lambda _t: None, stdout=f, stderr=f,
                       base_env={"PATH": "/usr/bin:/bin"})
    assert code == 0
    seen = json.loads(out.read_text().splitlines()[0])
    assert seen["NCCL_PROFILER_PLUGIN"] == str(so) and seen["NCCL_INSPECTOR_DUMP_DIR"] == str(run_dir.resolve())
    record = json.loads((run_dir / "ncclscope-env.json").read_text())
    assert record["set_by_ncclscope"]["NCCL_PROFILER_PLUGIN"] == str(so)


def test_a_missing_plugin_is_a_usage_error(tmp_path, capsys):
    code = main(["run", "--run-dir", str(tmp_path / "r"), "--inspector", str(tmp_path / "none.so"), "--", "true"])
    assert code == 2 and "none.so" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
