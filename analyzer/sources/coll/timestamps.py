"""Timestamps of NCCL lines (``NCCL_DEBUG_TIMESTAMP_FORMAT``, 2.26+) as seconds since the epoch:
one text at a time (``parse_ts``) or a column of them (``ts_column``, ``ts_fast``), the same value
either way."""
from __future__ import annotations

import calendar
import functools
import time

import numpy as np


def parse_ts(text: str | None) -> float | None:
    if not text:
        return None
    frac = 0.0
    base = text.replace("T", " ").replace("_", " ")
    if "." in base:
        base, f = base.split(".", 1)
        try:
            frac = float("0." + f)
        except ValueError:
            frac = 0.0
    whole = _whole_seconds(base)
    return None if whole is None else whole + frac


@functools.lru_cache(maxsize=4096)
def _whole_seconds(base: str) -> int | None:
    """Seconds since the epoch of ``YYYY-MM-DD HH:MM:SS``; cached, since a log's lines share a few
    thousand seconds and ``strptime`` costs tens of microseconds a call."""
    try:
        return calendar.timegm(time.strptime(base, "%Y-%m-%d %H:%M:%S"))
    except ValueError:
        return None


def ts_column(raw: np.ndarray) -> np.ndarray:
    out = np.full(len(raw), np.nan)
    have = raw != b""
    if not have.any():
        return out
    sel = raw[have]
    vals = np.empty(len(sel))
    # numpy (2.x) crashes the process when a string -> datetime64 cast of more than a few thousand
    # bytes meets a bad value (an hour 25); small pieces raise ValueError instead
    for lo in range(0, len(sel), _TS_CHUNK):
        part = sel[lo:lo + _TS_CHUNK]
        try:
            vals[lo:lo + len(part)] = part.astype("datetime64[us]").astype(np.int64) / 1e6
        except ValueError:  # "_" between date and time, a bad field: each value alone, so that a
            vals[lo:lo + len(part)] = [_one_ts(x) for x in part.tolist()]  # value never depends on its neighbours
    out[have] = vals
    return out


def _one_ts(raw: bytes) -> float:
    try:
        return float(np.array([raw]).astype("datetime64[us]").astype(np.int64)[0] / 1e6)
    except ValueError:
        return parse_ts(raw.decode("utf-8", "replace")) or np.nan


_TS_CHUNK = 64


_TS_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]


def ts_fast(ts: tuple[bytes, ...] | list[bytes]) -> np.ndarray:
    """Timestamps as seconds since the epoch; ``YYYY-MM-DD HH:MM:SS[.f{1,6}]`` of one length, the usual
    case, is read as a byte matrix; anything else goes through ``_ts_column`` (same values either way)."""
    n = len(ts)
    width = len(ts[0])
    joined = b"".join(ts)
    if not (19 <= width <= 26 and width != 20 and len(joined) == n * width
            and all(len(x) == width for x in (ts[-1], ts[n // 2]))):
        return ts_column(np.array(ts))
    lens = np.fromiter(map(len, ts), dtype=np.int32, count=n)
    if (lens != width).any():
        return ts_column(np.array(ts))
    return ts_fast_matrix(np.frombuffer(joined, dtype=np.uint8).reshape(n, width))


def ts_fast_matrix(m: np.ndarray) -> np.ndarray:
    """``_ts_fast`` of timestamps given as a (rows, width) uint8 matrix."""
    n, width = m.shape
    if not (19 <= width <= 26 and width != 20):
        return ts_column(m.copy().view(f"S{width}").ravel())
    d = m[:, _TS_DIGITS].astype(np.int64) - 48
    frac_digits = m[:, 20:].astype(np.int64) - 48 if width > 19 else np.zeros((n, 0), dtype=np.int64)
    seps_ok = ((m[:, 4] == 45) & (m[:, 7] == 45) & (m[:, 10] == 32) & (m[:, 13] == 58) & (m[:, 16] == 58)).all()
    if width > 19:
        seps_ok = seps_ok and bool((m[:, 19] == 46).all())
    rows = m.copy().view(f"S{width}").ravel
    if not seps_ok or ((d < 0) | (d > 9)).any() or ((frac_digits < 0) | (frac_digits > 9)).any():
        return ts_column(rows())
    hh, mi, ss = d[:, 8] * 10 + d[:, 9], d[:, 10] * 10 + d[:, 11], d[:, 12] * 10 + d[:, 13]
    if (hh > 23).any() or (mi > 59).any() or (ss > 59).any():
        return ts_column(rows())
    if (m[:, :10] == m[0, :10]).all():  # one day: the usual case, no sort
        dates, date_code = m[:1, :10].copy().view("S10").ravel(), np.zeros(n, dtype=np.int64)
    else:
        dates, date_code = np.unique(m[:, :10].copy().view("S10").ravel(), return_inverse=True)
    try:
        days = dates.astype("datetime64[D]").astype(np.int64)
    except ValueError:
        return ts_column(rows())
    us = np.zeros(n, dtype=np.int64)
    for k in range(frac_digits.shape[1]):
        us += frac_digits[:, k] * 10 ** (5 - k)
    total = ((days[date_code.ravel()] * 86400 + hh * 3600 + mi * 60 + ss) * 1_000_000 + us)
    return total / 1e6
