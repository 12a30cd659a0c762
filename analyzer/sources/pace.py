"""A program's pace, run by run, as a console shows it: how long its steps take, how many it has to do, and on how
many GPUs, so that two runs of the same job in one input (one GPU and four, one node and two) can be held side by side
(``rules.scaling``).

A console is cut into runs at each shell prompt that starts a command (``(env) user@host:~$ torchrun ...``); each file
is a run of its own. Per run:

- its pace: tqdm's bar of its largest total (``115/115 [00:21<00:00,  5.41it/s]``, ``20/2256 [02:53<5:22:30,
  8.65s/it]``: the main loop, not an evaluation's shorter bar), ms-swift's dict (``'train_speed(iter/s)': 0.2``
  with ``'global_step/max_steps': '290/4491'``), or fairseq's words per second (``| epoch 001 | ... | wps 38105 |``,
  ``wps=2865`` mid-epoch);
- its GPUs: the command's own (``--nproc_per_node=4`` x ``--nnodes=2``, ``--num_processes 2``, one
  ``CUDA_VISIBLE_DEVICES`` id before a plain ``python``), Hugging Face Trainer's batch sizes (``Total train batch size
  (w. parallel, distributed & accumulation) = 64`` over ``Instantaneous batch size per device = 16`` x ``Gradient
  Accumulation steps = 1``), fairseq's ``training on 8 GPUs``, or the process count ``accelerate config`` was given
  for the ``accelerate launch`` after it; and whether a launcher of several processes started it.

Bounded: at most ``MAX_RUNS`` runs a file, ``MAX_BARS`` bar totals and ``MAX_RATES`` rate prints a run (the last kept).
"""
from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .pasted import PROMPT, TOOLS
from .records import RunPaces

MAX_RUNS = 32
MAX_BARS = 16
MAX_RATES = 256
MAX_GPUS = 1 << 20

# tqdm: "115/115 [00:21<00:00,  5.41it/s]", "20/2256 [02:53<5:22:30,  8.65s/it]" (its rate the average so far)
BAR_PACE_RE = re.compile(r"(?<![\d/])(?P<n>\d{1,9})/(?P<t>\d{1,9}) \[(?:\d{1,4}:)?\d{1,2}:\d\d<(?:(?:\d{1,4}:)?\d{1,2}:\d\d"
                         r"|\?),\s{0,3}(?P<r>\d{1,7}(?:\.\d{1,9})?)(?P<u>it/s|s/it)")
# ms-swift's (and others') logging dict: "'train_speed(iter/s)': 0.200217, ... 'global_step/max_steps': '290/4491'"
ITER_SPEED_RE = re.compile(r"'train_speed\(iter/s\)': (?P<r>\d{1,7}(?:\.\d{1,9})?)")
MAX_STEPS_RE = re.compile(r"'global_step/max_steps': '(?P<n>\d{1,9})/(?P<t>\d{1,9})'")
# fairseq: "| epoch 001 | loss 8.117 | ... | wps 38105 | ..." and mid-epoch "| epoch 001:  40 / 12187 loss=..., wps=2865,"
WPS_RE = re.compile(r"\bepoch \d{1,6}\b.{0,400}?\bwps[ =](?P<r>\d{1,12}(?:\.\d{1,6})?)\b")
FAIRSEQ_GPUS_RE = re.compile(r"\btraining on (?P<n>\d{1,7}) (?:GPUs|devices)\b")
HF_TOTAL_RE = re.compile(r"Total train batch size \(w\. parallel, distributed & accumulation\) = (?P<n>\d[\d,]{0,12})")
HF_DEVICE_RE = re.compile(r"Instantaneous batch size per device = (?P<n>\d[\d,]{0,9})")
HF_ACCUM_RE = re.compile(r"Gradient Accumulation steps = (?P<n>\d{1,7})\b")
ACCEL_ASK_RE = re.compile(r"How many processes in total will you use\? \[\d{1,7}\]: ?(?P<n>\d{1,7})\s*$")
# a prompt, then the command it runs
PROMPT_LINE_RE = re.compile(r"^\s{0,4}" + PROMPT + r"\s{1,3}(?P<cmd>\S.{0,1990})$")
LAUNCHERS_RE = re.compile(r"(?:^|[\s/])(?:torchrun|deepspeed|mpirun|mpiexec|srun|horovodrun|composer)(?:\s|$)"
                          r"|torch\.distributed\.(?:launch|run)\b|\baccelerate\s{1,3}launch\b|--multiprocessing-distributed")
NPROC_RE = re.compile(r"--nproc[_-]per[_-]node[= ](?P<n>\d{1,5})\b")
NNODES_RE = re.compile(r"--nnodes[= ](?P<n>\d{1,5})(?![\d:])")
NUM_PROCS_RE = re.compile(r"--num[_-]processes[= ](?P<n>\d{1,7})\b")
ONE_DEVICE_RE = re.compile(r"(?:^|\s)CUDA_VISIBLE_DEVICES=(?P<d>\d{1,3})\s{1,3}(?:\S{0,200}/)?python3?(?:\.\d{1,2})?\s")
ACCEL_LAUNCH = "accelerate launch"
WORDS = ("it/s", "s/it", "iter/s", "wps", "training on ", "batch size", "Accumulation", "processes in total")
WORDS_RE = re.compile("|".join(re.escape(w) for w in WORDS))  # the gate: one scan of the line


