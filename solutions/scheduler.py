"""Task 2: the two decisions that turn synchronous RL into asynchronous RL.

Symbols (the chapter's): B = responses per training batch, k = staleness
bound (how many versions the generators may run ahead of the trainer),
version = number of updates the trainer has finished, tag = the version a
response was generated with, lag = version - tag when it is trained.

A response is a dict: id, tag, start, end, length, lag (None until trained),
dropped (True once thrown away as stale). The event loop that calls your two
functions is in scheduler_core.py; `simulate` at the bottom runs it.
"""
import math
import numbers
from operator import itemgetter

import numpy as np

from lab.input_checks import at_least, at_most, one_of, whole_at_least
from scheduler_core import MAX_RESPONSES, MAX_SIGMA, run_simulation


def may_start(n_started, n_dropped, version, k, B):
    """Admission control: may a free lane start one more response now?

        True  iff  n_started - n_dropped < (version + k + 1) * B

    n_started - n_dropped counts the responses that are, or can still be, trained.
    The trainer has consumed version * B of them; on top of the batch it needs
    next, the lanes may work k batches ahead. With k = 0 the lanes stop after
    B responses and wait for the update: that is synchronous RL.

    Example: B = 4, k = 0, version 0: True for n_started = 0..3, False at 4.
    With k = 1 the same lanes may start 8 before the first update.
    Returns a bool (True or False).

    The arguments are whole numbers: 0 <= n_dropped <= n_started, version >= 0,
    k >= 0, B >= 1 (checked below; anything else is a ValueError).
    """
    # The simulator calls this tens of thousands of times with plain ints: one cheap
    # test lets those through; anything else gets the full check with its message.
    if not (type(n_started) is type(n_dropped) is type(version) is type(k) is type(B) is int
            and 0 <= n_dropped <= n_started and version >= 0 and k >= 0 and B >= 1):
        _check_counts(n_started, n_dropped, version, k, B)
    # BEGIN SOLUTION task2a
    # HINT: dropped responses will never be trained, so they free their place.
    return n_started - n_dropped < (version + k + 1) * B
    # END SOLUTION


