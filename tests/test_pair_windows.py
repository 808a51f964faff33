"""Which of more candidate pairs than a run may offer it offers (pipeline/rules/pair_windows.py):
the strongest half every run, and a window of the others that turns with the run's day."""

from __future__ import annotations

from math import gcd

import pytest

from pipeline.rules.pair_windows import Places, places, window_count


@pytest.mark.parametrize("every_days", [1, 2, 3, 4, 5, 6, 7, 10, 14, 30])
def test_runs_every_few_days_offer_every_pair_and_no_run_offers_more_than_its_limit(every_days):
    for found in range(0, 60):
        for limit in range(-1, 9):
            seen: set[int] = set()
            first = places(found, limit, 0)
            assert first.windows == 0 or gcd(first.windows, 210) == 1
            for turn in range(100, 100 + max(first.windows, 1) * every_days, every_days):
                run = places(found, limit, turn)
                assert (run.strongest, run.windows) == (first.strongest, first.windows)
                offered = [*run.strongest, *run.turning]
                # Every run offers as many as it may: a window past the end wraps around.
                assert len(offered) == len(set(offered)) == min(found, max(limit, 0))
                assert all(0 <= at < found for at in offered)
                assert run.window == (turn % run.windows if run.windows else 0)
                seen.update(offered)
            # A limit of at least one reaches every pair within `windows` runs, daily or not.
            assert seen == (set(range(found)) if limit > 0 else set()), (found, limit)


def test_the_strongest_half_comes_back_and_the_window_turns_a_day_at_a_time():
    # 8 others in windows of 2: 4 windows would do, 11 is the least count sharing no factor with 2-7.
    assert places(10, 4, 0) == Places(range(2), [2, 3], 0, 11)
    assert places(10, 4, 1) == Places(range(2), [4, 5], 1, 11)
    assert places(10, 4, 3) == Places(range(2), [8, 9], 3, 11)
    assert places(10, 4, 4) == Places(range(2), [2, 3], 4, 11)  # windows past the end wrap around
    assert places(10, 4, 11) == places(10, 4, 0)
    assert places(10, 5, 2) == Places(range(2), [8, 9, 2], 2, 11)  # a window filled from the first others
    assert places(3, 1, 7) == Places(range(0), [1], 7, 11)  # a limit of one: no strongest, windows of one
    assert places(5, 5, 9) == Places(range(5), [], 0, 0)
    assert places(5, 0, 9) == places(5, -3, 9) == Places(range(0), [], 0, 0)
    assert places(5, 4, -1) == Places(range(2), [4, 2], 10, 11)  # any int is a turn
    assert places(2000, 400, 5).windows == 11 and places(200_000, 400, 5).windows == 1003


def test_a_count_of_windows_sharing_a_factor_with_the_run_period_would_repeat_windows():
    # Why the count avoids 2, 3, 5 and 7: with 14 windows, runs every 7 days see two of them.
    assert {turn % 14 for turn in range(0, 700, 7)} == {0, 7}
    assert window_count(28, 2) == 17 and len({turn % 17 for turn in range(0, 7 * 17, 7)}) == 17
    assert [window_count(n, 1) for n in (1, 2, 10, 11, 12, 120, 121)] == [1, 11, 11, 11, 13, 121, 121]
