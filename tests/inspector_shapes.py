"""Lines of NCCL's Inspector profiler plugin in the shape each format version writes them, for the tests and the
fuzz target. Keys and their order follow the plugin's JSON writer at each version (``inspector_json.cc``; up to
2.29 the writer is in ``inspector.cc``); the values (hosts, pids, communicator ids, times) are made up here.

- v4.0: NVIDIA/nccl 5067397c (master), ``plugins/profiler/inspector/inspector_json.cc``; the same shape in
  v2.28.9-1's ``ext-profiler/inspector/inspector.cc``.
- v4.1: the ``dump_stats`` marker before each communicator's records (per the version list of
  ``plugins/profiler/inspector/comm-patterns/README.md`` at 35d819ec); records still self-contained.
- v4.2: 35d819ec ``inspector_json.cc``: ``comm_name`` in the header, ``coll_algo`` / ``coll_proto``.
- v4.3, three branches: 8224472d (``coll_user_tag`` / ``p2p_user_tag`` as decimal strings); a proxy branch whose
  self-contained ``proxy_trace`` records carry ``proxy_records_dropped`` and ``origin_pid`` and their phases as
  timestamps alone; and the one ``inspector_json_reader.py`` reads (08618d4a), written ``v4.4`` at f3f1ee07:
  records after the marker hold only their payload, proxy records carry durations (``total_us``, ``wire_us``...),
  ``is_final`` and nested ``steps`` lists.
- an older 4.1 branch: proxy events inside a verbose ``coll_perf``'s ``events`` list (``KernelCh``, ``ProxyOp``
  with ``proxy_step_records``).
"""
from __future__ import annotations

import json
from typing import Any

HOST, PID, COMM = "trn-a07", 31337, "0x3f1c9be2a4d0e17"
T0 = 1_801_000_000_000_000  # µs since epoch


def dumps(obj: dict[str, Any]) -> str:
    """As the plugin's writer prints: no spaces, one object a line."""
    return json.dumps(obj, separators=(",", ":"))


def header(version: str, rank: int = 0, nranks: int = 2, comm: str = COMM, name: str = "DP Group 0") -> dict[str, Any]:
    h: dict[str, Any] = {"id": comm}
    if version >= "v4.2":
        h["comm_name"] = name
    h.update({"rank": rank, "n_ranks": nranks, "nnodes": 2})
    return h


def metadata(version: str, t: int, host: str = HOST, pid: int = PID) -> dict[str, Any]:
    return {"inspector_output_format_version": version, "git_rev": "a1b2c3d4", "rec_mechanism": "nccl_profiler_interface",
            "dump_timestamp_us": t, "hostname": host, "pid": pid}


def coll(version: str, sn: int, op: str = "AllReduce", size: int = 33554432, exec_us: int = 1450, t: int = T0,
         verbose: bool = True, channels: int = 2, pre: str = "coll", peer: int = 1) -> dict[str, Any]:
    """A ``coll_perf`` body (``pre="p2p"``: a ``p2p_perf`` body) of that version."""
    body: dict[str, Any] = {pre: op}
    if pre == "coll" and version >= "v4.2":
        body.update({"coll_algo": "RING", "coll_proto": "SIMPLE"})
    body[f"{pre}_sn"] = sn
    if version == "v4.3-tag":
        body[f"{pre}_user_tag"] = str(18446744073709551000 + sn)
    if pre == "p2p":
        body["p2p_peer"] = peer
    body.update({f"{pre}_msg_size_bytes": size, f"{pre}_exec_time_us": exec_us, f"{pre}_timing_source": "kernel_gpu",
                 f"{pre}_algobw_gbs": round(size / exec_us / 1e3, 6), f"{pre}_busbw_gbs": round(size / exec_us / 1e3, 6)})
    if verbose:
        body["event_trace_sn"] = {f"{pre}_start_sn": 1, f"{pre}_stop_sn": 2, "kernel_events": [
            {"channel_id": c, "kernel_start_sn": 3 + 3 * c, "kernel_stop_sn": 5 + 3 * c, "kernel_record_sn": 4 + 3 * c}
            for c in range(channels)]}
        body["event_trace_ts"] = {f"{pre}_start_ts": t, f"{pre}_stop_ts": t + 6, "kernel_events": [
            {"channel_id": c, "kernel_start_ts": t + 40 + c, "kernel_stop_ts": t + 40 + exec_us - c,
             "kernel_record_ts": t + 40 + exec_us - c} for c in range(channels)]}
    return body


