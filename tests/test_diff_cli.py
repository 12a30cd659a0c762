"""``ncclscope diff RUN_A RUN_B``: one line per difference with where A and B show it, full lines in a pipe;
``--json`` one object on stdout that holds to ``schema/diff.schema.json``."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT, SAMPLES

DIFF_SCHEMA = ROOT / "analyzer" / "schema" / "diff.schema.json"


def _diff(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # a pipe, as a user's: no width set
    return subprocess.run([sys.executable, "-m", "ncclscope", "diff", *args, "--no-cache"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_json_holds_to_the_schema_and_orders_the_straggler_first():
    import jsonschema

    schema = json.loads(DIFF_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    p = _diff(str(SAMPLES / "gpu_healthy"), str(SAMPLES / "gpu_straggler"), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(out)) == []
    first = out["differences"][0]
    assert (first["aspect"], first["tier"], first["direction"]) == ("straggler", "measured", "slower")
    assert first["a"] == {"value": None, "evidence": None} and first["b"]["evidence"]["file"].startswith("fr_end_rank")
    assert (out["a"]["verdict"], out["b"]["verdict"]) == ("healthy", "degraded")
    for broken in ({**out, "differences": [{**first, "tier": "first"}]}, {k: v for k, v in out.items() if k != "a"}):
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(broken))


def test_text_is_one_line_a_difference_with_both_locations(tmp_path):
    from ncclscope.synth import generate_run

    generate_run(tmp_path / "a", nranks=8, steps=4, algo="RING", busbw_gbs=180.0, seed=1)
    generate_run(tmp_path / "b", nranks=8, steps=4, algo="TREE", busbw_gbs=40.0, seed=1)
    p = _diff(str(tmp_path / "a"), str(tmp_path / "b"))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(f"A: {tmp_path / 'a'}  HEALTHY")
    numbered = [x for x in lines if x[:4].strip().rstrip(".").isdigit()]
    assert numbered[0].startswith(" 1. measured  allreduce of 16-32 MiB: busbw ")
    assert numbered[1].startswith(" 2. algorithm NCCL's algorithm/protocol for allreduce of 16-32 MiB: RING/SIMPLE -> "
                                  "TREE/SIMPLE")
    for x in numbered:  # never wrapped in a pipe: the locations close each line
        assert x.endswith(")") and "(A " in x and "; B " in x, x
    assert "(A node000." in numbered[1] and ".nccl.log:" in numbered[1]


def test_a_missing_run_is_a_usage_error():
    p = _diff(str(SAMPLES / "gpu_healthy"), str(SAMPLES / "no_such_run"))
    assert p.returncode == 2 and "does not exist" in p.stderr
