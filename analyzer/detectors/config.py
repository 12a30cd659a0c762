"""Configuration: settings that broke the job, and settings worth a note.

Inputs: ``X set by environment to Y`` lines, env listings, the wrapper's record of the user's
environment, NCCL WARN lines that name a setting (``NCCL_ALGO was set to Tree``), the "Last error"
PyTorch quotes after an NCCL error (the knowledge base names the host, container, driver or fabric
problem behind it: ``Duplicate GPU detected``, ``Failed to bind NVLink SHARP``, ``Unable to load NCCL
library``), a SIGBUS that is the first failure of a job running NCCL (a container's /dev/shm too small), ranks in
Docker containers on a bridge network while the world spans machines (``rules.container_net``: container ids as host
names in torchrun's failure summary, NCCL's system error), and the NCCL version each process printed. (A WARN the knowledge base calls a setup problem is ``nccl_warn``'s finding.)
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from ..model import (Evidence, EventKind, Finding, FindingData, FindingKind, LogEvent, Run, Setting, Severity,
                     Verdict)
from ..nccl.gids import routable, shown_routable
from ..nccl.risky_settings import FORCED, NOTES
from ..rules.cause import CauseVerdict, Failure, root_cause
from ..rules.config import config_mistake
from ..rules.container_net import bridged_across_machines
from ..rules.environment import TEST_FAILURE_HOST_RE, environment_mismatch, plugin_of, quiet_hosts
from ..rules.exits import FailureKind
from ..rules.facts import failures_of_run, process_of, progress_after, stall_time
from ..rules.shm_full import shm_full
from ..rules.init_address import ADDR_FLAG_RE, LOOPBACK_CONNECT_RE, disagreeing, loopback_rendezvous
from ..rules.launch import first_node_only, fixed_node_rank, shared_node_rank
from ..sources.records import LAUNCH_FAILURE_EVENT
from ..sources.torch_log import NATIVE_CRASH_TYPE, NATIVE_IN_NCCL
from .catalogue import KnownError, classify
from ..nccl.failures import EntryKind, EntryVerdict

SOCKET_IF_RE = re.compile(r"\[\d{1,3}\]([A-Za-z0-9_.@-]{1,40}):")  # NET/Socket : Using [0]eno1:10.0.0.1<0> [1]br0:...
# NCCL's own words that it failed the call because of a setting it was given ("... NCCL_ALGO was set to NVLS."): the
# WARN is the call's error, whether or not an exit or a traceback follows it in the input
REFUSED_RE = re.compile(r"\bNCCL_[A-Z0-9_]{2,40} was set to\b")
NCCL_FAILED_RE = re.compile(r"NCCL error|ncclSystemError|ncclRemoteError|ncclInternalError|unhandled system error")


def detect(run: Run) -> list[Finding]:
    findings: list[Finding] = []
    settings = run.job.settings
    failed = any(e.exitcode not in (None, 0) for e in run.exits) or (run.job.exit_code not in (None, 0)) or any(
        e.kind == EventKind.DIST_ERROR for e in run.events)
    # 1. a WARN that names a setting, in a failed job: the setting broke it
    candidates = [e for e in run.events if e.kind == EventKind.NCCL_WARN] + [e for e in run.events if e.kind == EventKind.DIST_ERROR]
    m = config_mistake([(e.rank, e.text + " " + str(e.data.get("last_error") or "")) for e in candidates], settings)
    if m is not None:
        k, names, w = m.entry, m.settings, candidates[m.index]
        failed = failed or bool(REFUSED_RE.search(w.text))
        ev = [w.evidence] + [settings[n].evidence for n in names if n in settings and settings[n].evidence]
        values = ", ".join(f"{n}={settings[n].value}" if n in settings else n for n in names)
        findings.append(Finding(
            kind=FindingKind.CONFIG, severity=Severity.CRITICAL if failed else Severity.ERROR,
            message=f"{k.meaning} ({values}): {w.text.strip()[:200]}", ranks=m.ranks, hint=k.hint,
            evidence=tuple(x for x in ev if x is not None), verdict=Verdict.CONFIG_ERROR if failed else None,
            data={"settings": list(names)}))
    if not findings:
        findings += _setup_errors(run)
    if not findings:
        findings += _launch_setup(run)
    if not findings:
        findings += _interfaces_chosen(run)
    if not findings:
        findings += _roce_default_gid(run)
    if not findings:
        findings += _roce_gid_set_unrouted(run)
    if not findings:
        findings += _shm_bus_error(run)
    if not findings:
        findings += _shm_full(run)
    if not findings:
        findings += _timeout_under_a_second(run)
    if not findings:
        findings += _unreachable_at_start(run)
    if not findings:
        findings += _unresolvable_rendezvous(run)
    if not findings:
        findings += _sum_of_one(run)
    if not findings:
        findings += _loopback_closed_in_one_process(run)
    if not findings:
        findings += _ib_protection_on_every_node(run)
    if not findings:
        findings += _init_addresses_differ(run)
    if not findings:
        findings += _bridged_containers(run)
    if not findings:
        findings += _loopback_rendezvous(run)
    if not findings:
        findings += _environment_not_on_every_host(run)
    if not findings:
        findings += _first_node_only(run)
    if not findings:
        findings += _node_rank_fixed(run)
    if not findings:
        findings += _node_rank_shared(run)
    # 2. notes on risky settings
    for name, (val, msg, hint) in NOTES.items():
        s = settings.get(name)
        if s is not None and s.value.strip() == val:
            findings.append(_note(s, msg, hint, Severity.WARNING))
    for name, msg in FORCED.items():
        s = settings.get(name)
        if s is not None and not any(f.data.get("settings") and name in f.data["settings"] for f in findings):
            findings.append(_note(s, f"{name}={s.value}: {msg}", f"Unset {name} unless a measurement shows it helps.",
                                  Severity.WARNING))
    socks = _int(settings.get("NCCL_NSOCKS_PERTHREAD"))
    threads = _int(settings.get("NCCL_SOCKET_NTHREADS"))
    if socks and threads and socks * threads > 64:
        findings.append(_note(settings["NCCL_NSOCKS_PERTHREAD"],
                              f"NCCL_NSOCKS_PERTHREAD x NCCL_SOCKET_NTHREADS = {socks * threads} exceeds NCCL's limit of 64",
                              "Keep the product at or under 64.", Severity.WARNING))
    ifname = settings.get("NCCL_SOCKET_IFNAME")
    if ifname is not None and ifname.value.lstrip("=^") in ("lo", "docker0") and len(run.job.hosts) > 1:
        findings.append(_note(ifname, f"NCCL_SOCKET_IFNAME={ifname.value} on a multi-host job",
                              "Point NCCL_SOCKET_IFNAME at the interface that reaches the other hosts.", Severity.ERROR))
    bufs = _int(settings.get("NCCL_BUFFSIZE"))
    if bufs and bufs < 1 << 20:
        findings.append(_note(settings["NCCL_BUFFSIZE"], f"NCCL_BUFFSIZE={bufs} is small; large messages will be slow",
                              "Leave NCCL_BUFFSIZE at its default (4 MiB).", Severity.WARNING))
    versions = run.job.nccl_versions
    if len(set(versions.values())) > 1:
        by: dict[str, list[int]] = {}
        for pid, v in versions.items():
            by.setdefault(v, []).append(pid)
        findings.append(Finding(kind=FindingKind.CONFIG, severity=Severity.ERROR,
                                message="processes run different NCCL versions: " + "; ".join(
                                    f"{v} (pids {', '.join(map(str, p[:5]))})" for v, p in by.items()),
                                hint="Install the same NCCL on every node.",
                                evidence=tuple(run.job.version_lines[v] for v in by if v in run.job.version_lines),
                                data={"environment_mismatch": "NCCL version"} if _one_job(
                                    run, {str(pid): v for pid, v in versions.items()}, by_pid=True) else {}))
    findings += _plugins_differ(run)
    return findings


def _plugins_differ(run: Run) -> list[Finding]:
    """The hosts of one job loaded different network plugins or used different networks (``rules.environment``):
    a finding that says so, marked ``environment_mismatch`` (``verdict`` makes it the config error behind whatever
    went wrong after it)."""
    plugins: list[tuple[str, str]] = []
    networks: list[tuple[str, str]] = []
    lines: dict[tuple[str, str], LogEvent] = {}
    for e in run.events:
        if e.kind not in (EventKind.NCCL_NET_PLUGIN, EventKind.NCCL_NET_NETWORK):
            continue
        proc = process_of(e.evidence.text)
        if proc is None:
            continue
        host = proc.rsplit(":", 1)[0]
        value = plugin_of(e.evidence.text) if e.kind == EventKind.NCCL_NET_PLUGIN else e.text.strip()
        if not value:
            continue
        (plugins if e.kind == EventKind.NCCL_NET_PLUGIN else networks).append((host, value))
        lines.setdefault((host, value), e)
    m = environment_mismatch(plugins, networks, {})
    if m is None or not _one_job(run, {h: v for v, hs in m.values for h in hs}):
        return []
    ev = [lines[(hs[0], v)].evidence for v, hs in m.values if (hs[0], v) in lines]
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.ERROR, ranks=(),
        message=f"the nodes of one job run NCCL with different {m.what}s: {m.describe()}: an environment mismatch "
        "between the nodes (another image, library path or plugin install on some), which NCCL does not survive "
        "reliably: connections that never complete, hangs at init or at the first collective",
        hint="Make every node load the same NCCL and network plugin: the same image or module set, the same "
             "LD_LIBRARY_PATH / NCCL_NET_PLUGIN, the plugin installed everywhere or nowhere; compare the NET/Plugin and "
             "'Using network' lines of each node.",
        evidence=tuple(ev[:4]), data={"environment_mismatch": m.what, "values": [[v, list(hs)] for v, hs in m.values],
                                      "culprits": []})]


def _one_job(run: Run, value_of: dict[str, str], by_pid: bool = False) -> bool:
    """The hosts (or processes, ``by_pid``) that disagree are one job's: one communicator holds ranks of two of the
    differing groups (two runs pasted into one input are no mismatch)."""
    group: dict[int, str] = {}
    for p in run.job.processes:
        key = str(p.pid) if by_pid else p.host
        if p.rank is not None and key in value_of:
            group[p.rank] = value_of[key]
    return any(len({group[r] for r in c.members.values() if r in group}) > 1 for c in run.communicators)


def _setup_errors(run: Run) -> list[Finding]:
    """Errors whose text the knowledge base calls a setup problem (an entry whose verdict is config_error):
    PyTorch's "Last error" after an NCCL error, else the error's own message (a CUDA error raised before NCCL,
    a benchmark's own abort, which quote no last error). One finding for the first such entry, every rank
    that quoted it; no culprit rank, the host or its setup is at fault."""
    first: KnownError | None = None
    hits = []
    for e in run.events:
        if e.kind != EventKind.DIST_ERROR:
            continue
        k = classify(_error_text(e))
        if k is None or k.verdict != EntryVerdict.CONFIG_ERROR or k.kind == EntryKind.NOTE or (first is not None and k is not first):
            continue
        first = k
        hits.append(e)
    if first is None:
        return []
    quote = " ".join(_error_text(hits[0]).split())[:200]
    what = "Last error" if hits[0].data.get("last_error") else "error"
    return [Finding(kind=FindingKind.CONFIG, severity=Severity.CRITICAL, message=f"{first.meaning} ({what}: {quote})",
                    ranks=tuple(sorted({e.rank for e in hits if e.rank is not None})), hint=f"{first.hint} ({first.link})",
                    evidence=tuple(e.evidence for e in hits[:3]), verdict=Verdict.CONFIG_ERROR,
                    data={"entry": first.id, "area": first.area, "culprits": [], "count": len(hits)})]


def _launch_setup(run: Run) -> list[Finding]:
    """The launcher's or the communication runtime's own failure (``sources.launcher_log``: ssh refusing mpirun, ORTE /
    PRRTE unable to start or keep a daemon, UCX / UCC shared memory between containers) that the knowledge base calls
    a set-up problem: one config error for the first such entry, no culprit rank (the launch or the containers are
    set up wrong), unless the job ended well all the same (exit 0, the launcher's success, every rank's end)."""
    hits: list[LogEvent] = []
    first: KnownError | None = None
    for e in run.events:
        if e.kind != LAUNCH_FAILURE_EVENT:
            continue
        k = classify(e.text)
        if k is None or k.verdict != EntryVerdict.CONFIG_ERROR or (first is not None and k is not first):
            continue
        first = first or k
        hits.append(e)
    if first is None or run.job.exit_code == 0 or any(e.kind == EventKind.LAUNCHER_SUCCEEDED for e in run.events):
        return []
    hosts = sorted({str(e.data["host"]) for e in hits if e.data.get("host")})
    where = f" ({', '.join(hosts[:4])})" if hosts else ""
    return [Finding(kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
                    message=f"{first.meaning}{where}: \"{' '.join(hits[0].text.split())[:200]}\"",
                    hint=f"{first.hint} ({first.link})", evidence=tuple(e.evidence for e in hits[:3]),
                    data={"entry": first.id, "area": first.area, "culprits": [], "count": len(hits)})]


def _bridged_containers(run: Run) -> list[Finding]:
    """Ranks in Docker containers on the default bridge network, the world spanning machines (``rules.container_net``):
    the first collective's NCCL system error is the bridge's addresses, unreachable from the other machine."""
    placed = [(x.rank, _local_rank(x.evidence.text if x.evidence else ""), x.host) for x in run.exits
              if x.rank is not None and x.host]
    errors = [e for e in run.events if e.kind == EventKind.DIST_ERROR]
    texts = [f"{e.text} {e.data.get('message') or ''} {e.data.get('last_error') or ''}" for e in errors]
    if not bridged_across_machines(placed, run.job.world_size, texts):
        return []
    hosts = sorted({h for _, _, h in placed})
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
        message=f"the ranks run in Docker containers with their own network (host name{'s' if len(hosts) > 1 else ''} "
        f"{', '.join(hosts[:3])}: container ids) and the world of {run.job.world_size} spans other machines; the first "
        f"collective failed with NCCL's system error: the containers' bridge addresses cannot be reached from the "
        f"other machine", hint="Run the containers with --network=host (and --ipc=host, or a large --shm-size) on every "
        "machine, or give NCCL and c10d addresses the machines share (NCCL_SOCKET_IFNAME, MASTER_ADDR) through a "
        "network both containers join.", evidence=tuple([errors[0].evidence] if errors else []) + tuple(
            x.evidence for x in run.exits if x.host in hosts and x.evidence is not None)[:2],
        data={"culprits": [], "hosts": hosts})]


LOCAL_RANK_RE = re.compile(r"\blocal_rank: (\d{1,6})\b")  # torchrun's failure summary: "rank: 3 (local_rank: 1)"


def _local_rank(text: str) -> int | None:
    m = LOCAL_RANK_RE.search(text)
    return int(m.group(1)) if m else None


def _error_text(e: LogEvent) -> str:
    """PyTorch's quote of NCCL's last error, else the error's type and message; a library check's abort (``Failed: Cuda
    error custom_all_reduce.cuh:307 '...'``, type ``CUDA failure``) with the source file it names before its message."""
    last = e.data.get("last_error")
    if last:
        return str(last)
    kind, frames = str(e.data.get("type") or ""), e.data.get("frames") or []
    where = f"{frames[0]} " if kind.endswith(" failure") and frames else ""
    return f"{kind}: {where}{e.data.get('message') or ''}"


def _interfaces_chosen(run: Run) -> list[Finding]:
    """A job across nodes whose NCCL picked several socket interfaces by itself (NCCL_SOCKET_IFNAME not set:
    every interface but lo and docker*), then failed on a socket (a WARN the knowledge base files under
    sockets, or NCCL's system / remote / internal error): not every interface it picked reaches the other
    nodes (a second NIC on another subnet, a bridge, docker's own bridges). No culprit rank: the setup."""
    if "NCCL_SOCKET_IFNAME" in run.job.settings or max(run.job.nnodes or 0, len(run.job.hosts)) < 2:
        return []
    chosen = next((e for e in run.events if e.kind == EventKind.NCCL_NET_SOCKET and len(SOCKET_IF_RE.findall(e.text)) > 1), None)
    if chosen is None:
        return []
    failed = next((e for e in run.events if (e.kind == EventKind.NCCL_WARN and _area(e.text) == "socket") or (
        e.kind == EventKind.DIST_ERROR and NCCL_FAILED_RE.search(f"{e.text} {e.data.get('last_error') or ''}"))), None)
    if failed is None:
        return []
    names = list(dict.fromkeys(SOCKET_IF_RE.findall(chosen.text)))
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
        message=f"NCCL chose {len(names)} socket interfaces by itself ({', '.join(names[:6])}) in a job across "
        f"nodes, then a connection failed: not every one of them reaches the other nodes "
        f"(NCCL_SOCKET_IFNAME is not set): {failed.text.strip()[:200]}",
        hint="Set NCCL_SOCKET_IFNAME to the interface that routes between the nodes, on every node (e.g. "
             f"NCCL_SOCKET_IFNAME=={names[0]}; check with `ip route get <other node's address>`).",
        evidence=(chosen.evidence, failed.evidence), data={"culprits": [], "interfaces": names,
                                                           "settings": ["NCCL_SOCKET_IFNAME"]})]


def _roce_default_gid(run: Run) -> list[Finding]:
    """A WARN the knowledge base says a wrong NCCL_IB_GID_INDEX causes (IB transport retries exceeded:
    completion error 12), on RoCE ports (``NET/IB : Using [0]mlx5_2:1/RoCE``), with NCCL_IB_GID_INDEX not set:
    the GID NCCL picked by default (often a link-local or RoCE v1 one) does not route between the nodes. The
    WARN after a GID index the job set is the knowledge base's own case (``nccl_warn``). Likely, not confirmed:
    a fabric fault gives the same completion error. A WARN that shows a routable GID pair (``nccl.gids``: IPv4-mapped
    or global IPv6 on both ends, as NCCL 2.21+ prints them) is the fabric's or the peer's: no config error."""
    if "NCCL_IB_GID_INDEX" in run.job.settings:
        return []
    if not any(e.kind == EventKind.NCCL_NET_IB and "/RoCE" in e.text for e in run.events):
        return []
    for e in run.events:
        if e.kind != EventKind.NCCL_WARN:
            continue
        src = e.data.get("source")
        k = classify(f"{src} {e.text}" if isinstance(src, str) and src else e.text)
        if k is None or "NCCL_IB_GID_INDEX" not in k.settings or shown_routable(e.text):
            continue  # (NCCL 2.21+ picks a RoCE v2 GID itself and prints it: a routable pair is not the GID's fault)
        ranks = sorted({x.rank for x in run.events if x.kind == EventKind.NCCL_WARN and x.rank is not None
                        and classify(x.text) is k})
        return [Finding(
            kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=tuple(ranks),
            message=f"NCCL WARN over RoCE with the GID index left to NCCL (NCCL_IB_GID_INDEX not set): "
            f"\"{e.text.strip()[:200]}\": the GID it picked most likely does not route between the nodes. {k.meaning}",
            hint="Set NCCL_IB_GID_INDEX to the index of the RoCE v2 GID of the address that routes between the "
                 "nodes (`show_gids`; 3 on many hosts), on every node.",
            evidence=(e.evidence,), data={"culprits": [], "entry": k.id, "settings": ["NCCL_IB_GID_INDEX"],
                                          "certainty": {"level": "likely", "why": "RoCE, the GID index left to "
                                                        "NCCL, and the completion error a wrong GID gives"}})]
    return []


SIGBUS_CODES = frozenset({-7, 135})  # killed by SIGBUS: torchrun's / a signal report's -7, a shell's 128 + 7


MODIFY_QP_TIMEOUT_ENTRY = "ib-modify-qp-timeout"
# NCCL 2.26+'s modify_qp WARN names both ends' GIDs: "..., local GID index 3, local GID ::ffff:10.0.0.1, remote GID ..."
QP_GIDS_RE = re.compile(r"local GID (?P<l>[0-9A-Fa-f:.]{2,45}), remote GID (?P<r>[0-9A-Fa-f:.]{2,45})")


def _gids_routable(text: str) -> bool:
    """The WARN shows both GIDs (either wording) and both can route."""
    m = QP_GIDS_RE.search(text)
    return shown_routable(text) or (m is not None and routable(m.group("l")) and routable(m.group("r")))


def _roce_gid_set_unrouted(run: Run) -> list[Finding]:
    """Queue pairs that never reached their connected state (``Call to ibv_modify_qp failed with ... Connection timed
    out``) on RoCE ports, with the GID index the job set (``NCCL_IB_GID_INDEX set by environment to N``): the GID at
    that index (a link-local IPv6 address's, or a RoCE v1 one) does not route between the nodes. A WARN that shows a
    routable GID pair on both ends (NCCL 2.26+ prints them) is the fabric's: no config error. Likely, not confirmed; no
    culprit rank (every node carries the setting)."""
    gid = run.job.settings.get("NCCL_IB_GID_INDEX")
    if gid is None or not any(e.kind == EventKind.NCCL_NET_IB and "/RoCE" in e.text for e in run.events):
        return []
    warns = [e for e in run.events if e.kind == EventKind.NCCL_WARN and _entry(e.text) == MODIFY_QP_TIMEOUT_ENTRY]
    if not warns or any(_gids_routable(e.text) for e in warns):
        return []
    return [_setup_fault(
        f"queue pairs over RoCE never reached their connected state with the GID index the job set "
        f"(NCCL_IB_GID_INDEX={gid.value}): \"{warns[0].text.strip()[:200]}\": the GID at that index most likely "
        "does not route between the nodes (a link-local IPv6 address's GID, or a RoCE v1 one)",
        "Set NCCL_IB_GID_INDEX to the index of the RoCE v2 GID of the address that routes between the nodes (`show_gids`"
        ": the row with the node's IPv4 address, often 3), the same on every node, or leave it unset on NCCL 2.21+, "
        "which picks a routable RoCE v2 GID itself.",
        [gid.evidence] + [e.evidence for e in warns[:2]], "RoCE, a GID index the job set, and queue pairs that time "
        "out on their way to RTR", {"settings": ["NCCL_IB_GID_INDEX"], "count": len(warns)})]


def _shm_bus_error(run: Run) -> list[Finding]:
    """The job's first failure is a process killed by SIGBUS (OpenMPI's ``Signal: Bus error (7)``, UCX's ``Caught
    signal 7 (Bus error ...)``, torchrun's exit code -7) in a job that runs NCCL or a world of several processes: NCCL (its proxy, the SHM
    transport) touched a shared-memory file in /dev/shm the tmpfs could not back, the container's /dev/shm being
    too small (Docker's 64 MB default). A setup error of the container, not a crash of the rank's code; a bus
    error any later (after another failure) is left to the time line. Likely, not confirmed: the signal alone
    does not name the file."""
    if not (run.communicators or run.job.nccl_versions or any(e.kind.startswith("nccl") for e in run.events)
            or (run.job.world_size or 0) > 1 or any(_in_nccl(e) for e in run.events)):
        return []  # (a world of several processes on one launcher shares /dev/shm the same way, NCCL lines or not)
    failures = failures_of_run(run)
    cause = root_cause(failures)
    if cause is None or cause.verdict != CauseVerdict.CRASH:
        return []
    bus = sorted((f for f in failures if f.kind == FailureKind.FATAL and f.code in SIGBUS_CODES),
                 key=lambda f: (not f.order[0], f.t if f.t is not None else float("inf"), f.order))
    first = bus[0] if bus else None
    # (a native crash report's own error, on the line of the same report, is that bus error, not another failure)
    if first is None or any(not _after(o, first) for o in failures if o.is_cause and o not in bus
                            and o.order != first.order):
        return []
    ex = next((e for e in run.exits if e.exitcode in SIGBUS_CODES and (first.rank is None or e.rank == first.rank)),
              None)
    ranks = sorted({e.rank for e in run.exits if e.exitcode in SIGBUS_CODES and e.rank is not None})
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=tuple(ranks),
        message=f"{'rank ' + str(first.rank) if first.rank is not None else 'a process'} was killed by SIGBUS "
        f"first, in a job running NCCL or several processes: a shared-memory file in /dev/shm that the tmpfs could not back (a "
        f"container's /dev/shm too small, Docker's default 64 MB) is the usual cause: {first.text.strip()[:200]}",
        hint="Give the container a larger /dev/shm (docker run --shm-size=1g or --ipc=host; on Kubernetes an "
             "emptyDir with medium: Memory at /dev/shm) and check `df -h /dev/shm` inside it; NCCL_SHM_DISABLE=1 "
             "avoids the SHM transport, slower.",
        evidence=(ex.evidence,) if ex is not None and ex.evidence is not None else (),
        data={"culprits": [], "signal": "SIGBUS", "certainty": {
            "level": "likely", "why": "a bus error first in a job running NCCL; the signal does not name the file"}})]