def record(version: str, payload: str, body: dict[str, Any], t: int = T0, rank: int = 0, pid: int = PID,
           comm: str = COMM) -> str:
    """A self-contained line (4.0-4.2, and 4.3's user-tag and proxy branches)."""
    return dumps({"header": header(version, rank, comm=comm), "metadata": metadata(version.split("-")[0], t, pid=pid),
                  payload: body})


def marker(version: str, colls: int, p2ps: int = 0, proxies: int | None = None, dropped: int = 0, t: int = T0,
           rank: int = 0, pid: int = PID, comm: str = COMM) -> str:
    stats: dict[str, Any] = {"coll_records": colls, "coll_dropped_total": dropped, "coll_dropped_since_last_dump": dropped,
                             "p2p_records": p2ps, "p2p_dropped_total": 0, "p2p_dropped_since_last_dump": 0}
    if proxies is not None:
        stats.update({"proxy_records": proxies, "proxy_dropped_total": 0, "proxy_dropped_since_last_dump": 0,
                      "proxy_ops_dropped_total": 0, "proxy_ops_dropped_since_last_dump": 0,
                      "proxy_steps_overwritten_total": 0, "proxy_steps_overwritten_since_last_dump": 0,
                      "proxy_output_mode": "nested", "proxy_segment_step_capacity": 8,
                      "proxy_pxn_skipped_process_total": 0, "proxy_steps_enabled": 1})
    return dumps({"header": header(version, rank, comm=comm), "metadata": metadata(version, t, pid=pid),
                  "dump_stats": stats})


def payload_only(key: str, body: dict[str, Any]) -> str:
    """4.3's (08618d4a; ``v4.4`` at f3f1ee07) record after a marker: its payload alone."""
    return dumps({key: body})


def proxy_op_v44(sn: int, channel: int = 0, peer: int = 1, send: bool = True, nested: bool = True,
                 steps: int = 3, t: int = T0) -> dict[str, Any]:
    """f3f1ee07's final ``proxy_op`` record (nested mode: ``is_final``; with its completed steps)."""
    body: dict[str, Any] = {"record_type": "proxy_op", "record_sn": 10 + sn, "parent_type": "coll", "parent_sn": sn,
                            "proxy_op_sn": 100 + sn, "rank": 0, "channel_id": channel, "peer": peer,
                            "direction": "send" if send else "recv", "timing_source": "proxy_cpu"}
    if nested:
        body["is_final"] = True
    body.update({"n_steps": steps, "chunk_size_bytes": 524288, "n_steps_started": steps, "n_steps_completed": steps,
                 "n_steps_dropped": 0, "trans_size_bytes": steps * 524288, "total_us": 900, "op_bw_gbs": 1.747627,
                 "event_trace_ts": {"proxy_op_start_ts": t, "proxy_op_in_progress_ts": t + 20, "proxy_op_stop_ts": t + 900}})
    if nested:
        phases = ("gpu_produce_us", "peer_credit_us", "wire_us") if send else ("wire_us", "flush_us", "gpu_consume_us")
        body["steps"] = [{"proxy_step_sn": 1000 + i, "step": i, "trans_size_bytes": 524288, "total_us": 280,
                          phases[0]: 40, phases[1]: 200, phases[2]: 40,
                          "event_trace_ts": {"proxy_step_start_ts": t + 300 * i}} for i in range(steps)]
    return body


def proxy_step_v43(sn: int, step: int, send: bool = True, t: int = T0) -> dict[str, Any]:
    """The self-contained v4.3 proxy branch's ``proxy_step`` record: phases as timestamps only."""
    ts = {"proxy_step_start_ts": t}
    if send:
        ts.update({"send_gpu_wait_ts": t + 10, "send_peer_wait_ts": t + 30, "send_wait_ts": t + 130})
    else:
        ts.update({"recv_wait_ts": t + 10, "recv_flush_wait_ts": t + 110, "recv_gpu_wait_ts": t + 120})
    ts["proxy_step_stop_ts"] = t + 150
    sn_keys = {k.replace("_ts", "_sn"): i + 1 for i, k in enumerate(ts)}
    return {"record_type": "proxy_step", "record_sn": 50 + step, "proxy_records_dropped": 0, "parent_type": "coll",
            "parent_sn": sn, "proxy_op_sn": 7, "origin_pid": PID, "rank": 0, "channel_id": 1, "peer": 1,
            "direction": "send" if send else "recv", "proxy_step_sn": 300 + step, "step": step,
            "trans_size_bytes": 262144, "event_trace_sn": sn_keys, "event_trace_ts": ts}


