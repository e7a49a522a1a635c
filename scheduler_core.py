"""The rollout simulator (given): generation lanes and one trainer, event by event.

The world it models:
  * n_lanes identical generation lanes. A free lane starts the next response
    whenever may_start(...) allows it; the response is tagged with the policy
    version that generates it and takes `length` time units.
  * Finished responses wait in a first-in, first-out queue, `finished`.
  * One trainer. Whenever it is idle (at the start, each time a response
    finishes, each time it finishes an update) it calls take_batch(...).
    A batch trains for train_time; then the policy version goes up by one.
  * The run ends the moment the n_steps-th update finishes.

Lanes are identical, so the loop only counts how many are busy; which lane ran
which response is worked out after the run, by `assign_lanes`, for drawing.

may_start and take_batch are the two decisions of Task 2 (scheduler.py).
Every answer they give is checked against the rules below, so a bug shows up
as a SchedulerError that says which rule broke, not as a wrong number later.
`simulate` checks a run's arguments once, then calls the two as written: the
loop gives them plain ints it made itself, so their per-call checks would buy nothing.
"""
import heapq
import inspect
import itertools
import math
import numbers

import numpy as np

from lab.input_checks import at_least, at_most, one_of, show_short, whole_at_least


class SchedulerError(RuntimeError):
    """A decision broke a rule of the simulation, or the run can never finish."""


# Upper bounds of the arguments of scheduler.simulate (and of run.py's flags):
MAX_SIGMA = 4.0        # lognormal shape; the median length exp(-sigma**2 / 2) is then 3e-4
MAX_RESPONSES = 10**6  # for B * n_steps and n_lanes: every response is a dict in memory