def _in_nccl(e: LogEvent) -> bool:
    """A native crash report whose frames run through NCCL (``sources.torch_log``): NCCL ran in that process."""
    return (e.kind == EventKind.DIST_ERROR and e.data.get("type") == NATIVE_CRASH_TYPE
            and NATIVE_IN_NCCL in str(e.data.get("message") or ""))


MIN_TIMEOUT_MS = 1000  # a process group's timeout under a second is a unit slip (milliseconds for seconds), never a choice


def _timeout_under_a_second(run: Run) -> list[Finding]:
    """PyTorch's watchdog timed a collective out against a timeout under a second (``Timeout(ms)=1``): no collective
    can be counted on to finish that soon, so the timeout, a setting (``init_process_group(timeout=...)``, a framework's
    option given in the wrong unit), is the cause, not the collective. Every rank that timed out so."""
    hits = [e for e in run.events if e.kind == EventKind.WATCHDOG_TIMEOUT and isinstance(e.data.get("timeout_ms"), int)
            and 0 <= e.data["timeout_ms"] < MIN_TIMEOUT_MS]
    if not hits:
        return []
    ms = min(int(e.data["timeout_ms"]) for e in hits)
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR,
        ranks=tuple(sorted({e.rank for e in hits if e.rank is not None})),
        message=f"the process group's timeout is {ms} ms (Timeout(ms)={ms}): a collective timed out against a limit "
        "under a second, which no collective can be held to; the timeout setting is the cause",
        hint="Give the process group a timeout in minutes: init_process_group(..., timeout=timedelta(minutes=30)); a "
             "framework's option for it (ddp_timeout, --dist-timeout, pg_timeout) may take seconds or minutes where "
             "a value in milliseconds was given.",
        evidence=tuple(e.evidence for e in hits[:3]),
        data={"culprits": [], "settings": ["timeout"]})]


