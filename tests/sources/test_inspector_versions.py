"""NCCL's Inspector plugin, each JSON format version and its Prometheus file, on fixtures written in the shapes
of the plugin's own writer (``tests/inspector_shapes.py`` names the commit of each: v4.0 at 5067397c and
v2.28.9-1, v4.2 at 35d819ec, v4.3 at 8224472d and 08618d4a / f3f1ee07, the proxy and events branches).
The values are made up; the keys, their nesting and order are the plugin's."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import inspector_shapes as S
from ncclscope.ingest import Format, parse_file, sniff
from ncclscope.sources import records as R
from ncclscope.sources.inspector import InspectorReader, parse_inspector_prom


def read(lines: list[str], name: str = "trn-a07-pid31337.log") -> tuple[list[R.Rec], InspectorReader]:
    reader = InspectorReader(name)
    return list(reader.read(enumerate(lines, 1))), reader


def test_v40_verbose_collective_has_its_kernel_time_and_host_timestamps():
    """5067397c inspector_json.cc: header id/rank/n_ranks/nnodes, metadata, coll_perf with event_trace_ts."""
    recs, reader = read([S.record("v4.0", "coll_perf", S.coll("v4.0", 7, exec_us=1450, t=S.T0, channels=2))])
    (op,) = recs
    assert isinstance(op, R.InspectorOp) and not reader.skipped
    assert (op.host, op.pid, op.comm, op.rank, op.nranks, op.nnodes) == (S.HOST, S.PID, S.COMM, 0, 2, 2)
    assert (op.op, op.nccl_op, op.sn, op.nbytes, op.exec_us, op.version) == ("allreduce", "AllReduce", 7, 33554432, 1450, "v4.0")
    assert op.timing is R.InspectorTiming.KERNEL_GPU and not op.p2p and op.peer is None
    assert (op.start_us, op.kernel_start_us, op.kernel_stop_us, op.channels) == (S.T0, S.T0 + 40, S.T0 + 40 + 1450, 2)
    assert op.comm_name is None and op.algo is None and op.user_tag is None
    assert op.line == 1 and op.text.startswith('{"header":')


def test_v40_without_verbose_has_no_timestamps_and_p2p_names_its_peer():
    recs, _ = read([S.record("v4.0", "coll_perf", S.coll("v4.0", 1, verbose=False)),
                    S.record("v4.0", "p2p_perf", S.coll("v4.0", 4, "Send", size=8388608, pre="p2p", peer=1))])
    coll, send = recs
    assert coll.start_us is None and coll.kernel_start_us is None and coll.channels == 0
    assert send.p2p and send.op == "send" and send.peer == 1 and send.sn == 4 and send.start_us == S.T0


def test_v41_marker_is_read_and_records_stay_self_contained():
    """The dump_stats marker (4.1+) counts what follows and the ring's drops; 4.1's records keep their header."""
    recs, reader = read([S.marker("v4.1", 2, dropped=3), S.record("v4.1", "coll_perf", S.coll("v4.1", 1)),
                         S.record("v4.1", "coll_perf", S.coll("v4.1", 2))])
    stats, a, b = recs
    assert isinstance(stats, R.InspectorDumpStats)
    assert (stats.coll_records, stats.coll_dropped_total, stats.coll_dropped_new, stats.proxy_records) == (2, 3, 3, None)
    assert [a.sn, b.sn] == [1, 2] and not reader.skipped


def test_v42_comm_name_algo_and_protocol():
    """35d819ec: header comm_name, coll_algo and coll_proto before coll_sn."""
    (op,), _ = read([S.record("v4.2", "coll_perf", S.coll("v4.2", 9))])
    assert (op.comm_name, op.algo, op.proto, op.version) == ("DP Group 0", "RING", "SIMPLE", "v4.2")


def test_v43_user_tag_stays_the_exact_decimal_string():
    """8224472d writes the 64-bit tag as a string: a float would lose its last digits."""
    (op,), _ = read([S.record("v4.3-tag", "coll_perf", S.coll("v4.3-tag", 2))])
    assert op.user_tag == "18446744073709551002"


def test_v43_records_after_a_marker_inherit_its_header_as_many_as_it_counts():
    """08618d4a's inspector_json_reader.py / f3f1ee07: payload-only lines take the marker's communicator and
    process, as many of each kind as the marker counted; one beyond the count, or before any marker, is skipped."""
    lines = [S.payload_only("coll_perf", S.coll("v4.4", 1)),  # no marker yet: nobody's
             S.marker("v4.4", 2, 1, 1, rank=1, pid=4711),
             S.payload_only("coll_perf", S.coll("v4.4", 2)), S.payload_only("coll_perf", S.coll("v4.4", 3)),
             S.payload_only("p2p_perf", S.coll("v4.4", 1, "Recv", pre="p2p", peer=0)),
             S.payload_only("proxy_trace", S.proxy_op_v44(3)),
             S.payload_only("coll_perf", S.coll("v4.4", 4))]  # the marker said 2 collectives
    recs, reader = read(lines)
    ops = [r for r in recs if isinstance(r, R.InspectorOp)]
    assert [(o.op, o.sn, o.rank, o.pid, o.version) for o in ops] == [
        ("allreduce", 2, 1, 4711, "v4.4"), ("allreduce", 3, 1, 4711, "v4.4"), ("recv", 1, 1, 4711, "v4.4")]
    assert [o.line for o in ops] == [3, 4, 5]
    assert reader.skipped == 2 and reader.first_skipped[0] == 1
    assert sum(isinstance(r, R.InspectorProxy) for r in recs) == 1


def test_a_new_marker_resets_the_context():
    lines = [S.marker("v4.4", 1, comm="0xaaa"), S.payload_only("coll_perf", S.coll("v4.4", 1)),
             S.marker("v4.4", 1, comm="0xbbb"), S.payload_only("coll_perf", S.coll("v4.4", 1))]
    recs, _ = read(lines)
    assert [r.comm for r in recs if isinstance(r, R.InspectorOp)] == ["0xaaa", "0xbbb"]


def test_v44_nested_proxy_op_sums_its_steps_waits():
    """f3f1ee07: a final proxy_op with total_us, op_bw_gbs and its completed steps (send phases)."""
    recs, _ = read([S.marker("v4.4", 0, 0, 1), S.payload_only("proxy_trace", S.proxy_op_v44(5, channel=2, steps=3))])
    proxy = recs[1]
    assert isinstance(proxy, R.InspectorProxy) and proxy.kind is R.ProxyRecordKind.OP
    assert (proxy.channel, proxy.peer, proxy.send, proxy.parent_p2p, proxy.parent_sn) == (2, 1, True, False, 5)
    assert (proxy.n_steps, proxy.steps_completed, proxy.trans_bytes, proxy.total_us) == (3, 3, 3 * 524288, 900)
    assert proxy.waits == {"gpu_produce_us": 120, "peer_credit_us": 600, "wire_us": 120} and proxy.steps == 3
    assert proxy.bw_gbs == pytest.approx(1.747627) and proxy.proxy_rank == 0


@pytest.mark.parametrize("send,waits", [(True, {"gpu_produce_us": 20, "peer_credit_us": 100, "wire_us": 20}),
                                        (False, {"wire_us": 100, "flush_us": 10, "gpu_consume_us": 30})])
def test_v43_self_contained_proxy_step_waits_from_timestamps(send, waits):
    """The v4.3 proxy branch: a proxy_step with its phases' timestamps alone, in a self-contained record."""
    (step,), _ = read([S.record("v4.3", "proxy_trace", S.proxy_step_v43(4, 0, send=send))])
    assert step.kind is R.ProxyRecordKind.STEP and step.send is send and step.steps == 1
    assert step.waits == waits and (step.start_us, step.stop_us) == (S.T0, S.T0 + 150)


