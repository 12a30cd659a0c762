"""Each communicator compared with its counterpart (``common.pair_communicators``): the transports its channels
run over, its channel count, its rings and trees; and the longest communicator init NCCL reported."""
from __future__ import annotations

from ..metrics.busbw import transport_class
from ..model import Communicator, Evidence, Run, Setting
from ..rules.facts import TIMINGS_EVENT, TOTAL_RE
from .common import diff, pair_communicators
from .model import Aspect, Difference, Direction, Side, Tier
from .score import INIT_MIN_S, INIT_RATIO, REST_WEIGHT, TRANSPORT_ORDER, transport_rank

# the setting that switches off a link class, so that a run that lost the class says why
SWITCHED_OFF_BY = {"P2P/NVLink": "NCCL_P2P_DISABLE", "SHM": "NCCL_SHM_DISABLE", "NET/IB": "NCCL_IB_DISABLE"}


def channel_transports(c: Communicator) -> str:
    """A communicator's channels by transport: ``P2P/CUMEM on 24 channels``; ``NET/IB on 16 channels,
    P2P/CUMEM on 16 channels`` where channels use several."""
    per: dict[str, set[int]] = {}
    for conn in c.connections:
        per.setdefault(conn.transport, set()).add(conn.channel)
    return ", ".join(f"{t} on {len(chs)} channel{'s' if len(chs) != 1 else ''}" for t, chs in sorted(per.items()))


def _slowest(c: Communicator) -> str:
    classes = {transport_class(t) for t in c.transports} or {"unknown"}
    return max(classes, key=transport_rank)


def _v(s: Setting) -> str:
    return s.value.strip().rstrip(".")


def _cause(lost: set[str], had: dict[str, Setting], lost_by: dict[str, Setting]) -> list[Setting]:
    """The settings of the run that lost link classes (``lost_by``) that switch them off (``SWITCHED_OFF_BY``),
    where the run that had them did not set them alike."""
    out = []
    for cls in sorted(lost):
        name = SWITCHED_OFF_BY.get(cls)
        s = lost_by.get(name) if name else None
        if s is not None and _v(s) not in ("0", "") and (name not in had or _v(had[name]) != _v(s)):
            out.append(s)
    return out


def _transport(role: str, ca: Communicator, cb: Communicator, a: Run, b: Run) -> Difference | None:
    if ca.transports == cb.transports or not ca.transports or not cb.transports:
        return None
    ra, rb = transport_rank(_slowest(ca)), transport_rank(_slowest(cb))
    direction = Direction.SLOWER if rb > ra else Direction.FASTER if rb < ra else Direction.CHANGED
    lost = {transport_class(t) for t in ca.transports} - {transport_class(t) for t in cb.transports}
    gained = {transport_class(t) for t in cb.transports} - {transport_class(t) for t in ca.transports}
    why = "; ".join([f"{s.name}={_v(s)} in B" for s in _cause(lost, a.job.settings, b.job.settings)]
                    + [f"{s.name}={_v(s)} in A" for s in _cause(gained, b.job.settings, a.job.settings)])
    ea = _first(ca, [t for t in ca.transports if t not in cb.transports] or ca.transports)
    eb = _first(cb, [t for t in cb.transports if t not in ca.transports] or cb.transports)
    ta, tb = channel_transports(ca), channel_transports(cb)
    return diff(Aspect.TRANSPORT, Tier.TRANSPORT, abs(rb - ra) / (len(TRANSPORT_ORDER) - 1), f"transports of {role}",
                Side(", ".join(ca.transports), ea), Side(", ".join(cb.transports), eb),
                f"{role} runs over {ta} -> {tb}" + (f" (behind it: {why})" if why else ""), direction)


def _first(c: Communicator, transports: list[str]) -> Evidence | None:
    lines = [c.transport_lines[t] for t in transports if t in c.transport_lines]
    return min(lines, key=lambda e: (e.file, e.line)) if lines else None