def _shm_full(run: Run) -> list[Finding]:
    """A process's error is ENOSPC raised while Python or PyTorch made a shared-memory object (``rules.shm_full``), in a
    job that reported no stall before: /dev/shm is full, a container's setting. Every rank that raised it."""
    if stall_time(run)[0]:
        return []
    hits = [e for e in run.events if e.kind == EventKind.DIST_ERROR and isinstance(e.data.get("frames"), list)
            and shm_full(f"{e.data.get('type') or ''}: {e.data.get('message') or ''}", e.data["frames"])]
    if not hits:
        return []
    where = str(hits[0].data["frames"][-1])[:160]
    return [Finding(
        kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR,
        ranks=tuple(sorted({e.rank for e in hits if e.rank is not None})),
        message=f"/dev/shm is full: {_error_text(hits[0])[:160]}, raised while making a shared-memory object ({where}); "
        "a container's /dev/shm is 64 MB unless set",
        hint=SHM_HINT, evidence=tuple(e.evidence for e in hits[:3]),
        data={"culprits": [], "count": len(hits), "certainty": {
            "level": "likely", "why": "the error names no file; its frames are those of a shared-memory object"}})]


SHM_HINT = ("Give the container a larger /dev/shm (docker run --shm-size=16g or --ipc=host; on Kubernetes an emptyDir "
            "with medium: Memory at /dev/shm) and check `df -h /dev/shm` inside it; fewer DataLoader workers need less.")