def simulate(may_start, take_batch, n_lanes, B, k, *, n_steps=200, train_time=1.0, sigma=1.25,
             lengths=None, drop_stale=False, seed=0):
    """Run the simulator with the decisions may_start and take_batch (scheduler.simulate).

    Response lengths are `lengths` (time units, in start order) if given: any
    iterable of numbers > 0 (a list, a generator, an endless itertools.cycle),
    read one at a time as lanes start; free lanes stay idle once it runs out.
    Otherwise they are drawn from a lognormal distribution with mean 1 and
    shape `sigma` (a heavy tail: with sigma = 1.25 about one response in 20 is
    over 4 times the mean), seeded by `seed` so the same call always gives the
    same run.

    Returns the dict of `summarize`. Example, with Task 2's answers:
    simulate(may_start, take_batch, 2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])["time"] == 6.
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
    one_of("drop_stale", drop_stale, (True, False))
    lengths = lognormal_lengths(sigma, seed) if lengths is None else checked_lengths(lengths)
    # inspect.unwrap: the functions without their @checked input checks (see above)
    return run_simulation(int(n_lanes), int(B), int(k), int(n_steps), train_time, lengths,
                          inspect.unwrap(may_start), inspect.unwrap(take_batch), drop_stale)


def lognormal_lengths(sigma, seed):
    """Endless lognormal response lengths with mean 1 (drawn in blocks, for speed)."""
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.lognormal(-sigma**2 / 2, sigma, size=4096).tolist()


def checked_lengths(lengths):
    """The given lengths as an iterator, each length checked before the simulator reads it.
    A list or tuple is checked a block at a time; any other iterable one length at a time,
    as it is drawn, so a generator or an endless itertools.cycle works too."""
    if isinstance(lengths, (list, tuple)):
        return itertools.chain.from_iterable(_checked_blocks(lengths))
    try:
        lengths = iter(lengths)
    except TypeError:
        raise ValueError(f"lengths must be a list or other iterable of numbers, "
                         f"got {lengths!r}") from None
    return _each_checked(lengths)


def _checked_blocks(lengths, size=4096):
    for start in range(0, len(lengths), size):
        block = lengths[start:start + size]
        # One pass in C for the usual block of floats > 0; NaN or inf make the sum not finite.
        if not (set(map(type, block)) == {float} and min(block) > 0.0
                and math.isfinite(sum(block))):
            for i, length in enumerate(block, start):
                _check_length(i, length)
        yield block


def _each_checked(lengths):
    for i, length in enumerate(lengths):
        if type(length) is not float or not 0.0 < length < math.inf:  # one cheap test for
            _check_length(i, length)                                  # the usual float
        yield length


def _check_length(i, length):
    """lengths[i] is a finite number > 0, or a ValueError that says which one is not."""
    if isinstance(length, bool) or not isinstance(length, numbers.Real) \
            or not 0 < length < math.inf:
        raise ValueError(f"lengths must all be finite numbers > 0, but lengths[{i}] "
                         f"(counting from 0) is {length!r}")


def run_simulation(n_lanes, B, k, n_steps, train_time, lengths, may_start, take_batch,
                   drop_stale=False):
    """Simulate until the n_steps-th update; return the summary dict of `summarize`.

    lengths: an iterator of response lengths in start order; when it runs out,
    free lanes stay idle.
    """
    time, version = 0.0, 0
    trace = []         # every response ever started, in start order (id = index)
    finished = []      # finished responses waiting for the trainer, oldest first
    running = []       # heap of (end time, id) of the responses being generated
    n_dropped = 0
    trainer_done_at = None  # when the current update ends; None while idle
    updates = []       # (start, end) of every update, in order
    out_of_lengths = False

    while True:
        # The idle trainer looks for a batch (dropping stale responses if asked).
        if trainer_done_at is None:
            batch, dropped = _checked_take_batch(take_batch, finished, version, k, B, drop_stale,
                                                 len(trace), n_dropped)
            n_dropped += len(dropped)
            if batch is not None:
                trainer_done_at = time + train_time
                updates.append((time, trainer_done_at))

        # Free lanes start new responses for as long as admission allows.
        while len(running) < n_lanes and not out_of_lengths:
            allowed = may_start(len(trace), n_dropped, version, k, B)
            if type(allowed) is not bool:
                allowed = _as_bool(allowed, len(trace), n_dropped, version, k, B)
            if not allowed:
                break
            length = next(lengths, None)
            if length is None:
                out_of_lengths = True
                break
            response = {"id": len(trace), "tag": version, "start": time, "end": time + length,
                        "length": length, "lag": None, "dropped": False}
            trace.append(response)
            heapq.heappush(running, (response["end"], response["id"]))

        if trainer_done_at is None and not running:
            raise SchedulerError(_why_stuck(len(trace), n_dropped, version, k, B,
                                            len(finished), out_of_lengths))

        # Jump to the next event: the update ends, or the earliest response ends.
        # On a tie the update goes first, so what finishes at that instant is
        # batched, and what starts then is tagged, with the new version.
        next_end = running[0][0] if running else math.inf
        if trainer_done_at is not None and trainer_done_at <= next_end:
            time, trainer_done_at = trainer_done_at, None
            version += 1
            if version == n_steps:
                return summarize(trace, updates, n_lanes, B, n_steps, time)
        else:
            time, response_id = heapq.heappop(running)
            finished.append(trace[response_id])


def summarize(trace, updates, n_lanes, B, n_steps, time):
    """The numbers of a finished run.

    throughput  = trained responses per time unit = n_steps * B / time
    utilization = busy lane-time / (n_lanes * time), 1 = every lane always busy
    mean_lag    = mean of version - tag over the trained responses
    lag_p95     = 95th percentile of those lags (nearest rank: the smallest lag
                  that at least 95% of trained responses do not exceed)
    max_lag     = the largest of those lags: k bounds admission, not this
    wasted_frac = generation time of dropped responses / all generation time
    updates     = (start, end) time of each update, in order

    Example: lags [0, 0, 1, 3] give mean_lag 1.0, lag_p95 3, max_lag 3.
    """
    busy = sum(min(r["end"], time) - r["start"] for r in trace)
    wasted = sum(r["length"] for r in trace if r["dropped"])
    lags = sorted(int(r["lag"]) for r in trace if r["lag"] is not None)
    return dict(time=time, throughput=n_steps * B / time,
                utilization=busy / (n_lanes * time), mean_lag=float(np.mean(lags)),
                lag_p95=lags[math.ceil(0.95 * len(lags)) - 1], max_lag=lags[-1],
                wasted_frac=wasted / busy, updates=updates, trace=trace)


def assign_lanes(trace):
    """The lane (0, 1, ...) of each response in `trace`, for drawing a timeline.

    The simulator only counts busy lanes, since lanes are identical. Here each
    response, in start order, takes the lowest-numbered lane that is free at its
    start; a lane is busy over [start, end) and free again at `end`, so a run
    never needs more than its n_lanes lanes.

    Example: starts 0, 0, 1 and ends 1, 2, 3 give lanes [0, 1, 0].
    """
    free, busy, lanes = [], [], []  # free: heap of lanes; busy: heap of (end, lane)
    for r in trace:
        while busy and busy[0][0] <= r["start"]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy)
        heapq.heappush(busy, (r["end"], lane))
        lanes.append(lane)
    return lanes


def _as_bool(answer, n_started, n_dropped, version, k, B):
    """may_start's answer as a bool: numpy's bool is fine, anything else is an error."""
    if not isinstance(answer, np.bool_):
        raise SchedulerError(
            f"may_start must return True or False, got {answer!r} "
            f"(n_started={n_started}, n_dropped={n_dropped}, version={version}, k={k}, B={B}). "
            "Did you forget the return statement?")
    return bool(answer)


def _checked_take_batch(take_batch, finished, version, k, B, drop_stale, n_started, n_dropped):
    """Call take_batch and make sure it followed the rules of Task 2b."""
    before = finished[:]
    answer = take_batch(finished, version, k, B, drop_stale)
    if type(answer) is tuple and len(answer) == 2 and answer[0] is None \
            and type(answer[1]) is list and not answer[1] and finished == before:
        return None, []  # nothing taken: the common case, checked cheaply

    def broken(rule):
        return SchedulerError(
            f"take_batch broke a rule: {rule} (version={version}, k={k}, B={B}, "
            f"drop_stale={drop_stale}, n_started={n_started}, n_dropped={n_dropped}, "
            f"responses in `finished` before the call: {len(before)})")

    if not (isinstance(answer, tuple) and len(answer) == 2):
        raise broken(f"it must return a tuple (batch, dropped), got {show_short(answer)}.")
    batch, dropped = answer
    if not isinstance(dropped, (list, tuple)) or (dropped and not drop_stale):
        raise broken("dropped must be a list, empty unless drop_stale is True; got "
                     f"{show_short(dropped)}.")
    if batch is not None:
        if not isinstance(batch, (list, tuple)) or len(batch) != B:
            size = f"{len(batch)} responses" if isinstance(batch, (list, tuple)) else repr(batch)
            raise broken(f"batch must be None or a list of exactly B={B} responses, got {size}.")
        batch = list(batch)
    dropped = list(dropped)
    taken = (batch or []) + dropped
    given = {id(r) for r in before}
    copies = [r for r in taken if id(r) not in given]
    if copies:
        raise broken(f"batch and dropped must hold the very dicts that were in `finished` on "
                     f"this call, not copies; response {copies[0].get('id')!r} is not one of "
                     "them (a copy, or a dict kept from an earlier call?).")
    taken_ids = {id(r) for r in taken}
    kept = [r for r in before if id(r) not in taken_ids]
    if len(kept) + len(taken) != len(before) or finished != kept:
        raise broken("every response in batch and dropped must be removed from `finished`, "
                     "and nothing else may be added, removed or reordered there.")
    for r in batch or []:
        if r["dropped"] or r["lag"] != version - r["tag"]:
            raise broken(f"each trained response needs lag = version - tag = "
                         f"{version} - {r['tag']} and dropped False; response {r['id']} has "
                         f"lag={r['lag']!r}, dropped={r['dropped']!r}.")
    for r in dropped:
        if r["dropped"] is not True or r["lag"] is not None:
            raise broken(f"each dropped response needs dropped=True and lag None (it is never "
                         f"trained); response {r['id']} has dropped={r['dropped']!r}, "
                         f"lag={r['lag']!r}.")
    return batch, dropped


def _why_stuck(n_started, n_dropped, version, k, B, n_finished, out_of_lengths):
    """Explain a run that can never finish: no lane may start, the trainer has no batch."""
    state = (f"version={version}, n_started={n_started}, n_dropped={n_dropped}, "
             f"k={k}, B={B}, {n_finished} finished responses waiting")
    if out_of_lengths:
        culprit = "the given response lengths ran out before the last update"
    elif n_finished >= B:
        culprit = (f"take_batch returned no batch although {n_finished} >= B responses "
                   "were waiting")
    elif n_started - n_dropped < (version + k + 1) * B:
        culprit = ("may_start refused although n_started - n_dropped < (version + k + 1) * B"
                   + _refused_because(n_started, n_dropped, version, k, B))
    else:
        culprit = "responses went missing: check that take_batch returns every response it removes"
    return f"the simulation can never finish: {culprit} ({state})."


def _refused_because(n_started, n_dropped, version, k, B):
    """What explains a refusal of a start the rule allows, as far as the state tells: the
    missing + 1 (one batch short), n_dropped not subtracted (only when some were dropped),
    or k not counted in batches; "" if none of them would refuse here."""
    count = n_started - n_dropped
    short = count >= (version + k) * B           # refused by n_started - n_dropped < (v + k) * B
    dropped = n_dropped > 0 and n_started >= (version + k + 1) * B  # refused by n_started < ...
    if short and dropped:
        return ("; either it stops one batch short (is the + 1 of (version + k + 1) * B "
                "missing?) or it does not subtract n_dropped (dropped responses free their place)")
    if short:
        return (f": it stops one batch short, at {count} = (version + k) * B. Is the + 1 of "
                "(version + k + 1) * B missing? The lanes may fill the batch the trainer needs "
                "next, plus k more")
    if dropped:
        return "; does it subtract n_dropped? Dropped responses free their place"
    if k and count >= (version + 1) * B:
        return "; does it allow k batches (k * B responses) ahead?"
    return ""
