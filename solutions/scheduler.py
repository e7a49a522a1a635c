"""Task 2: the two decisions that turn synchronous RL into asynchronous RL.

Symbols (the chapter's): B = responses per training batch, k = staleness
bound (how many versions the generators may run ahead of the trainer),
version = number of updates the trainer has finished, tag = the version a
response was generated with, lag = version - tag when it is trained.

A response is a dict: id, tag, start, end, length, lag (None until trained),
dropped (True once thrown away as stale). The event loop that calls your two
functions is in scheduler_core.py; `simulate` at the bottom runs it.
"""
import numpy as np

from lab.input_checks import at_least, whole_at_least
from scheduler_core import run_simulation


def may_start(n_started, n_dropped, version, k, B):
    """Admission control: may a free lane start one more response now?

        True  iff  n_started - n_dropped < (version + k + 1) * B

    n_started - n_dropped counts the responses that are, or can still be, trained.
    The trainer has consumed version * B of them; on top of the batch it needs
    next, the lanes may work k batches ahead. With k = 0 the lanes stop after
    B responses and wait for the update: that is synchronous RL.

    Example: B = 4, k = 0, version 0: True for n_started = 0..3, False at 4.
    With k = 1 the same lanes may start 8 before the first update.
    Returns a bool.
    """
    # BEGIN SOLUTION task2a
    # HINT: dropped responses will never be trained, so they free their place.
    return n_started - n_dropped < (version + k + 1) * B
    # END SOLUTION


def take_batch(finished, version, k, B, drop_stale=False):
    """The trainer's turn: maybe drop stale responses, then take the oldest B.

    `finished` is the first-in, first-out list of finished responses. Change
    it in place (remove what you take) and return (batch, dropped):
      1. If drop_stale: remove every response with version - tag > k, set its
         "dropped" to True, and collect it in the list `dropped` (any order;
         dropped = [] when drop_stale is False).
      2. If at least B responses remain: remove the first B, set each one's
         "lag" to version - tag, and return them as the list `batch` (oldest
         first). Otherwise batch is None and the rest stay in `finished`.

    Example: version 3, k = 1, tags in `finished` [3, 1, 2, 2], B = 2,
    drop_stale=True: the tag-1 response (lag 2 > k) is dropped, the batch is
    the first two of [3, 2, 2] with lags [0, 1], and [2] stays behind.
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


def simulate(n_lanes, B, k, *, n_steps=200, train_time=1.0, sigma=1.25, lengths=None,
             drop_stale=False, seed=0):
    """Run the rollout simulator with your may_start and take_batch (given).

    Response lengths are `lengths` (time units, in start order) if given;
    free lanes stay idle once they run out. Otherwise they are drawn from a
    lognormal distribution with mean 1 and shape `sigma` (a heavy tail: with
    sigma = 1.25 about one response in 20 is over 4 times the mean), seeded
    by `seed` so the same call always gives the same run.

    Returns a dict: time, throughput (responses trained per time unit),
    utilization (fraction of lane-time spent generating), mean_lag, lag_p95
    and max_lag (of the trained responses), wasted_frac (fraction of
    generation time spent on dropped responses), updates ((start, end) of each
    update), trace (every response dict).

    Example: simulate(2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])["time"] == 6.
    """
    whole_at_least("n_lanes", n_lanes, 1)
    whole_at_least("B", B, 1)
    whole_at_least("k", k, 0)
    whole_at_least("n_steps", n_steps, 1)
    at_least("train_time", train_time, 0)
    at_least("sigma", sigma, 0)
    if lengths is None:
        lengths = _lognormal_lengths(sigma, seed)
    else:
        if any(not length > 0 for length in lengths):
            raise ValueError(f"lengths must all be > 0, got {list(lengths)!r}")
        lengths = iter(lengths)
    return run_simulation(n_lanes, B, k, n_steps, train_time, lengths,
                          may_start, take_batch, drop_stale)


def _lognormal_lengths(sigma, seed):
    """Endless lognormal response lengths with mean 1 (drawn in blocks, for speed)."""
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.lognormal(-sigma**2 / 2, sigma, size=4096).tolist()
