"""Doctor checks as pure functions over crafted facts, plus the doctor command on this machine."""
from __future__ import annotations

import json
import shutil
import socket

import pytest

from ncclscope.cli import main
from ncclscope.doctor import report_from_facts
from ncclscope.doctor.checks import (
    Check,
    Status,
    check_launch_env,
    check_master,
    check_network,
    check_settings,
    check_version_compat,
    explain_settings,
    nccl_socket_candidates,
    parse_if_spec,
    run_checks,
)
from ncclscope.doctor.facts import Facts, IbPort, Iface, LibNccl, TorchInfo, probe_master

IFACES = [Iface("lo", 1, "unknown", None, ("127.0.0.1",)), Iface("eth0", 2, "up", 25000, ("10.0.0.5",)),
          Iface("docker0", 3, "down", None, ("172.17.0.1",)), Iface("ib0", 4, "up", 200000, ("192.168.1.5",)),
          Iface("ifb0", 5, "down", None, ())]


def settings(env):
    return {r.name: r for r in explain_settings(env)}


def test_settings_explained_typos_and_container_vars():
    rows = settings({"NCCL_DEBGU": "INFO", "NCCL_VERSION": "2.28.3-1", "NCCL_BUFFSIZE": "4194304", "PATH": "/bin",
                     "TORCH_NCCL_TRACE_BUFFER_SIZE": "2000", "NCCL_IB_HCA": "mlx5"})
    assert "PATH" not in rows
    assert rows["NCCL_DEBGU"].status is Status.WARN and "NCCL_DEBUG" in rows["NCCL_DEBGU"].note
    assert rows["NCCL_VERSION"].status is Status.OK and "not read by NCCL" in rows["NCCL_VERSION"].meaning
    assert rows["NCCL_BUFFSIZE"].status is Status.OK and rows["NCCL_BUFFSIZE"].default == "4194304"
    assert rows["TORCH_NCCL_TRACE_BUFFER_SIZE"].meaning


@pytest.mark.parametrize("env,name,fragment", [
    ({"NCCL_P2P_DISABLE": "1"}, "NCCL_P2P_DISABLE", "P2P"),
    ({"NCCL_SHM_DISABLE": "1"}, "NCCL_SHM_DISABLE", "shared-memory"),
    ({"NCCL_IB_DISABLE": "1"}, "NCCL_IB_DISABLE", "InfiniBand"),
    ({"NCCL_ALGO": "Tree"}, "NCCL_ALGO", "forced"),
    ({"NCCL_PROTO": "LL"}, "NCCL_PROTO", "forced"),
    ({"NCCL_NSOCKS_PERTHREAD": "16", "NCCL_SOCKET_NTHREADS": "8"}, "NCCL_NSOCKS_PERTHREAD", "128"),
    ({"NCCL_DEBUG": "TRACE"}, "NCCL_DEBUG", "TRACE"),
    ({"TORCH_NCCL_BLOCKING_WAIT": "1"}, "TORCH_NCCL_BLOCKING_WAIT", "blocks"),
    ({"TORCH_NCCL_ASYNC_ERROR_HANDLING": "0"}, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "hung"),
    ({"NCCL_ASYNC_ERROR_HANDLING": "1"}, "NCCL_ASYNC_ERROR_HANDLING", "old name"),
])
def test_risky_settings_warn(env, name, fragment):
    row = settings(env)[name]
    assert row.status is Status.WARN and fragment in row.note


