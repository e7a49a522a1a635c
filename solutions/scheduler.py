"""Task 2: the two decisions that turn synchronous RL into asynchronous RL.

Symbols (the chapter's): B = responses per training batch, k = staleness
bound (how many versions the generators may run ahead of the trainer),
version = number of updates the trainer has finished, tag = the version a
response was generated with, lag = version - tag when it is trained.

A response is a dict: id, tag, start, end, length, lag (None until trained),
dropped (True once thrown away as stale). The event loop that calls your two
functions is in scheduler_core.py; `simulate` at the bottom runs it. The line
above each of your functions (given) checks its arguments: write only the rule.
"""

import numpy as np

import scheduler_core
from lab import contracts
from lab.input_checks import Whole, checked


@checked(contracts.may_start)
def may_start(
    n_started: Whole, n_dropped: Whole, version: Whole, k: Whole, B: Whole
) -> bool | np.bool_:
    """Admission control: may a free lane start one more response now?

        True  iff  n_started - n_dropped < (version + k + 1) * B

    n_started - n_dropped counts the responses that are, or can still be, trained. The
    trainer has consumed version * B of them; on top of the batch it needs next, the lanes
    may work k batches ahead. With k = 0 the lanes stop after B responses and wait for the
    update: that is synchronous RL.

    Args:
        n_started, n_dropped (int): responses started so far, and of those dropped as stale.
        version, k, B (int): as at the top of this file; version >= 0, k >= 0, B >= 1.

    Returns:
        bool: True if the lane may start (numpy's np.True_ and np.False_ count as bools).

    Example: B = 4, k = 0, version 0: True for n_started = 0..3, False at 4. With k = 1 the
    same lanes may start 8 before the first update.
    """
    # BEGIN SOLUTION task2a
    # HINT: dropped responses will never be trained, so they free their place.
    return n_started - n_dropped < (version + k + 1) * B
    # END SOLUTION


@checked(contracts.take_batch)
def take_batch(
    finished: list[dict],
    version: Whole,
    k: Whole,
    B: int | np.integer,
    drop_stale: bool | np.bool_ = False,
) -> tuple[list[dict] | None, list[dict]]:
    """The trainer's turn: maybe drop stale responses, then take the oldest B.

      1. If drop_stale: remove each response with version - tag > k from `finished`, set its
         "dropped" to True and collect it in `dropped` (any order), whether or not a batch follows.
      2. Then, if at least B responses remain: remove the first B and set each one's "lag"
         to version - tag: they are `batch`. Otherwise batch is None.

    Args:
        finished (list[dict]): the finished responses, first in, first out (the order they
            finished in). Change it in place, keeping the order of the rest.
        version, k, B (int): as at the top of this file; version >= 0, k >= 0, B >= 1.
        drop_stale (bool): whether to drop the stale responses.

    Returns:
        tuple: (batch, dropped), lists of the very dicts that were in `finished`: batch
            oldest first, or None; dropped [] without drop_stale.

    Example: version 3, k = 1, B = 2, drop_stale=True, tags in `finished` [3, 1, 2, 2]: the
    tag-1 response (lag 2 > k) is dropped, the batch is tags [3, 2] (lags 0, 1), [2] stays.
    """
    # BEGIN SOLUTION task2b
    # HINT: a response with lag exactly k is still fresh enough to train on.
    dropped = []
    if drop_stale:
        dropped = [r for r in finished if version - r["tag"] > k]
        finished[:] = [r for r in finished if version - r["tag"] <= k]
        for r in dropped:
            r["dropped"] = True
    if len(finished) < B:
        return None, dropped
    batch = finished[:B]
    del finished[:B]
    for r in batch:
        r["lag"] = version - r["tag"]
    return batch, dropped
    # END SOLUTION


def simulate(
    n_lanes,
    B,
    k,
    *,
    n_steps=200,
    train_time=1.0,
    sigma=1.25,
    lengths=None,
    drop_stale=False,
    seed=0,
):
    """Run the rollout simulator with your may_start and take_batch (given).

    Lengths are `lengths` (time units, in start order) if given, else lognormal
    with mean 1 and shape `sigma`, seeded by `seed`: see scheduler_core.simulate.
    Returns a dict: time, throughput (responses trained per time unit),
    utilization (fraction of lane-time spent generating), mean_lag, lag_p95 and
    max_lag (of the trained responses), wasted_frac (fraction of generation time
    spent on dropped responses), updates ((start, end) of each update), trace
    (every response dict).

    Example: simulate(2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])["time"] == 6.
    """
    settings = scheduler_core.LaneSettings(n_lanes, B, k, n_steps, train_time, drop_stale)
    return scheduler_core.simulate(may_start, take_batch, settings, lengths, sigma, seed)