def test_older_events_branch_reads_kernel_channels_and_proxy_ops():
    """The older 4.1 branch: KernelCh and ProxyOp entries in a verbose coll_perf's events list."""
    recs, _ = read([S.record("v4.1", "coll_perf", S.old_events_coll(5))])
    op, proxy = recs
    assert (op.kernel_start_us, op.kernel_stop_us, op.channels) == (S.T0 + 30, S.T0 + 730, 1)
    assert proxy.kind is R.ProxyRecordKind.OP and (proxy.parent_sn, proxy.parent_p2p) == (5, False)
    assert (proxy.channel, proxy.peer, proxy.send, proxy.total_us, proxy.steps) == (0, 1, True, 685, 2)
    assert proxy.waits == {"step_us": 520}


def test_prometheus_lines_become_metrics():
    """inspector_prom.cc (5067397c): name{labels} value, labels in the writer's order."""
    recs = list(parse_inspector_prom(enumerate(["# a comment", *S.PROM_LINES, "nccl_x{bad} nope"], 1), "m.prom"))
    assert [r.name for r in recs] == ["nccl_bus_bandwidth_gbs", "nccl_collective_exec_time_microseconds",
                                      "nccl_p2p_bus_bandwidth_gbs", "nccl_p2p_exec_time_microseconds"]
    assert recs[1].value == 1524.5 and recs[1].labels["collective"] == "AllReduce"
    assert recs[1].labels["message_size"] == "32-33MB" and recs[2].labels["p2p_operation"] == "Send"
    assert recs[0].line == 2


