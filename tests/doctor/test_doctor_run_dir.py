"""``ncclscope doctor RUN_DIR``: do the ranks of a run folder agree? The same rule as the ``diag`` detector.

The folders are written here: NCCL's lines in the forms of its INFO format strings (``NCCL version %s``, ``%s set by
environment to %s``, the Init line), ``NCCL DIAG`` lines as in ``tests/sources/test_nccl_diag.py`` (NVIDIA/nccl
v2.31.2-1, commit 8898068: ``src/ras/diagnostics_gpu.cc``, ``diagnostics_env.cc``), ``env`` listings, and
``nvidia-smi`` / ``nvidia-smi -L`` output in the shape the driver prints (own hosts, pids, values).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from ncclscope.analysis import analyze_paths
from ncclscope.doctor.checks import Status
from ncclscope.doctor.run_dir import SmiOutput, check_run_dir, observations, run_dir_checks, smi_observations
from ncclscope.model import Evidence
from ncclscope.rules.consistency import Aspect, FoundBy, Observation
from ncclscope.sources import records as R

COMM = "0x2c7d19a4f0b3e651"


def smi_banner(driver: str, cuda: str) -> str:
    return "\n".join([
        "Sun Dec  6 10:12:01 2026",
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {driver}              Driver Version: {driver}      CUDA Version: {cuda}     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "|=========================================+========================+======================|",
        "|   0  NVIDIA H200                    On  |   00000000:19:00.0 Off |                    0 |",
        "+-----------------------------------------+------------------------+----------------------+", ""])


def smi_list(n: int, model: str = "NVIDIA H200") -> str:
    return "".join(f"GPU {i}: {model} (UUID: GPU-7f3e{i:02d}aa-0c1d-4e2f-9a8b-5c6d7e8f9a0b)\n" for i in range(n))


def rank_log(host: str, pid: int, rank: int, version: str, settings: dict[str, str], driver: int = 13000) -> str:
    head = f"{host}:{pid}:{pid}"
    lines = [f"{head} [{rank % 8}] NCCL INFO NCCL version {version}+cuda13.0",
             f"{head} [{rank % 8}] NCCL INFO cudaDriverVersion {driver}"]
    lines += [f"{head} [{rank % 8}] NCCL INFO {k} set by environment to {v}" for k, v in settings.items()]
    lines.append(f"{head} [{rank % 8}] NCCL INFO comm 0x5600a1b2c3d0 rank {rank} nranks 2 cudaDev {rank % 8} nvmlDev "
                 f"{rank % 8} busId 19000 commId {COMM} - Init COMPLETE")
    return "\n".join(lines) + "\n"


def write_run(root: Path, *, version_b: str = "2.31.2", hca_b: str | None = "mlx5_0", gpus_b: int = 8,
              driver_b: str = "580.82.07", cuda_b: int = 13000, diag: list[str] | None = None) -> Path:
    a, b = root / "node-a", root / "node-b"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (a / "rank0.log").write_text(rank_log("node-a", 7101, 0, "2.31.2", {"NCCL_IB_HCA": "mlx5_0"}) + "".join(
        line + "\n" for line in diag or []))
    settings_b = {"NCCL_IB_HCA": hca_b} if hca_b else {}
    (b / "rank1.log").write_text(rank_log("node-b", 8202, 1, version_b, settings_b, cuda_b))
    (a / "env.txt").write_text("RANK=0\nNCCL_DEBUG=WARN\nNCCL_IB_HCA=mlx5_0\nNCCL_SOCKET_IFNAME=eth0\nPATH=/usr/bin\n")
    (b / "env.txt").write_text("RANK=1\nNCCL_DEBUG=WARN\n" + (f"NCCL_IB_HCA={hca_b}\n" if hca_b else "")
                               + "NCCL_SOCKET_IFNAME=eth0\nPATH=/usr/bin\n")
    (a / "nvidia-smi.txt").write_text(smi_banner("580.82.07", "13.0") + smi_list(8))
    (b / "nvidia-smi.txt").write_text(smi_banner(driver_b, "13.0") + smi_list(gpus_b))
    return root


def by_id(report) -> dict[str, list]:
    out: dict[str, list] = {}
    for c in report.checks:
        out.setdefault(c.id, []).append(c)
    return out


def test_a_folder_whose_ranks_agree_is_ok(tmp_path: Path) -> None:
    r = check_run_dir(write_run(tmp_path))
    checks = by_id(r)
    assert r.status is Status.OK and r.exit_code == 0
    assert {"run.nccl_version", "run.settings", "run.nvidia_driver", "run.cuda_driver", "run.gpu_model",
            "run.gpu_count"} <= set(checks)
    assert all(c.status is Status.OK for c in r.checks)
    assert checks["run.nccl_version"][0].message.startswith("2.31.2 on all 2 (rank 0, rank 1)")


def test_what_differs_is_named_with_its_lines(tmp_path: Path) -> None:
    r = check_run_dir(write_run(tmp_path, version_b="2.30.7", hca_b=None, gpus_b=4, driver_b="570.172.08"))
    checks = by_id(r)
    assert r.status is Status.WARN and r.exit_code == 0
    v = checks["run.nccl_version"][0]
    assert v.status is Status.WARN and "'2.31.2' on rank 0; '2.30.7' on rank 1" in v.message
    assert [e["file"] for e in v.data["evidence"]] == ["node-a/rank0.log", "node-b/rank1.log"]
    assert [c.message for c in checks["run.settings"]] == ["NCCL_IB_HCA differs: 'mlx5_0' on rank 0; (unset) on rank 1"]
    drv = checks["run.nvidia_driver"][0]
    assert drv.status is Status.WARN and "'580.82.07' on node-a/nvidia-smi" in drv.message
    assert drv.data["evidence"][0]["text"].startswith("| NVIDIA-SMI 580.82.07")
    assert "'8' on node-a/nvidia-smi; '4' on node-b/nvidia-smi" in checks["run.gpu_count"][0].message
    assert checks["run.cuda_driver"][0].status is Status.OK and checks["run.gpu_model"][0].status is Status.OK


def test_the_cuda_driver_each_process_saw_is_compared(tmp_path: Path) -> None:
    checks = by_id(check_run_dir(write_run(tmp_path, cuda_b=12090)))
    msg = checks["run.cuda_driver"][0].message
    assert checks["run.cuda_driver"][0].status is Status.WARN
    assert msg == ("the CUDA driver version differs: '13.0' on rank 0, node-a/nvidia-smi, node-b/nvidia-smi; "
                   "'12.9' on rank 1")


def test_an_environment_listing_that_lacks_a_setting_shows_it_unset(tmp_path: Path) -> None:
    root = write_run(tmp_path)
    (root / "node-b" / "env.txt").write_text("RANK=1\nNCCL_DEBUG=INFO\nNCCL_IB_HCA=mlx5_0\nPATH=/usr/bin\n")
    checks = by_id(check_run_dir(root))
    msgs = sorted(c.message for c in checks["run.settings"])
    assert msgs == ["NCCL_DEBUG differs: 'WARN' on rank 0; 'INFO' on rank 1",
                    "NCCL_SOCKET_IFNAME differs: 'eth0' on rank 0; (unset) on rank 1"]


def test_nccls_own_lines_make_up_no_unset_setting(tmp_path: Path) -> None:
    """NCCL prints only the variables it read: a rank whose lines name none is not taken to lack them."""
    root = write_run(tmp_path, hca_b=None)
    for env in root.glob("node-*/env.txt"):
        env.unlink()
    assert [c.status for c in by_id(check_run_dir(root))["run.settings"]] == [Status.OK]


DIAG = ["node-a:7101 NCCL DIAG === RAS Diagnostics ===",
        (f"node-a:7101 NCCL DIAG [INFO] ECC: uncorrected volatile errors on rank(s) {{1}} (worst=5) across 2 ranks in "
        f"comm {COMM}"),
        f"node-a:7101 NCCL DIAG [INFO] NCCL environment: mismatch across 2 ranks in comm {COMM} for NCCL_NET_GDR_LEVEL",
        "node-a:7101 NCCL DIAG [INFO] NCCL environment: NCCL_NET_GDR_LEVEL=PHB on rank(s) {0}",
        "node-a:7101 NCCL DIAG [INFO] NCCL environment: NCCL_NET_GDR_LEVEL=(unset) on rank(s) {1}",
        f"node-a:7101 NCCL DIAG [INFO] NCCL environment: 1 NCCL_* env var(s) differ across ranks in comm {COMM}",
        "node-a:7101 NCCL DIAG RAS diagnostics completed in 2.2 ms across 2 ranks"]


def test_nccls_own_diagnostics_are_judged_by_the_detectors_rule(tmp_path: Path) -> None:
    root = write_run(tmp_path, diag=DIAG)
    r = check_run_dir(root)
    diag = by_id(r)["run.nccl_diag"]
    assert r.status is Status.FAIL and r.exit_code == 1  # uncorrected ECC errors
    assert sorted(c.status for c in diag) == sorted([Status.FAIL, Status.WARN])
    ecc = next(c for c in diag if c.status is Status.FAIL)
    assert ecc.data["evidence"][0]["line"] == 6 and ecc.data["found_by"] == FoundBy.NCCL.value
    assert any("nvidia-smi -q -d ECC" in a for a in r.advice)
    # one rule in one place: what the doctor says of NCCL's lines is what analyze's findings say
    found = analyze_paths([root], cache=False).findings
    assert sorted(c.message for c in diag) == sorted(f.message for f in found if f.data.get("source") == FoundBy.NCCL.value)


def test_the_command_prints_json_and_exits_1_on_a_fail(tmp_path: Path) -> None:
    root = write_run(tmp_path, diag=DIAG)
    p = subprocess.run([sys.executable, "-m", "ncclscope", "doctor", "--json", str(root)], capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 1, p.stderr
    out = json.loads(p.stdout)
    assert out["run_dir"] == str(root) and out["status"] == "FAIL"
    assert {c["id"] for c in out["checks"]} >= {"run.nccl_diag", "run.nccl_version", "run.settings"}


def test_nothing_to_compare_is_said(tmp_path: Path) -> None:
    (tmp_path / "train.log").write_text("[rank0]:torch.distributed.DistBackendError: NCCL error\n")
    checks = check_run_dir(tmp_path).checks
    assert [(c.id, c.status) for c in checks] == [("run.consistency", Status.SKIPPED)]


def test_observations_of_records_and_nvidia_smi() -> None:
    recs = [R.NcclVersion("a.log", 1, "v", "h", 11, 11, None, "2.31.2", "13.0"),
            R.NcclEnv("a.log", 2, "e", "h", 11, 11, None, "NCCL_ALGO", "Ring"),
            R.NcclEnv("a.log", 3, "e", "h", 11, 11, None, "CUDA_VISIBLE_DEVICES", "0"),  # not an NCCL setting
            R.EnvSetting("env1.txt", 1, "NCCL_ALGO=Tree", "NCCL_ALGO", "Tree")]
    obs = observations(recs, {("h", 11): 3})
    assert [(o.aspect, o.who, o.key, o.value, o.listing) for o in obs] == [
        (Aspect.NCCL_VERSION, "rank 3", "", "2.31.2", False), (Aspect.NCCL_SETTING, "rank 3", "NCCL_ALGO", "Ring", False),
        (Aspect.NCCL_SETTING, "env1.txt", "NCCL_ALGO", "Tree", True)]
    smi = smi_observations(SmiOutput("n1/smi", "n1/smi.txt", smi_banner("580.82.07", "13.0") + smi_list(2)))
    assert {(o.aspect, o.value) for o in smi} == {(Aspect.NVIDIA_DRIVER, "580.82.07"), (Aspect.CUDA_DRIVER, "13.0"),
                                                 (Aspect.GPU_COUNT, "2"), (Aspect.GPU_MODEL, "NVIDIA H200")}
    assert next(o for o in smi if o.aspect is Aspect.NVIDIA_DRIVER).evidence.line == 3


@pytest.mark.parametrize(("values", "status"), [(["2.31.2", "2.31.2"], Status.OK), (["2.31.2", "2.29.3"], Status.WARN)])
def test_one_check_an_aspect(values: list[str], status: Status) -> None:
    obs = [Observation(Aspect.NCCL_VERSION, f"rank {i}", v, Evidence("x.log", i + 1, v), rank=i)
           for i, v in enumerate(values)]
    checks = run_dir_checks(obs, [])
    assert [(c.id, c.status) for c in checks] == [("run.nccl_version", status)]
