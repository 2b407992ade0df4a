"""Progress on stderr for the steps that take seconds on the board's Cortex-A9 (importing pynq,
loading a bitstream, the weight image into DDR, preprocessing, a benchmark)."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager


@contextmanager
def step(text: str, enabled: bool = True):
    """``zynqflow: <text> ...`` and, when it ends, how long it took."""
    if not enabled:
        yield
        return
    t = time.perf_counter()
    print(f"zynqflow: {text} ...", file=sys.stderr, flush=True)
    yield
    print(f"zynqflow: {text}: done ({time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)


def bar(i: int, n: int, text: str) -> None:
    """A one-line bar, redrawn in place on a terminal, a line every 10 % otherwise."""
    if n < 2:
        return
    tty = sys.stderr.isatty()
    if not tty and i not in (1, n) and i % max(1, n // 10):
        return
    filled = 30 * i // n
    line = f"zynqflow: {text} [{'#' * filled}{'.' * (30 - filled)}] {i}/{n}"
    print(("\r" + line) if tty else line, end="\n" if (i == n or not tty) else "", file=sys.stderr, flush=True)
