"""The sampling-noise intervals `make eval` prints beside grouped CV and the sealed slice."""

from __future__ import annotations

import math

from training.report import bootstrap_interval, interval_line


def share(rows: list[int]) -> float:
    return sum(rows) / len(rows)


def test_interval_is_seeded_and_holds_the_figure() -> None:
    rows = [1] * 9 + [0] * 6  # 9 of 15, the size of a small sealed slice
    lo, hi = bootstrap_interval(rows, share, seed=7)
    assert (lo, hi) == bootstrap_interval(rows, share, seed=7)
    assert lo < 0.6 < hi
    # 15 threads cannot tell 0.60 from 0.75: the interval is wide
    assert hi - lo > 0.3


def test_interval_narrows_with_more_threads() -> None:
    small = bootstrap_interval([1] * 9 + [0] * 6, share, seed=1)
    large = bootstrap_interval([1] * 90 + [0] * 60, share, seed=1)
    assert large[1] - large[0] < (small[1] - small[0]) / 2


def test_constant_figure_has_no_spread_and_empty_set_has_none() -> None:
    assert bootstrap_interval([1, 1, 1], share, seed=0) == (1.0, 1.0)
    assert all(math.isnan(v) for v in bootstrap_interval([], share, seed=0))


def test_interval_line_names_each_column() -> None:
    assert interval_line("kind", [("cv_all", 0.849, (0.78, 0.906)), ("sealed", 0.6, (0.333, 0.867))]) == (
        "  kind: cv_all 0.849 [0.780, 0.906]; sealed 0.600 [0.333, 0.867]"
    )