def _setup_fault(message: str, hint: str, evidence: Iterable[Evidence | None], why: str,
                 data: FindingData) -> Finding:
    """A config error of the hosts or the launch that names no rank, ``likely`` (the lines show the symptom; the
    setting behind it is inferred, ``why``), citing its first three lines."""
    return Finding(kind=FindingKind.CONFIG, severity=Severity.CRITICAL, verdict=Verdict.CONFIG_ERROR, ranks=(),
                   message=message, hint=hint, evidence=tuple(e for e in evidence if e is not None)[:3],
                   data={"culprits": [], **data, "certainty": {"level": "likely", "why": why}})


UNREACHABLE_ENTRY = "socket-connect-unreachable"
CONNECT_TO_RE = re.compile(r"[Cc]onnect to (\S{1,120}?)<(\d{1,5})>")


def _unreachable_at_start(run: Run) -> list[Finding]:
    """Every process that warned could not reach one and the same address (``No route to host``, ``Network is
    unreachable``, a connect timeout: the knowledge base's unreachable entry), at start-up (no communicator finished
    its init, no collective ran), from two processes or more: not a peer that died (the address was never reached
    by anyone) but the network between the hosts: a firewall dropping the bootstrap's ports, or an interface
    that does not route to the root's host. PyTorch's quote of NCCL's last error (``Last error: socketStartConnect:
    Connect to ... failed : No route to host`` after a DistBackendError, no NCCL_DEBUG) counts as the process's
    warning. A setup error, no culprit rank; likely, not confirmed."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    said = [(e, t) for e in run.events if (t := _unreachable_text(e)) is not None]
    targets = {m.group(1) for _, t in said if (m := CONNECT_TO_RE.search(t))}
    warned = [e for e, _ in said if e.kind == EventKind.NCCL_WARN]
    procs = {_reporter(e) for e in (warned or [e for e, _ in said])}  # a WARN and its quote: one process, counted once
    if len(targets) != 1 or len(procs) < 2 or any(CONNECT_TO_RE.search(t) is None for _, t in said):
        return []
    (target,) = targets
    warns = [e for e, _ in said]
    k = classify(said[0][1])
    assert k is not None
    return [_setup_fault(
        f"{len(procs)} processes could not reach the same address {target} at start-up, before any "
        f"communicator was set up: the network between the hosts (a firewall dropping NCCL's bootstrap ports, an "
        f"interface not routed to that host) rather than a peer that failed: \"{said[0][1].strip()[:200]}\"",
        f"Open the ports NCCL and the framework use between the nodes (firewall / security group), and point "
             f"NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME at the interface that routes to {target} (check with `ip route "
             f"get {target}` and `nc -zv` from another node). {k.hint}",
        [e.evidence for e in warns], "every warning process failed to reach one address before any communicator "
        "came up", {"entry": k.id, "area": k.area, "count": len(warns)})]


# c10d's own warning that a name does not resolve: "The IPv4 network addresses of (gpuc-0417, 41893) cannot be
# retrieved (gai error: -2 - Name or service not known)"
UNRESOLVED_RE = re.compile(r"network addresses of \((?P<host>[^,\s()]{1,255}), ?(?P<port>\d{1,5})\) cannot be retrieved "
                           r"\(gai error: (?P<err>-?\d{1,4})")
RESOLVE_FAILED = ("-2", "-3", "-5")  # EAI_NONAME, EAI_AGAIN, EAI_NODATA: the name has no address here


def _unresolvable_rendezvous(run: Run) -> list[Finding]:
    """c10d's warning, from the ranks of a job, that the host name they must connect to (the rendezvous or the store,
    MASTER_ADDR as the launcher passed it) has no address on their node (``getaddrinfo`` failing with a name error),
    repeated or from two ranks, and no communicator, collective or progress after it: the ranks cannot reach the job's
    first node by that name. A config error of the hosts (DNS, /etc/hosts, a short name given as MASTER_ADDR), likely."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    said = [(e, m) for e in run.events if e.kind == EventKind.C10D_LINE and (m := UNRESOLVED_RE.search(e.text))
            and m.group("err") in RESOLVE_FAILED]
    if len(said) < 2 or len({m.group("host") for _, m in said}) != 1:
        return []
    if progress_after(run, (e for e, _ in said)):  # the job went on after them: it got there another way
        return []
    host = said[0][1].group("host")
    ranks = sorted({e.rank for e, _ in said if e.rank is not None})
    who = f"ranks {', '.join(map(str, ranks[:8]))}{' ...' if len(ranks) > 8 else ''}" if ranks else "the processes"
    return [_setup_fault(
        f"{who} could not resolve the hostname {host} they must connect to (c10d: its network addresses cannot be "
        "retrieved, a name error of getaddrinfo), before any communicator was set up: the name of the job's first "
        "node has no address on this node",
        f"Give MASTER_ADDR (or the rendezvous endpoint) as an address, or a name every node resolves: add {host} to "
        "/etc/hosts on every node (inside the container too) or to the DNS; check with `getent hosts " + host + "` "
        "on each node.", [e.evidence for e, _ in said], "c10d's own warnings that the name does not resolve, before "
        "any communicator came up", {"hosts": [host], "count": len(said)})]


