"""Where a user's own look at a stuck job begins in a pasted log: the text after the job's last line that is no line of
the job's.

A user who pastes a stuck run's console often adds what they ran to look at it, after the job's last line:

- a shell command line of an inspection tool (``$ nvidia-smi``, ``$ py-spy dump --pid 4711``, ``# gdb -p 4711``,
  ``user@host:~$ ps aux | grep train``);
- ``nvidia-smi``'s table (its banner ``| NVIDIA-SMI 555.42.02   Driver Version: ...``) or the CSV header of its query
  (``index, utilization.gpu [%], memory.used [MiB]``);
- a ``py-spy dump``'s head (``Process 4711: python train.py``).

None of that is the application going on: the job's output ends at the line before it. A command line that starts
anything else (``$ torchrun ...``, ``$ bash run.sh``, ``$ cat train.log``) is the job's own start or its log, not a
look at it, and ends a paste before it (``$ nvidia-smi topo -m`` and its matrix, then ``$ torchrun ...`` and the job's
lines); a file that begins with such a paste is all paste, and is read as it is.
"""
from __future__ import annotations

import re

# inspection tools a user runs on a stuck job (their command line, behind a shell prompt)
TOOLS = ("nvidia-smi", "nvtop", "gpustat", "py-spy", "gdb", "pstack", "gstack", "eu-stack", "ps", "top", "htop",
         "dmesg", "journalctl", "strace", "ltrace", "lsof", "ss", "netstat", "free", "df", "ibstat", "ibv_devinfo",
         "ibstatus", "dcgmi", "nvidia-bug-report.sh", "pgrep")
# a shell prompt: "$", "#", "user@host:~/dir$", "(venv) $", "root@node:/#", RHEL's "[user@host dir]$"
PROMPT = (r"(?:\([\w.-]{1,40}\)\s)?(?:[\w.-]{1,64}@[\w.-]{1,64}(?::[^\s$#]{0,200})?"
          r"|\[[\w.-]{1,64}@[\w.-]{1,64}(?: [^\]\s]{1,200})?\])?[$#]")
# a prompt then one of those tools, maybe behind sudo
PROMPT_CMD_RE = re.compile(
    r"^\s{0,4}" + PROMPT + r"\s{1,3}(?:sudo\s{1,3})?"
    r"(?:watch\s{1,3}(?:-n\s?[\d.]{1,5}\s{1,3})?)?(?P<tool>[\w.-]{1,40})(?:\s|$)")
NVIDIA_SMI_BANNER_RE = re.compile(r"^\|\s{1,4}NVIDIA-SMI \d{2,4}\.\d{1,3}(?:\.\d{1,3})?\s.{0,80}Driver Version:")
# the header of ``nvidia-smi --query-gpu=... --format=csv``: comma-separated field names, one of them with its unit
QUERY_CSV_RE = re.compile(r"^(?:index|name|pci\.bus_id|uuid|timestamp|utilization\.gpu|memory\.\w{1,12}|clocks\.[\w.]{1,30}"
                          r"|power\.draw|temperature\.gpu)(?: \[[^\]]{1,12}\])?,\s.{0,400}\[(?:%|MiB|MHz|W|C)\]")
PYSPY_PROCESS_RE = re.compile(r"^Process \d{1,10}: \S")


def starts_paste(text: str) -> bool:
    """The line begins the user's own look at the job (an inspection tool's command line, nvidia-smi's table or query
    header, a py-spy dump's head): what follows is no output of the job."""
    if not text or len(text) > 2000:
        return False
    if "$" in text[:300] or "#" in text[:300]:
        m = PROMPT_CMD_RE.match(text)
        if m is not None and m.group("tool") in TOOLS:
            return True
    if text.startswith("|") and "NVIDIA-SMI" in text:
        return NVIDIA_SMI_BANNER_RE.match(text) is not None
    if text.startswith("Process "):
        return PYSPY_PROCESS_RE.match(text) is not None
    return "[" in text and QUERY_CSV_RE.match(text) is not None


def ends_paste(text: str) -> bool:
    """The line is a command line that starts something else than a look at the job (``$ torchrun ...``, ``$ bash
    run.sh``): what follows is a job's output again (a paste of ``nvidia-smi topo -m`` before the launch command)."""
    if not text or len(text) > 2000 or not ("$" in text[:300] or "#" in text[:300]):
        return False
    m = PROMPT_CMD_RE.match(text)
    return m is not None and m.group("tool") not in TOOLS