@pytest.mark.parametrize("first,fmt", [
    (S.record("v4.0", "coll_perf", S.coll("v4.0", 1)), Format.INSPECTOR),
    (S.marker("v4.4", 1), Format.INSPECTOR),
    (S.payload_only("coll_perf", S.coll("v4.4", 1)), Format.INSPECTOR),
    (S.PROM_LINES[0], Format.INSPECTOR_PROM),
    ('{"type":"start","rank":0}', Format.JSONL),
    ('{"header":{"id":"x"},"other":1}', Format.JSONL),
])
def test_sniffed_by_content(first, fmt):
    assert sniff((first + "\n" + first + "\n").encode(), "whatever.log") is fmt


def test_damaged_lines_are_counted_never_raised(tmp_path):
    good = S.record("v4.0", "coll_perf", S.coll("v4.0", 1))
    bad = [good[:57], '{"header":{"id":"0x1","rank":5,"n_ranks":2},"metadata":{"pid":1},"coll_perf":{}}',
           ('{"header":{"id":"0x1","rank":0,"n_ranks":2},"metadata":{"pid":1},"coll_perf":{"coll":"AllReduce",'
           '"coll_sn":1e400,"coll_msg_size_bytes":-1,"coll_exec_time_us":"x"}}'), "[1,2]", "{" * 5000, "\x00\ufffd"]
    f = tmp_path / "host-pid1.log"
    f.write_text("\n".join([good, *bad, good]) + "\n")
    p = parse_file(f, f.name)
    assert p.fmt is Format.INSPECTOR and len(p.records) == 2
    assert p.problem and "6 lines" in p.problem and "line 2" in p.problem


def test_huge_numbers_and_lists_are_bounded():
    body = S.coll("v4.0", 1)
    body["event_trace_ts"]["kernel_events"] = [{"channel_id": i, "kernel_start_ts": S.T0 + i} for i in range(10000)]
    body["coll_msg_size_bytes"] = 2 ** 80
    recs, reader = read([S.record("v4.0", "coll_perf", body)])
    assert recs == [] and reader.skipped == 1  # a size no job has: the record is not taken
    body["coll_msg_size_bytes"] = 8
    (op,), _ = read([S.record("v4.0", "coll_perf", body)])
    assert op.channels == 4096  # MAX_LIST entries read, not 10,000