def _unreachable_text(e: LogEvent) -> str | None:
    """The text of an NCCL WARN, or of the last error PyTorch quotes after an NCCL error, that the knowledge base
    reads as an address that cannot be reached; else None."""
    if e.kind == EventKind.NCCL_WARN:
        text = e.text
    elif e.kind == EventKind.DIST_ERROR and e.data.get("last_error"):
        text = str(e.data["last_error"])
    else:
        return None
    return text if _entry(text) == UNREACHABLE_ENTRY else None


def _reporter(e: LogEvent) -> str:
    """Who reported ``e``: the NCCL process its line names, else its rank, else the line itself (each traceback of a
    console is one process's)."""
    proc = process_of(e.evidence.text) if e.evidence else None
    if proc:
        return proc
    if e.rank is not None:
        return str(e.rank)
    return f"{e.evidence.file}:{e.evidence.line}" if e.evidence else "?"


SUM_OF_ONE_RE = re.compile(r"\b[Ee]xpected:? (\d{1,6}),? (?:but )?got:? 1(?:\.0+)?\b")


def _sum_of_one(run: Run) -> list[Finding]:
    """A sanity check's all-reduce of ones that came back as 1 where the world size was expected (``AssertionError:
    Expected 16, got 1.0``, the check of vLLM's own test script), on the first rank that failed and every rank that
    quoted it, two processes or more: the reduction never combined the ranks, so the communicator the check used did nothing: a framework's
    NCCL wrapper disabled (vLLM's pynccl ``disabled``, on by default only in later releases) or loaded from another
    library (``VLLM_NCCL_SO_PATH``), or each process in a world of its own. A setting of the check, no culprit rank."""
    errors = [e for e in run.events if e.kind == EventKind.DIST_ERROR]
    if not errors:
        return []
    def want(e: LogEvent) -> int | None:
        m = SUM_OF_ONE_RE.search(str(e.data.get("message") or e.text))
        return int(m.group(1)) if m else None
    first = want(errors[0])
    world = run.job.world_size
    if first is None or first < 2 or (world is not None and first != world):
        return []
    hits = [e for e in errors if want(e) == first]
    if len(hits) < 2:
        return []  # one process's word alone: its own check may be at fault; several agreeing point at the setup
    return [_setup_fault(
        f"{len(hits)} process{'es' if len(hits) > 1 else ''} found a sum over the world of {first} to be 1: the "
        f"check's collective never combined the ranks, its communicator did nothing (a framework's NCCL wrapper "
        f"disabled, e.g. vLLM's pynccl, or loaded from another library), not a fault of the network or of one rank: "
        f"\"{' '.join(errors[0].text.split())[:200]}\"",
        "Enable the wrapper the check uses (vLLM's sanity script: `pynccl.disabled = False` where the installed "
             "vLLM leaves it off), use the script of the installed release, and check that VLLM_NCCL_SO_PATH / "
             "NCCL_SO_PATH, if set, name the libnccl the job loads.",
        [e.evidence for e in hits], "a sum over the whole world that came back as one rank's own value",
        {"count": len(hits)})]