def take_batch(finished, version, k, B, drop_stale=False):
    """The trainer's turn: maybe drop stale responses, then take the oldest B.

    `finished` is the first-in, first-out list of finished responses: the order
    they finished in, which need not be the order of their ids, start times,
    lengths or tags. Change the list in place (remove what you take, keep the
    order of the rest) and return the tuple (batch, dropped):
      1. If drop_stale: remove every response with version - tag > k, set its
         "dropped" to True, and collect it in the list `dropped` (any order).
         This happens on every call, however many responses are waiting.
         dropped = [] when drop_stale is False.
      2. Then, if at least B responses remain: remove the first B, set each
         one's "lag" to version - tag, and return them as the list `batch`
         (oldest first). Otherwise batch is None and the rest stay in `finished`.
    batch and dropped hold the same dict objects that were in `finished` (not
    copies: the simulator reads their lag and dropped flag from those dicts).
    A response that is not trained (dropped, or still waiting) keeps lag None.

    Example: version 3, k = 1, tags in `finished` [3, 1, 2, 2], B = 2,
    drop_stale=True: the tag-1 response (lag 2 > k) is dropped, the batch is
    the first two of [3, 2, 2] with lags [0, 1], and [2] stays behind.

    Checked below: finished is a list of response dicts; no response whose lag
    is computed has a tag above version; version >= 0, k >= 0 and B >= 1 are
    whole numbers; drop_stale is True or False.
    """
    # As in may_start: plain ints pass one cheap test. Only the tags a lag is computed
    # from are read, so the common call (too few to train) stays cheap.
    if not (type(finished) is list and type(version) is type(k) is type(B) is int
            and version >= 0 and k >= 0 and B >= 1 and (drop_stale is False or drop_stale is True)):
        _check_batch_arguments(finished, version, k, B, drop_stale)
    if drop_stale or len(finished) >= B:
        _check_tags(finished if drop_stale else finished[:B], version)
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

    Response lengths are `lengths` (time units, in start order) if given: any
    iterable of numbers > 0 (a list, a generator, an endless itertools.cycle),
    read one at a time as lanes start; free lanes stay idle once it runs out.
    Otherwise they are drawn from a
    lognormal distribution with mean 1 and shape `sigma` (a heavy tail: with
    sigma = 1.25 about one response in 20 is over 4 times the mean), seeded
    by `seed` so the same call always gives the same run.

    Returns a dict: time, throughput (responses trained per time unit),
    utilization (fraction of lane-time spent generating), mean_lag, lag_p95
    and max_lag (of the trained responses), wasted_frac (fraction of
    generation time spent on dropped responses), updates ((start, end) of each
    update), trace (every response dict).

    Example: simulate(2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])["time"] == 6.
    Bounds: sigma <= 4, n_lanes and B * n_steps <= 10**6 (MAX_SIGMA, MAX_RESPONSES).
    """
    whole_at_least("n_lanes", n_lanes, 1)
    whole_at_least("B", B, 1)
    whole_at_least("k", k, 0)
    whole_at_least("n_steps", n_steps, 1)
    at_least("train_time", train_time, 0)
    at_least("sigma", sigma, 0)
    at_most("sigma", sigma, MAX_SIGMA, "beyond it almost every length underflows to 0")
    at_most("B * n_steps", B * n_steps, MAX_RESPONSES, "the responses trained must fit in memory")
    at_most("n_lanes", n_lanes, MAX_RESPONSES, "the responses in flight must fit in memory")
    if lengths is None:
        lengths = _lognormal_lengths(sigma, seed)
    else:
        lengths = _checked_lengths(lengths)
    return run_simulation(n_lanes, B, k, n_steps, train_time, lengths,
                          may_start, take_batch, drop_stale)


def _lognormal_lengths(sigma, seed):
    """Endless lognormal response lengths with mean 1 (drawn in blocks, for speed)."""
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.lognormal(-sigma**2 / 2, sigma, size=4096).tolist()


def _checked_lengths(lengths):
    """The given lengths, each checked as it is drawn (a generator or an endless
    itertools.cycle works too: nothing is read ahead)."""
    try:
        lengths = iter(lengths)
    except TypeError:
        raise ValueError(f"lengths must be a list or other iterable of numbers, "
                         f"got {lengths!r}") from None
    return (_checked_length(i, length) for i, length in enumerate(lengths))


def _checked_length(i, length):
    """lengths[i], if it is a finite number > 0."""
    if isinstance(length, bool) or not isinstance(length, numbers.Real) \
            or not 0 < length < math.inf:
        raise ValueError(f"lengths must all be finite numbers > 0, but lengths[{i}] "
                         f"(counting from 0) is {length!r}")
    return length


def _check_counts(n_started, n_dropped, version, k, B):
    """may_start's arguments, checked one by one (the slow path, for a clear message)."""
    whole_at_least("n_started", n_started, 0)
    whole_at_least("n_dropped", n_dropped, 0)
    whole_at_least("version", version, 0)
    whole_at_least("k", k, 0)
    whole_at_least("B", B, 1)
    if n_dropped > n_started:
        raise ValueError(f"n_dropped must be at most n_started (only started responses can "
                         f"be dropped), got n_dropped={n_dropped!r}, n_started={n_started!r}")


def _check_batch_arguments(finished, version, k, B, drop_stale):
    """take_batch's arguments, checked one by one (the slow path, for a clear message)."""
    if not isinstance(finished, list):
        raise ValueError(f"finished must be a list (take_batch changes it in place), "
                         f"got {type(finished).__name__}")
    whole_at_least("version", version, 0)
    whole_at_least("k", k, 0)
    whole_at_least("B", B, 1)
    one_of("drop_stale", drop_stale, (True, False))


def _check_tags(finished, version):
    """No response in `finished` was generated by a version that does not exist yet."""
    try:
        newest = max(map(itemgetter("tag"), finished), default=0)
    except (TypeError, KeyError, IndexError):
        raise ValueError("finished must be a list of response dicts, each with a tag") from None
    if newest > version:
        raise ValueError(f"finished holds a response with tag {newest!r} > version {version!r}; "
                         "a response is generated by a version that exists, so tag <= version")