def old_events_coll(sn: int, t: int = T0) -> dict[str, Any]:
    """The older 4.1 branch's verbose ``coll_perf``: channel and proxy events in one ``events`` list."""
    return {"coll": "AllReduce", "coll_sn": sn, "coll_msg_size_bytes": 4194304, "coll_exec_time_us": 700,
            "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": 5.99, "coll_busbw_gbs": 5.99,
            "event_trace_sn": {"coll_start_sn": 1, "coll_stop_sn": 2},
            "event_trace_ts": {"coll_start_ts": t, "coll_stop_ts": t + 5},
            "events": [
                {"event_type": "KernelCh", "channel_id": 0,
                 "event_trace_sn": {"kernel_start_sn": 3, "kernel_stop_sn": 9, "kernel_record_sn": 8},
                 "event_trace_ts": {"kernel_start_ts": t + 30, "kernel_stop_ts": t + 730, "kernel_record_ts": t + 730}},
                {"event_type": "ProxyOp", "proxy_id": 77, "proxy_rank": 0, "proxy_pid": PID, "proxy_start_ts": t + 35,
                 "proxy_stop_ts": t + 720, "proxy_duration_us": 685, "proxy_direction": "Send", "proxy_channel_id": 0,
                 "proxy_peer": 1, "proxy_n_steps": 2, "proxy_chunk_size": 131072, "proxy_trans_size": 262144,
                 "proxy_states": [{"state": "ProxyOpInProgress", "state_id": 19, "state_ts": t + 40}],
                 "proxy_step_count": 2, "proxy_step_records": [
                     {"event_type": "ProxyStep", "proxy_step": i, "proxy_start_ts": t + 40 + 300 * i,
                      "proxy_stop_ts": t + 300 + 300 * i, "proxy_duration_us": 260, "proxy_trans_size": 131072,
                      "proxy_states": []} for i in range(2)]}]}


PROM_LINES = [
    'nccl_bus_bandwidth_gbs{version="v5.1",slurm_job_id="48213",node="trn-a07",gpu="GPU3",comm_name="DP Group 0",'
    'n_nodes="2",nranks="16",collective="AllReduce",message_size="32-33MB",algo_proto="Ring_simple"} 41.2075',
    'nccl_collective_exec_time_microseconds{version="v5.1",slurm_job_id="48213",node="trn-a07",gpu="GPU3",'
    'comm_name="DP Group 0",n_nodes="2",nranks="16",collective="AllReduce",message_size="32-33MB",'
    'algo_proto="Ring_simple"} 1524.5',
    'nccl_p2p_bus_bandwidth_gbs{version="v5.1",slurm_job_id="48213",node="trn-a07",gpu="GPU3",comm_name="PP Group 1",'
    'n_nodes="2",nranks="2",p2p_operation="Send",message_size="8-9MB"} 18.06',
    'nccl_p2p_exec_time_microseconds{version="v5.1",slurm_job_id="48213",node="trn-a07",gpu="GPU3",'
    'comm_name="PP Group 1",n_nodes="2",nranks="2",p2p_operation="Send",message_size="8-9MB"} 466.1',
]


def sample_lines() -> list[str]:
    """One line of every shape above: seeds for the fuzz target."""
    out = [record(v, "coll_perf", coll(v, 3)) for v in ("v4.0", "v4.2", "v4.3-tag")]
    out += [record("v4.0", "p2p_perf", coll("v4.0", 2, "Send", pre="p2p")), marker("v4.1", 1), marker("v4.4", 1, 1, 1),
            payload_only("coll_perf", coll("v4.4", 4)), payload_only("p2p_perf", coll("v4.4", 2, "Recv", pre="p2p")),
            payload_only("proxy_trace", proxy_op_v44(4)), record("v4.3", "proxy_trace", proxy_step_v43(4, 0)),
            record("v4.1", "coll_perf", old_events_coll(5))]
    return out
