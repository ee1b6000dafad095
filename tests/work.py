"""Work counted, not timed: how the tests check that a scan stays linear on hostile input.

The number of Python-level calls a function makes does not depend on how busy the machine is
(wall time lives in benchmarks/, which print it). Four times the text may cost about four times
the calls; a quadratic scan would cost sixteen. A regular expression that backtracks
catastrophically runs inside C, where no call is counted, but on 64 KiB it does not finish at
all, so the test does not either.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

# Whole <= GROWTH x quarter + SLACK: room for per-call constants (caches filled on the first
# call, a fixed number of patterns tried per text) without letting a quadratic scan through.
GROWTH = 6
SLACK = 20_000


def python_calls(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """The Python-level function calls `fn(*args, **kwargs)` makes."""
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(count)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return calls


def assert_linear_work(fn: Callable[[Any], Any], whole: Any, quarter: Any | None = None) -> None:
    """fn(whole) makes at most about four times the calls of fn(quarter) (default: the first
    quarter of `whole`, a str or a list)."""
    if quarter is None:
        quarter = whole[: len(whole) // 4]
    fn(quarter)  # warm: caches and lazily loaded tables count once, not in the comparison
    small, large = python_calls(fn, quarter), python_calls(fn, whole)
    assert large <= GROWTH * small + SLACK, (
        f"{small} calls for a quarter of the input, {large} for all of it"
    )
