# Your file for Task 2. Fill in each TODO, then run `python -m pytest -q -k task2`.
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
import scheduler_core
from lab import contracts
from lab.input_checks import checked


@checked(contracts.may_start)
def may_start(n_started, n_dropped, version, k, B):
    """Admission control: may a free lane start one more response now?

        True  iff  n_started - n_dropped < (version + k + 1) * B

    n_started - n_dropped counts the responses that are, or can still be, trained.
    The trainer has consumed version * B of them; on top of the batch it needs
    next, the lanes may work k batches ahead. With k = 0 the lanes stop after
    B responses and wait for the update: that is synchronous RL.

    Example: B = 4, k = 0, version 0: True for n_started = 0..3, False at 4.
    With k = 1 the same lanes may start 8 before the first update.
    Returns a bool (True or False; numpy's np.True_ and np.False_ count as those).

    The arguments are whole numbers: 0 <= n_dropped <= n_started, version >= 0,
    k >= 0, B >= 1 (checked above it; anything else is a ValueError).
    """
    # TODO (Task 2a): dropped responses will never be trained, so they free their place.
    raise NotImplementedError("Task 2a may_start (scheduler.py) is not implemented yet")


@checked(contracts.take_batch)
def take_batch(finished, version, k, B, drop_stale=False):
    """The trainer's turn: maybe drop stale responses, then take the oldest B.

    `finished` is the first-in, first-out list of finished responses: the order
    they finished in, which need not be the order of their ids, start times,
    lengths or tags. Change the list in place (remove what you take, keep the
    order of the rest) and return the tuple (batch, dropped): batch the list of
    the B taken, oldest first (None when fewer than B remain), dropped the list
    of the stale ones ([] without drop_stale).
      1. If drop_stale: remove every response with version - tag > k, set its
         "dropped" to True, and collect it in the list `dropped` (any order).
         This happens on every call, however many responses are waiting.
      2. Then, if at least B responses remain: remove the first B, set each
         one's "lag" to version - tag: they are `batch`. Otherwise batch is None
         and the rest stay in `finished`.
    batch and dropped hold the same dict objects that were in `finished` on this
    call (not copies, and none kept from an earlier call: the simulator reads their
    lag and dropped flag from those dicts). Every dropped response has dropped True,
    whether or not a batch follows, and every response not trained (dropped, or still
    waiting) keeps lag None.

    Example: version 3, k = 1, tags in `finished` [3, 1, 2, 2], B = 2,
    drop_stale=True: the tag-1 response (lag 2 > k) is dropped, the batch is
    the first two of [3, 2, 2] with lags [0, 1], and [2] stays behind.

    Checked above it: finished is a list of response dicts; no response whose lag
    is computed has a tag above version; version >= 0, k >= 0 and B >= 1 are
    whole numbers; drop_stale is True or False.
    """
    # TODO (Task 2b): a response with lag exactly k is still fresh enough to train on.
    raise NotImplementedError("Task 2b take_batch (scheduler.py) is not implemented yet")


def simulate(n_lanes, B, k, *, n_steps=200, train_time=1.0, sigma=1.25, lengths=None,
             drop_stale=False, seed=0):
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