@pytest.mark.parametrize("env", [{"NCCL_P2P_DISABLE": "0"}, {"NCCL_DEBUG": "WARN"},
                                 {"NCCL_NSOCKS_PERTHREAD": "4", "NCCL_SOCKET_NTHREADS": "2"},
                                 {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"}])
def test_harmless_settings_ok(env):
    assert all(r.status is Status.OK for r in explain_settings(env))
    assert check_settings(Facts(env=env))[0].status is Status.OK


def test_if_spec_syntax():
    assert parse_if_spec("eth").matches("eth0") and not parse_if_spec("eth").matches("ib0")
    assert parse_if_spec("=eth0").matches("eth0") and not parse_if_spec("=eth0").matches("eth01")
    assert not parse_if_spec("^docker,lo").matches("lo") and parse_if_spec("^docker,lo").matches("eth0")
    assert not parse_if_spec("^=eth0").matches("eth0") and parse_if_spec("^=eth0").matches("eth01")
    hca = parse_if_spec("mlx5_0:1,mlx5_1")
    assert hca.matches("mlx5_0", 1) and not hca.matches("mlx5_0", 2) and hca.matches("mlx5_1", 2)


def test_socket_candidates_follow_nccl_order():
    assert nccl_socket_candidates(IFACES, None) == ["ib0"]
    no_ib = [i for i in IFACES if i.name != "ib0"]
    assert nccl_socket_candidates(no_ib, None) == ["eth0"]  # ifb0 has no address, docker0/lo come later
    assert nccl_socket_candidates(IFACES, "^ib,docker") == ["lo", "eth0"]
    assert nccl_socket_candidates(IFACES, "=eth") == []


def test_network_checks():
    ok = check_network(Facts(env={"NCCL_SOCKET_IFNAME": "eth0"}, ifaces=IFACES))
    assert ok[0].status is Status.OK and "eth0" in ok[0].message
    bad = check_network(Facts(env={"NCCL_SOCKET_IFNAME": "eht0"}, ifaces=IFACES))
    assert bad[0].status is Status.FAIL and "no socket interface" in bad[0].message
    lo_multi = check_network(Facts(env={"NCCL_SOCKET_IFNAME": "lo", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"},
                                   ifaces=IFACES))
    assert lo_multi[0].status is Status.FAIL
    ports = [IbPort("mlx5_0", 1, "4: ACTIVE", "400 Gb/sec (4X NDR)", "InfiniBand"),
             IbPort("mlx5_1", 1, "1: DOWN", "10 Gb/sec (4X SDR)", "InfiniBand")]
    ib = {c.id: c for c in check_network(Facts(env={"NCCL_IB_HCA": "=mlx5_0"}, ifaces=IFACES, ib_ports=ports))}
    assert ib["net.ib"].status is Status.OK
    ib = {c.id: c for c in check_network(Facts(env={"NCCL_IB_HCA": "mlx4"}, ifaces=IFACES, ib_ports=ports))}
    assert ib["net.ib"].status is Status.FAIL
    ib = {c.id: c for c in check_network(Facts(env={"NCCL_IB_DISABLE": "1"}, ifaces=IFACES, ib_ports=ports))}
    assert ib["net.ib"].status is Status.WARN
    none = {c.id: c for c in check_network(Facts(env={}, ifaces=IFACES))}
    assert none["net.ib"].status is Status.SKIPPED


@pytest.mark.parametrize("env,status", [
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
      "MASTER_PORT": "29500"}, Status.OK),
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, Status.FAIL),
    ({"RANK": "0", "WORLD_SIZE": "4", "LOCAL_RANK": "3", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "h",
      "MASTER_PORT": "1"}, Status.FAIL),
    ({"RANK": "0", "WORLD_SIZE": "3", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "h",
      "MASTER_PORT": "1"}, Status.FAIL),
    ({"RANK": "0", "WORLD_SIZE": "2"}, Status.FAIL),  # no MASTER_ADDR
    ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"}, Status.FAIL),
    ({"MASTER_ADDR": "h", "MASTER_PORT": "70000"}, Status.FAIL),
    ({}, Status.SKIPPED),
])
def test_launch_env(env, status):
    assert check_launch_env(Facts(env=env))[0].status is status


def test_master_port_probe_real_socket():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        resolved, local, probe = probe_master("127.0.0.1", port, ())
        assert local and not probe.ok and "in use" in probe.detail
        f = Facts(env={"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}, master_resolved=resolved,
                  master_is_local=local, master_port=probe)
        assert check_master(f)[0].status is Status.WARN
        f.env["RANK"] = "1"
        assert check_master(f)[0].status is Status.OK  # rank 0's store holds it
    _, _, probe = probe_master("127.0.0.1", port, ())
    assert probe.ok
    bad = Facts(env={"MASTER_ADDR": "no-such-host.invalid"}, master_resolve_error="Name or service not known")
    assert check_master(bad)[0].status is Status.FAIL


def _torch(cuda="12.4", nccl="2.21.5"):
    return TorchInfo("2.5.1", cuda, nccl, True, 2, ("NVIDIA H100",), True, True)


@pytest.mark.parametrize("built,driver_cuda,status", [("12.4", "12.4", Status.OK), ("12.4", "12.8", Status.OK),
                                                      ("12.8", "12.4", Status.WARN), ("13.0", "12.8", Status.FAIL)])
def test_cuda_runtime_vs_driver(built, driver_cuda, status):
    f = Facts(env={}, torch=_torch(cuda=built), nvidia_smi="/usr/bin/nvidia-smi",
              smi_banner=f"| NVIDIA-SMI 550.54  Driver Version: 550.54.15  CUDA Version: {driver_cuda} |")
    assert {c.id: c for c in check_version_compat(f)}["compat.cuda_driver"].status is status


@pytest.mark.parametrize("nccl,env,status", [("2.19.3", {}, Status.WARN), ("2.20.5", {}, Status.WARN),
                                             ("2.19.3", {"NCCL_CUMEM_ENABLE": "0"}, Status.OK),
                                             ("2.21.5", {}, Status.OK)])
def test_nccl_cumem_known_issue(nccl, env, status):
    f = Facts(env=env, torch=_torch(nccl=nccl))
    assert {c.id: c for c in check_version_compat(f)}["compat.nccl_cumem"].status is status


def test_ld_library_path_nccl_overrides_torch():
    from ncclscope.doctor.checks import check_nccl_library

    f = Facts(env={}, torch=_torch(nccl="2.21.5"),
              libnccl=[LibNccl("/venv/nvidia/nccl/lib/libnccl.so.2", "2.21.5", "wheel nvidia-nccl-cu12"),
                       LibNccl("/opt/nccl/lib/libnccl.so.2.18.1", "2.18.1", "LD_LIBRARY_PATH")])
    c = check_nccl_library(f)[0]
    assert c.status is Status.WARN and "2.18.1" in c.message


def test_no_gpu_machine_reports_skipped_not_crash():
    f = Facts(env={}, torch=TorchInfo("2.13.0+cpu", None, None, False, 0, (), False, True))
    report = report_from_facts(f)
    by = {c.id: c for c in report.checks}
    assert by["gpus"].status is Status.SKIPPED and by["gpus"].message == "no nvidia-smi"
    assert by["torch.cuda"].status is Status.SKIPPED and "without CUDA" in by["torch.cuda"].message
    assert by["topology"].status is Status.SKIPPED
    assert report.exit_code == 0
    json.dumps(report.to_json())


def test_crashing_check_becomes_fail():
    def boom(f):
        raise RuntimeError("kaput")

    def fine(f):
        return [Check("x", "x", Status.OK, "ok")]

    out = run_checks(Facts(env={}), (boom, fine))
    assert [c.status for c in out] == [Status.FAIL, Status.OK] and "kaput" in out[0].message


LAUNCH = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def test_doctor_command_json_on_this_machine(monkeypatch, capsys):
    for k in LAUNCH:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NCCL_ALGO", "Tree")
    rc = main(["doctor", "--json"])
    out = json.loads(capsys.readouterr().out)
    by = {c["id"]: c for c in out["checks"]}
    assert by["env.settings"]["status"] == "WARN"
    assert {"torch", "gpus", "topology", "net.socket", "launch.env"} <= set(by)
    if shutil.which("nvidia-smi") is None:
        assert by["gpus"]["status"] == "SKIPPED" and by["gpus"]["message"] == "no nvidia-smi"
    assert rc == 0 and out["status"] != "FAIL"
    assert any("NCCL_ALGO" in a for a in out["advice"])
    # a FAIL gives exit status 1 (same test: torch is imported once per worker)
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(SystemExit) as e:
        main(["doctor", "--no-network"])
    assert e.value.code == 1
    text = capsys.readouterr().out
    assert "FAIL" in text and "RANK=5 is not below WORLD_SIZE=2" in text