LOOPBACK = r"(?:localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[?::1\]?)<\d{1,5}>"
# NCCL's "socketProgress: Connection closed by remote peer localhost<41833>" (2.18+; "Net : ..." before), and
# "socketProgressOpt: Call to recv from 127.0.0.1<41833> failed : Connection reset by peer" (2.18-2.28; 2.29+:
# "ncclOsSocketProgressOpt: Call to send to ..."), each to a loopback address
LOOPBACK_CLOSED_RE = re.compile(rf"Connection closed by remote peer {LOOPBACK}"
                                rf"|Call to (?:recv from|send to) {LOOPBACK} failed : (?:Connection reset by peer|Broken pipe)")


def _loopback_closed_in_one_process(run: Run) -> list[Finding]:
    """NCCL's socket to the loopback address closed or reset "by the remote peer" in a job whose ranks are all one
    process (a single-process nccl-tests, ``-g N``), before any result: the only peer on the loopback is the process
    itself (its bootstrap root, its proxy), which did not close anything; something on the host closed the socket (a
    security or endpoint-protection tool, a firewall that filters loopback). A setup problem of the host, no culprit."""
    if len(run.collectives) or run.nccl_tests:
        return []
    pids = {p.pid for p in run.job.processes if p.pid}  # (a rank known only from a device line has no pid of its own)
    if len(pids) != 1 or len({p.host for p in run.job.processes if p.host}) > 1 or len(run.job.hosts) > 1:
        return []
    hit = next((e for e in run.events if e.kind == EventKind.NCCL_WARN and LOOPBACK_CLOSED_RE.search(e.text)), None)
    if hit is None:
        return []
    return [_setup_fault(
        "NCCL's loopback socket was closed \"by the remote peer\" in a job whose ranks are all one process, "
        f"before any result: no other process was there to close it; something on the host closes local sockets "
        f"(a security or endpoint-protection tool, a firewall filtering the loopback): \"{hit.text.strip()[:200]}\"",
        "Allow the job's local socket connections on the loopback (exclude the benchmark / python from the "
             "security tool's network inspection, or its firewall rules for lo), then rerun; NCCL_SOCKET_IFNAME=lo "
             "keeps the bootstrap on the loopback.",
        [hit.evidence], "a peer that closed a loopback socket in a job of one process, before any result", {})]


IB_PROTECTION_ENTRY = "ib-local-protection"


