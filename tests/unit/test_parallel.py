"""How a range of versions is cut into segments for the parallel walkers
(tracker.compare.parallel): contiguous, covering, and with the smallest largest cost."""

from __future__ import annotations

from itertools import combinations, pairwise

from hypothesis import given
from hypothesis import strategies as st

from tracker.compare.parallel import ANALYSIS_COST, split_segments, version_costs


def test_a_version_costs_its_files_first_and_then_what_changed_since_the_one_before() -> None:
    files = [{("a", True), ("b", False)}, {("a", True), ("c", False)}, {("a", True)}]
    assert version_costs(files) == [
        (2 + ANALYSIS_COST, 2 + ANALYSIS_COST),
        (2 + ANALYSIS_COST, 1 + ANALYSIS_COST),  # c is new; b is gone, which costs nothing
        (1 + ANALYSIS_COST, 0 + ANALYSIS_COST),
    ]


def _segment_cost(costs: list[tuple[int, int]], segment: range) -> int:
    return costs[segment[0]][0] + sum(costs[i][1] for i in segment[1:])


def _best_by_brute_force(costs: list[tuple[int, int]], runs: int) -> int:
    n = len(costs)
    best = None
    for k in range(1, min(runs, n) + 1):
        for cuts in combinations(range(1, n), k - 1):
            bounds = [0, *cuts, n]
            worst = max(_segment_cost(costs, range(a, b)) for a, b in pairwise(bounds))
            best = worst if best is None else min(best, worst)
    assert best is not None
    return best


costs_strategy = st.lists(
    st.tuples(st.integers(1, 400), st.integers(0, 200)).map(lambda c: (max(c), c[1])),
    min_size=1,
    max_size=9,
)


@given(costs_strategy, st.integers(1, 4))
def test_segments_are_contiguous_cover_every_version_and_minimise_the_largest_cost(
    costs: list[tuple[int, int]], runs: int
) -> None:
    segments = split_segments(costs, runs)
    assert 1 <= len(segments) <= runs
    assert [i for s in segments for i in s] == list(range(len(costs)))
    assert all(len(s) > 0 for s in segments)
    worst = max(_segment_cost(costs, s) for s in segments)
    assert worst == _best_by_brute_force(costs, runs)


def test_one_segment_when_one_is_asked_for() -> None:
    assert split_segments([(10, 3), (10, 4), (10, 5)], 1) == [range(3)]
    assert split_segments([], 2) == []
