"""DeepSpeed's comms-logger summary (``comms_logger`` in the DeepSpeed config, ``deepspeed.comm.log_summary()``): a table
headed ``Comm. Op  Message Size  Count  Total Latency(ms)  Avg Latency(ms)  tput_avg (Gbps)  busbw_avg (Gbps)``, an
operation's name on a line of its own (``all_gather_into_tensor``), then a row per message size::

    all_gather_into_tensor
                        56.0 MB             1830                186021.40           101.65              4.62       4.33

Each row is a ``CommSummaryRow`` (its size in bytes, DeepSpeed's units being powers of 1024). Any other line ends the
table. The bus bandwidth is DeepSpeed's own: the time it measures includes each call's wait for its slowest member."""
from __future__ import annotations

import re

from .records import CommSummaryRow

HEADER_RE = re.compile(r"\bComm\. Op\s+Message Size\s+Count\b.*\bbusbw_avg \(Gbps\)")
# an operation's name (deepspeed.comm's: all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast, barrier...)
OP_RE = re.compile(r"^(?:all_reduce|all_gather|reduce_scatter|all_to_all|broadcast|barrier|reduce|gather|scatter|send|recv"
                   r"|isend|irecv|inference_all_reduce)[a-z_]{0,40}$")
ROW_RE = re.compile(r"^(?P<size>\d{1,12}(?:\.\d{1,6})?) ?(?P<unit>B|KB|MB|GB|TB)\s+(?P<count>\d{1,15})\s+"
                    r"(?P<total>\d{1,15}(?:\.\d{1,6})?)\s+(?P<avg>\d{1,15}(?:\.\d{1,6})?)\s+(?P<tput>\d{1,12}(?:\.\d{1,6})?)\s+"
                    r"(?P<busbw>\d{1,12}(?:\.\d{1,6})?)$")
UNITS = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
MAX_BYTES = 1 << 50  # a size past this is no message's


class CommSummaryReader:
    """Feeds on a log's lines (``read``): a ``CommSummaryRow`` for each row of a summary table."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.on = False  # inside a table
        self.op: str | None = None
        self.prefix = ""  # what the header's line had before the table (a host's tag no peeler took: "trn-a: ")

    def read(self, lineno: int, text: str, body: str, rank: int | None) -> tuple[bool, CommSummaryRow | None]:
        """(the line was the table's, its row if it is one)."""
        if not self.on:
            if "Comm. Op" in body and (h := HEADER_RE.search(body)) is not None:
                self.on, self.op, self.prefix = True, None, body[:h.start()]
                return True, None
            return False, None
        if self.prefix and body.startswith(self.prefix):
            body = body[len(self.prefix):]
        stripped = body.strip()
        if OP_RE.match(stripped):
            self.op = stripped
            return True, None
        m = ROW_RE.match(stripped)
        if m is None or self.op is None:
            self.on = False
            return False, None
        size = int(float(m.group("size")) * UNITS[m.group("unit")])
        if size > MAX_BYTES:
            return True, None
        return True, CommSummaryRow(self.file, lineno, text, rank, None, None, None, self.op, size,
                                    int(m.group("count")), float(m.group("busbw")))
