"""The COLL line, defined once: every reader of it (the line parser's regex, the block regex, the
numpy reader, the compiled kernel) is built from these field limits and fragments.

    [TS] host:pid:tid [dev] NCCL INFO AllReduce: opCount 1a sendbuff 0x.. recvbuff 0x.. count 1024
    datatype 7 op 0 root 0 comm 0x55.. [nranks=8] stream 0x..

``[TS] `` (NCCL_DEBUG_TIMESTAMP_FORMAT) and ``[dev] `` are optional; what follows ``[nranks=N]``
(stream, tags, ...) is not read. The limits are the widest values NCCL prints (and what the
model's int64 / int16 columns hold); a line past any of them is no COLL line to any reader.
"""
from __future__ import annotations

import re

HOST_MAX = 255  # bytes of a host name
PID_DIGITS = TID_DIGITS = 10
DEV_DIGITS = 4
OP_MAX = 32  # letters of the op name (AllReduce, ReduceScatter, ...)
OPCOUNT_HEX = 16
BUF_MAX = 64  # bytes of sendbuff / recvbuff (no whitespace)
COUNT_DIGITS = 18
DATATYPE_DIGITS = 4
REDOP_DIGITS = 6
ROOT_DIGITS = 10
COMM_HEX = 16
NRANKS_DIGITS = 9
TS_FRACTION_DIGITS = 9  # the regexes' limit; the fast readers take up to 6 and leave the rest to them
TS_FAST_FRACTION_DIGITS = 6

# fixed words, in line order, as the fast readers compare them
NCCL_INFO = b"NCCL INFO "
OPCOUNT = b"opCount "
SENDBUFF = b"sendbuff "
RECVBUFF = b"recvbuff "
COUNT = b"count "

# what a host name cannot contain: a prefix's brackets, a colon, spaces, and NUL. A NUL (a hole a crash
# left in the file, or a planted byte) is dropped from every other line as it is decoded
# (``ingest.blocks``), so a COLL line that holds one goes to the line parser too: one host, not two
HOST_CHARS = r"[^\s:\[\]<>(),=\x00]"
TS = rf"\d{{4}}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d(?:\.\d{{1,{TS_FRACTION_DIGITS}}})?"
HEAD = (rf"({HOST_CHARS}{{1,{HOST_MAX}}}):(\d{{1,{PID_DIGITS}}}):\d{{1,{TID_DIGITS}}} "
        rf"(?:\[\d{{1,{DEV_DIGITS}}}\] )?NCCL INFO ")  # groups: host, pid
OP = rf"([A-Za-z]{{1,{OP_MAX}}}): "  # group: op
FRONT = (rf"opCount [0-9a-fA-F]{{1,{OPCOUNT_HEX}}} sendbuff \S{{1,{BUF_MAX}}} recvbuff \S{{1,{BUF_MAX}}} "
         rf"count (\d{{1,{COUNT_DIGITS}}}) ")  # group: count
MIDDLE = rf"datatype (\d{{1,{DATATYPE_DIGITS}}}) op \d{{1,{REDOP_DIGITS}}} root -?\d{{1,{ROOT_DIGITS}}} "  # datatype
COMM = rf"comm (0x[0-9a-fA-F]{{1,{COMM_HEX}}}|\(nil\)) \[nranks=\d{{1,{NRANKS_DIGITS}}}\]"  # group: comm


def _b(*parts: str) -> re.Pattern[bytes]:
    return re.compile("".join(parts).encode())


# the fast readers' parts of few distinct values, each matched once per distinct value
HEAD_RE = _b(HEAD)
OP_RE = _b(OP)
PREFIX_RE = _b(HEAD, OP)  # groups: host, pid, op
MIDDLE_RE = _b(MIDDLE)
COMM_RE = _b(COMM)

# the block regex: every line of a block, a COLL line's fields or (last group) the whole other line
# groups: ts, host, pid, op, count, datatype, comm, other
LINE_RE = _b(rf"\n(?:(?:\[({TS})\] ?)?", HEAD, OP, FRONT, MIDDLE, COMM, r"[^\n]*|([^\n]*))")

# the line parser's regex over the message after NCCL's prefix, with every field named
MESSAGE_RE = re.compile(
    rf"^(?P<op>[A-Za-z]{{1,{OP_MAX}}}): opCount (?P<opc>[0-9a-fA-F]{{1,{OPCOUNT_HEX}}}) sendbuff \S{{1,{BUF_MAX}}} "
    rf"recvbuff \S{{1,{BUF_MAX}}} count (?P<count>\d{{1,{COUNT_DIGITS}}}) datatype (?P<dt>\d{{1,{DATATYPE_DIGITS}}}) "
    rf"op (?P<redop>\d{{1,{REDOP_DIGITS}}}) root (?P<root>-?\d{{1,{ROOT_DIGITS}}}) "
    rf"comm (?P<comm>0x[0-9a-fA-F]{{1,{COMM_HEX}}}|\(nil\)) \[nranks=(?P<nranks>\d{{1,{NRANKS_DIGITS}}})\]"
)
# NCCL 2.3's COLL line: no op name, the size in bytes after the count, root only for rooted ops; the
# line parser reads it (op "Unknown"), the fast readers leave it to that
MESSAGE_23_RE = re.compile(
    rf"^opCount (?P<opc>[0-9a-fA-F]{{1,{OPCOUNT_HEX}}}) sendbuff \S{{1,{BUF_MAX}}} recvbuff \S{{1,{BUF_MAX}}} "
    rf"count (?P<count>\d{{1,{COUNT_DIGITS}}}) size \d{{1,{COUNT_DIGITS + 2}}} datatype (?P<dt>\d{{1,{DATATYPE_DIGITS}}}) "
    rf"op (?P<redop>\d{{1,{REDOP_DIGITS}}}) (?:root (?P<root>-?\d{{1,{ROOT_DIGITS}}}) )?"
    rf"comm (?P<comm>0x[0-9a-fA-F]{{1,{COMM_HEX}}}|\(nil\)) \[nranks=(?P<nranks>\d{{1,{NRANKS_DIGITS}}})\]"
)