@dataclass
class _Run:
    line: int
    command: str | None = None
    gpus: int | None = None
    how: str | None = None  # where the GPU count came from
    multi: bool = False  # a launcher of several processes started it
    bars: dict[int, tuple[int, str, float]] = field(default_factory=dict)  # total -> (line, text, seconds a step)
    rates: deque[tuple[int, str, float]] = field(default_factory=lambda: deque(maxlen=MAX_RATES))
    per_device: int | None = None
    total_batch: int | None = None

    def summary(self) -> dict[str, Any] | None:
        """The run as ``RunPaces`` keeps it (plain data), or None when it printed no pace."""
        if not self.bars and not self.rates:
            return None
        out: dict[str, Any] = {"line": self.line, "command": self.command, "gpus": self.gpus, "how": self.how,
                               "multi": self.multi}
        if self.bars:
            total = max(self.bars)  # the main loop: an evaluation's bar is shorter
            line, text, spi = self.bars[total]
            out["steps"] = {"total": total, "seconds": spi, "line": line, "text": text}
        if self.rates:
            vals = sorted(v for _, _, v in self.rates)
            line, text, _ = self.rates[-1]
            out["wps"] = {"median": vals[len(vals) // 2], "prints": len(vals), "line": line, "text": text}
        return out


def _int(s: str) -> int:
    return int(s.replace(",", ""))


class PaceReader:
    """One file's runs and their pace (``read`` each line's text and its body after any tool prefix; ``flush`` at the
    end gives the ``RunPaces`` record, or nothing when no run printed a pace)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.runs: list[_Run] = [_Run(0)]
        self.asked: int | None = None  # the process count `accelerate config` was given
        self.last: tuple[int, str] = (0, "")

    def read(self, lineno: int, text: str, body: str) -> None:
        if (text.find("$", 0, 300) >= 0 or text.find("#", 0, 300) >= 0) and (m := PROMPT_LINE_RE.match(text)) is not None:
            self._command(lineno, m.group("cmd"))
            return
        if WORDS_RE.search(body) is None:
            return
        run = self.runs[-1]
        if ("it/s" in body or "s/it" in body) and (b := BAR_PACE_RE.search(body)) is not None:
            self._bar(run, lineno, text, int(b.group("t")), float(b.group("r")), b.group("u"))
        if ("iter/s" in body and (s := ITER_SPEED_RE.search(body)) is not None and (t := MAX_STEPS_RE.search(body))
                and float(s.group("r")) > 0):
            self._bar(run, lineno, text, int(t.group("t")), 1.0 / float(s.group("r")), "s/it")
        if "wps" in body and (w := WPS_RE.search(body)) is not None and float(w.group("r")) > 0:
            run.rates.append((lineno, text[:300], float(w.group("r"))))
            self.last = (lineno, text[:300])
        self._gpus(run, body)

    def _bar(self, run: _Run, lineno: int, text: str, total: int, rate: float, unit: str) -> None:
        if total < 2 or rate <= 0:
            return
        if total in run.bars or len(run.bars) < MAX_BARS:
            run.bars[total] = (lineno, text[:300], rate if unit == "s/it" else 1.0 / rate)
            self.last = (lineno, text[:300])

    def _gpus(self, run: _Run, body: str) -> None:
        if "training on " in body and (m := FAIRSEQ_GPUS_RE.search(body)) is not None:
            self._set(run, int(m.group("n")), "fairseq's 'training on N GPUs'")
        elif "batch size" in body:
            if (m := HF_DEVICE_RE.search(body)) is not None:
                run.per_device = _int(m.group("n"))
            elif (m := HF_TOTAL_RE.search(body)) is not None:
                run.total_batch = _int(m.group("n"))
        elif "Accumulation" in body and (m := HF_ACCUM_RE.search(body)) is not None:
            per, total, acc = run.per_device, run.total_batch, int(m.group("n"))
            if per and total and acc and total % (per * acc) == 0:
                self._set(run, total // (per * acc), "the Trainer's total batch over its batch per device")
        elif "processes in total" in body and (m := ACCEL_ASK_RE.search(body)) is not None:
            self.asked = int(m.group("n"))

    @staticmethod
    def _set(run: _Run, n: int, how: str) -> None:
        if 0 < n <= MAX_GPUS and run.gpus is None:
            run.gpus, run.how = n, how

    def _command(self, lineno: int, cmd: str) -> None:
        word = cmd.split(None, 1)[0] if cmd.split() else ""
        if word in TOOLS or len(self.runs) >= MAX_RUNS:
            return  # a look at the job (nvidia-smi, py-spy), not a run of it
        run = _Run(lineno, cmd[:300], multi=LAUNCHERS_RE.search(cmd) is not None)
        if (n := NPROC_RE.search(cmd)) is not None:
            nodes = NNODES_RE.search(cmd)
            self._set(run, int(n.group("n")) * (int(nodes.group("n")) if nodes else 1), "the launcher's arguments")
        elif (p := NUM_PROCS_RE.search(cmd)) is not None:
            self._set(run, int(p.group("n")), "the launcher's arguments")
        elif ACCEL_LAUNCH in cmd and self.asked is not None:
            self._set(run, self.asked, "the process count given to `accelerate config` before it")
        elif not run.multi and (d := ONE_DEVICE_RE.search(cmd + " ")) is not None:
            self._set(run, 1, f"CUDA_VISIBLE_DEVICES={d.group('d')} before a plain python")
        self.runs.append(run)

    def flush(self) -> Iterator[RunPaces]:
        runs = [s for r in self.runs if (s := r.summary()) is not None]
        if runs:
            yield RunPaces(self.file, self.last[0], self.last[1], None, None, None, None, tuple(runs))