def _channels(role: str, ca: Communicator, cb: Communicator) -> Difference | None:
    if ca.n_channels == cb.n_channels or ca.n_channels is None or cb.n_channels is None:
        return None
    direction = Direction.SLOWER if cb.n_channels < ca.n_channels else Direction.FASTER
    return diff(Aspect.CHANNELS, Tier.REST, REST_WEIGHT["channels"], f"channels of {role}",
                Side(str(ca.n_channels), ca.ring_line), Side(str(cb.n_channels), cb.ring_line),
                f"{role} has {ca.n_channels} -> {cb.n_channels} channels", direction)


def _shape(role: str, ca: Communicator, cb: Communicator) -> list[Difference]:
    """Rings and trees of communicators of one size: their distinct orders (edges) differ."""
    if ca.nranks != cb.nranks:
        return []  # a job of another size has other rings: the layout line says it
    out = []
    ring_a, ring_b = ca.unique_rings(), cb.unique_rings()
    if ring_a and ring_b and sorted(ring_a) != sorted(ring_b):
        out.append(diff(Aspect.RINGS, Tier.REST, REST_WEIGHT["rings"], f"rings of {role}",
                        Side(_orders(ring_a), ca.ring_line), Side(_orders(ring_b), cb.ring_line),
                        f"{role}: ring orders differ ({len(ring_a)} distinct -> {len(ring_b)} distinct)"))
    tree_a, tree_b = ca.unique_trees(), cb.unique_trees()
    if tree_a and tree_b and sorted(tree_a) != sorted(tree_b):
        out.append(diff(Aspect.TREES, Tier.REST, REST_WEIGHT["trees"], f"trees of {role}",
                        Side(f"{len(tree_a)} distinct", ca.tree_line), Side(f"{len(tree_b)} distinct", cb.tree_line),
                        f"{role}: trees differ ({len(tree_a)} distinct -> {len(tree_b)} distinct)"))
    return out


def _orders(rings: list[list[int]]) -> str:
    first = " ".join(map(str, rings[0][:16])) + (" ..." if len(rings[0]) > 16 else "")
    return first + (f" (+{len(rings) - 1} more)" if len(rings) > 1 else "")


def communicators(a: Run, b: Run) -> list[Difference]:
    """Transports, channels, rings and trees of each communicator against its counterpart."""
    out: list[Difference] = []
    for role, ca, cb in pair_communicators(a, b):
        if ca is None or cb is None:
            continue
        t = _transport(role, ca, cb, a, b)
        out += [t] if t else []
        ch = _channels(role, ca, cb)
        out += [ch] if ch else []
        out += _shape(role, ca, cb)
    return out


def _longest_init(run: Run) -> tuple[float, Evidence] | None:
    best: tuple[float, Evidence] | None = None
    for e in run.events:
        if e.kind == TIMINGS_EVENT:
            m = TOTAL_RE.search(e.text)
            if m and (best is None or float(m.group(1)) > best[0]):
                best = (float(m.group(1)), e.evidence)
    return best


def init_time(a: Run, b: Run) -> list[Difference]:
    """The longest communicator init of each run (NCCL 2.23+'s ``Init timings`` lines), when one is at least
    ``INIT_RATIO`` times and ``INIT_MIN_S`` longer than the other."""
    ia, ib = _longest_init(a), _longest_init(b)
    if ia is None or ib is None:
        return []
    (sa, ea), (sb, eb) = ia, ib
    lo, hi = sorted((sa, sb))
    if hi - lo < INIT_MIN_S or hi < INIT_RATIO * lo:
        return []
    return [diff(Aspect.INIT_TIME, Tier.REST, REST_WEIGHT["init_time"], "communicator init",
                 Side(f"{sa:.2f} s", ea), Side(f"{sb:.2f} s", eb),
                 f"the longest communicator init took {sa:.2f} s -> {sb:.2f} s",
                 Direction.SLOWER if sb > sa else Direction.FASTER)]