def _ib_protection_on_every_node(run: Run) -> list[Finding]:
    """InfiniBand completions with error 4 (local protection: the HCA could not access the registered buffer) from
    processes on every node of a job across two nodes or more: not one cable, port or peer (a link that broke shows
    on the nodes it joins) but how each host lets the HCA reach GPU memory: PCIe ACS or the IOMMU routing peer-to-peer
    traffic through the root complex, GPU Direct RDMA (nvidia-peermem) missing or refused. A setup error of the hosts,
    no culprit rank; likely, not confirmed (a fault common to every node looks the same)."""
    hosts = set(run.job.hosts)
    if len(hosts) < 2:
        return []
    warns = [e for e in run.events if e.kind == EventKind.NCCL_WARN and _entry(e.text) == IB_PROTECTION_ENTRY]
    seen = {proc.rsplit(":", 1)[0] for e in warns if e.evidence and (proc := process_of(e.evidence.text))}
    if not warns or seen != hosts:
        return []
    k = classify(warns[0].text)
    assert k is not None
    return [_setup_fault(
        f"InfiniBand completions with error 4 (local protection) on every node of the job ({len(hosts)} "
        f"hosts): the HCAs cannot reach the GPUs' buffers on any host, a setting of the hosts (PCIe ACS / the IOMMU "
        f"routing peer traffic through the root complex, GPU Direct RDMA not loaded) rather than one link or peer: "
        f"\"{warns[0].text.strip()[:200]}\"",
        "Disable PCIe ACS on the switches between the GPUs and the HCAs (NCCL's troubleshooting guide: setpci "
             "on each bridge, or the BIOS), set the IOMMU to passthrough (iommu=pt) or off, check that nvidia-peermem "
             "is loaded; NCCL_NET_GDR_LEVEL=LOC (GDR off) confirms it, slower. " + k.hint,
        [e.evidence for e in warns], "the same protection error from every node of the job",
        {"entry": k.id, "area": k.area, "count": len(warns), "hosts": sorted(hosts)[:64]})]


def _init_addresses_differ(run: Run) -> list[Finding]:
    """The nodes' launch commands of one multi-node job name different rendezvous addresses (``rules.init_address``),
    and no communicator finished its init nor a collective ran: each node waits for a group at its own address. A
    setting of the launch, no culprit rank; likely (the lines show the commands, not where each waited)."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    lines = {(e.evidence.file, e.evidence.line): e.evidence.text for e in run.events
             if e.evidence is not None and "--n" in e.evidence.text}  # --nnodes / --num_machines: a launch command
    named = disagreeing((file, text) for (file, _), text in sorted(lines.items()))
    if not named:
        return []
    said = "; ".join(f"{f}: {h}{':' + p if p else ''}" for f, (h, p) in sorted(named.items())[:4])
    ev = [next((e.evidence for e in run.events if e.evidence is not None and e.evidence.file == f
                and ADDR_FLAG_RE.search(e.evidence.text)), None) for f in sorted(named)]
    return [_setup_fault(
        f"the nodes of one job were launched with different init (rendezvous) addresses ({said}): every node must "
        "name the address of the node with rank 0; each waits for a group at its own address that the others never "
        "join",
        "Give every node the same init address and port: node rank 0's IP (--master_addr / --rdzv_endpoint, "
        "SGLang's --dist-init-addr / --nccl-init-addr, --init_method tcp://, MASTER_ADDR), reachable from the others.",
        ev, "the nodes' own launch commands name different addresses",
        {"value": ", ".join(f"{h}:{p}" if p else h for _, (h, p) in sorted(named.items())[:16])})]


def _loopback_rendezvous(run: Run) -> list[Finding]:
    """A job across machines whose processes look for the rendezvous store at a loopback address (``rules.init_address``:
    c10d's client failing to reach localhost / 127.x, and the input stating more than one node or a rank past its local
    rank), no communicator up, no collective run and no failure but the store's: each machine's processes wait on a
    store of their own (or none) and the group never forms. A setting of the launch (MASTER_ADDR), no culprit rank."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    store = [e for e in run.events if e.kind in (EventKind.C10D_LINE, EventKind.DIST_ERROR)
             and LOOPBACK_CONNECT_RE.search(e.text)]
    if any(e.kind == EventKind.DIST_ERROR and e not in store for e in run.events):
        return []  # another failure first: the store's host may simply have died
    if (len(store) < 2 and not any(e.kind == EventKind.DIST_ERROR for e in store)) or run.job.exit_code == 0:
        return []  # one refused connect while the store came up is no stall: retries or the time-out are
    nodes = max(run.job.nnodes or 0, len(run.job.hosts))
    targets = loopback_rendezvous([e.text for e in store], [e.text for e in run.events], nodes)
    if not targets:
        return []
    named = ", ".join(targets[:4]) + (" and more" if len(targets) > 4 else "")
    return [_setup_fault(
        f"the processes of a job across machines look for the rendezvous store at a loopback address ({named}): "
        "MASTER_ADDR (or the init method's host) set to localhost / 127.0.0.1 lets each machine reach only itself, so "
        "the process group never forms" + (" (and its processes name different ports)" if len({t.rsplit(':', 1)[1] for t in targets}) > 1 else ""),
        "Give every rank the same MASTER_ADDR, the address of the node of rank 0 on the network the nodes share (under "
        "Slurm the first host of `scontrol show hostnames $SLURM_JOB_NODELIST`), and one MASTER_PORT chosen once for "
        "the whole job, not a free port per process.",
        [e.evidence for e in store], "c10d's client failing to reach a loopback address while the ranks span machines",
        {"count": len(store)})]


def _environment_not_on_every_host(run: Run) -> list[Finding]:
    """Settings NCCL reports on some hosts only (``rules.environment.quiet_hosts``): in one console, the processes of
    some hosts print NCCL's lines and its ``X set by environment`` lines, while a process of another host fails in an
    NCCL call without a line of NCCL's: NCCL_DEBUG, and with it the settings, never reached that host (a shell's
    variables in front of mpirun stay on the launching host). The settings NCCL reported are the ones the other hosts
    lacked: a config error of the launch, no culprit rank."""
    named = [s for s in run.job.settings.values() if s.source == "nccl-log" and not s.name.startswith("NCCL_DEBUG")]
    if not named:
        return []
    failures = [(m.group("host"), e) for e in run.events if e.kind == EventKind.DIST_ERROR
                and (m := TEST_FAILURE_HOST_RE.match(e.text)) is not None]
    if not failures:
        return []  # no host failed in NCCL: none can be quiet, and no line's head need be read
    printing = {proc.rsplit(":", 1)[0] for e in run.events if e.evidence is not None
                and (proc := process_of(e.evidence.text)) is not None}
    quiet = quiet_hosts(printing, (p.host for p in run.job.processes if p.host), (h for h, _ in failures))
    if not quiet:
        return []
    values = ", ".join(f"{s.name}={s.value}" for s in named[:4])
    hosts = ", ".join(quiet[:4]) + (" and more" if len(quiet) > 4 else "")
    shown = ", ".join(sorted(printing)[:4])
    return [_setup_fault(
        f"the job's NCCL settings reached some of its hosts only: NCCL on {shown} reports {values} set by the "
        f"environment, while the processes on {hosts}, which failed in NCCL, printed none of NCCL's lines: they ran "
        "without NCCL_DEBUG and without these settings (variables set in front of the launcher stay on the launching "
        "host)",
        "Give every rank the same environment: Open MPI's mpirun forwards only what -x names (mpirun -x NCCL_DEBUG -x "
        + " -x ".join(s.name for s in named[:4]) + " ...), MPICH / Intel MPI take -genv NAME VALUE, srun passes the "
        "caller's environment unless --export says otherwise; or export the variables in a script every rank runs.",
        [s.evidence for s in named] + [e.evidence for h, e in failures if h in quiet],
        "NCCL's own lines on some hosts and none from a host whose NCCL call failed in the same console",
        {"settings": [s.name for s in named], "hosts": list(quiet)})]


