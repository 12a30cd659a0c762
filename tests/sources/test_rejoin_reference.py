"""``rejoin_wrapped`` keeps the held lines' widths as it holds them; its output is the one of the plain
reference below (widths measured again at every line) on random runs of wrapped, short, long, blank
and line-starting pieces."""
from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator

import pytest

from ncclscope.sources.lines import MAX_WRAP_PIECES, WRAP_MAX, WRAP_MIN, rejoin_wrapped, starts_a_line


def _width(text: str) -> int:
    return len(text.rstrip("\r\n"))


def reference(lines: Iterable[tuple[int, str]], accept: Callable[[str, str], bool]) -> Iterator[tuple[int, str]]:
    held: list[tuple[int, str]] = []

    def flush() -> Iterator[tuple[int, str]]:
        if len(held) > 1:
            joined = "".join(t.rstrip("\r\n") for _, t in held) + "\n"
            if accept(held[0][1], joined):
                yield held[0][0], joined
                held.clear()
                return
        yield from held
        held.clear()

    for lineno, text in lines:
        w = len(text) - (text.endswith("\n") + text.endswith("\r\n"))
        if held:
            first_w = _width(held[0][1])
            last_no, last_text = held[-1]
            if (lineno == last_no + 1 and 0 < w <= first_w and _width(last_text) == first_w
                    and len(held) < MAX_WRAP_PIECES and not starts_a_line(text)):
                held.append((lineno, text))
                if w < first_w:
                    yield from flush()
                continue
            yield from flush()
        if WRAP_MIN <= w <= WRAP_MAX:
            held.append((lineno, text))
        else:
            yield lineno, text
    yield from flush()


HEAD = "gpu3:1201:1207 [0] NCCL INFO "


def _piece(rng: random.Random, width: int) -> str:
    kind = rng.random()
    if kind < 0.15:
        body = (HEAD + "x" * width)[:width]  # starts like a line of its own
    elif kind < 0.2:
        body = ""
    else:
        body = "".join(rng.choice("abc -/[]:0123") for _ in range(width))
    end = rng.choice(["\n", "\n", "\r\n", "\r\r\n", ""])
    return body + end


@pytest.mark.parametrize("seed", range(40))
def test_same_as_reference(seed: int) -> None:
    rng = random.Random(seed)
    lines: list[tuple[int, str]] = []
    lineno = 0
    for _ in range(300):
        lineno += rng.choice([1, 1, 1, 1, 2])  # gaps: lines some other reader took
        w = rng.choice([WRAP_MIN, 100, 120, WRAP_MAX, WRAP_MAX + 1, 40, rng.randint(1, 220)])
        if lines and rng.random() < 0.6:  # the same width as the line before, or shorter: a wrap's next piece
            w = min(w, len(lines[-1][1].rstrip("\r\n")) or 1)
        lines.append((lineno, _piece(rng, w)))
    accepts: list[Callable[[str, str], bool]] = [lambda a, b: True, lambda a, b: False,
                                                lambda a, b: len(b) % 2 == 0]
    assert len(list(rejoin_wrapped(iter(lines), accepts[0]))) < len(lines)  # some runs were joined
    for accept in accepts:
        assert list(rejoin_wrapped(iter(lines), accept)) == list(reference(iter(lines), accept))