BATCH_SIGNS = ("#SBATCH", "slurmstepd", "srun: ")  # the input is a Slurm batch job's: its output file gathers every node's


def _first_node_only(run: Run) -> list[Finding]:
    """A Slurm batch job for several nodes whose output holds the rank claims of the first node's processes only
    (``rules.launch.first_node_only``), none of another node's, no communicator up, no collective and no failure: the
    other nodes never ran the program (a batch script calls it without srun, so it runs on the allocation's first node
    only) and the first node's ranks wait for them. A setting of the launch, no culprit rank."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    if any(e.kind == EventKind.DIST_ERROR for e in run.events):
        return []
    if not any(e.evidence is not None and any(w in e.evidence.text for w in BATCH_SIGNS) for e in run.events):
        return []
    claims = [e for e in run.events if e.kind == EventKind.RANK_CLAIM and e.rank is not None]
    one = first_node_only((e.rank for e in claims if e.rank is not None), run.job.world_size, run.job.nnodes)
    if one is None:
        return []
    return [_setup_fault(
        f"only the first node's processes ever started: ranks 0-{one.per_node - 1} of a world of {one.world} on "
        f"{one.nodes} nodes announced themselves and no process of the other nodes did, in a batch job's output that "
        "gathers every node's; the first node's ranks wait at init for ranks that were never launched (a batch script "
        "that starts the program without srun runs it on the first node of the allocation only)",
        "Start the program through srun in the batch script (`srun python train.py ...`) with `#SBATCH --nodes` and "
        "`--ntasks-per-node` matching the trainer's num_nodes and devices, so that every node runs its processes; "
        "with torchrun, run one torchrun per node under srun.",
        [e.evidence for e in claims[:3]], "the rank claims of exactly the first node's processes in a batch job's "
        "output, none of another node's", {"world_size": one.world})]


def _node_rank_fixed(run: Run) -> list[Finding]:
    """One srun line that runs a launcher for several machines with a node rank written out (``rules.launch.
    fixed_node_rank``: the batch shell expanded $SLURM_PROCID or $SLURM_NODEID once, before srun), no communicator
    up and no collective run: every node's launcher claims the same node rank and the rendezvous never completes. A
    setting of the launch, no culprit rank."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    lines = {e.evidence.text: e.evidence for e in run.events if e.evidence is not None and "srun" in e.evidence.text}
    found = fixed_node_rank(lines)
    if found is None:
        return []
    flag, line = found
    return [_setup_fault(
        f"one srun command runs the launcher on every node with the same node rank ({flag}): each node's launcher "
        "claims that rank (machine_rank / node_rank) and waits at the rendezvous for the nodes of the other ranks, "
        "which never come (the batch shell expanded the rank once, before srun started the tasks)",
        "Let each task compute its own rank: quote the command so that srun's task expands it (srun bash -c "
        "'accelerate launch --machine_rank $SLURM_NODEID ...' in single quotes, or a script that reads SLURM_NODEID), "
        "or use torchrun's rendezvous (--rdzv_backend c10d --rdzv_endpoint host:port), which needs no node rank.",
        [lines[line]], "one launch line for every node with a node rank written out", {})]


def _node_rank_shared(run: Run) -> list[Finding]:
    """Machines whose launchers each said they run as the same node rank of a job of several nodes
    (``rules.launch.shared_node_rank``), no communicator up and no collective run: a setting of the launch."""
    if any(c.init_complete for c in run.communicators) or len(run.collectives):
        return []
    said = [e for e in run.events if e.kind == EventKind.NODE_RANK_STATED]
    found = shared_node_rank((int(e.data.get("nnodes") or 0), int(e.data.get("node_rank") or 0),
                              str(e.data.get("machine") or "")) for e in said)
    if found is None:
        return []
    ev = [e.evidence for e in said if e.data.get("node_rank") == found.node_rank][:3]
    return [_setup_fault(
        f"{len(found.machines)} machines ({', '.join(found.machines)}) each started as node rank {found.node_rank} of a "
        f"{found.nnodes}-node job: each waits at the rendezvous for nodes of the other ranks, which never come",
        "Give every machine its own node rank (NODE_RANK / --node_rank / --machine_rank: 0 on the master, 1..N-1 on the "
        "others; LLaMA-Factory reads NODE_RANK, not RANK) and the same master address and port on all of them, or use "
        "torchrun's rendezvous (--rdzv_backend c10d --rdzv_endpoint host:port), which needs no node rank.",
        ev, "each machine's launcher said which node it runs as", {})]


def _entry(text: str) -> str | None:
    k = classify(text)
    return k.id if k is not None else None


def _after(a: Failure, b: Failure) -> bool:
    """``a`` is known to come after ``b``: by the clock where both are timed, else by the lines of one file."""
    if a.t is not None and b.t is not None:
        return a.t > b.t
    return bool(a.order[0]) and a.order[0] == b.order[0] and a.order[1] > b.order[1]


def _area(text: str) -> str | None:
    k = classify(text)
    return k.area if k is not None else None


def _note(s: Setting, msg: str, hint: str, sev: Severity) -> Finding:
    return Finding(kind=FindingKind.CONFIG, severity=sev, message=msg, hint=hint, evidence=(s.evidence,) if s.evidence else (), data={"settings": [s.name], "value": s.value, "source": s.source})


def _int(s: Setting | None) -> int | None:
    if s is None:
        return None
    try:
        return int(s.value.strip().rstrip("."))
    except ValueError:
        return None
