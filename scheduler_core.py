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
Every answer they give is checked against its rules (lab/simulator_checks.py), so a bug
shows up as a SchedulerError that says which rule broke, not as a wrong number later.
`simulate` checks a run's arguments once, then calls the two without their @checked input
checks: the loop gives them plain ints it made itself, so those checks would buy nothing.
"""

import heapq
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np

from lab.input_checks import unchecked
from lab.simulator_checks import MAX_RESPONSES as MAX_RESPONSES  # simulate's bounds, which
from lab.simulator_checks import MAX_SIGMA as MAX_SIGMA  # run.py's flags read here too
from lab.simulator_checks import (
    SchedulerError,
    check_settings,
    checked_lengths,
    checked_may_start,
    checked_take_batch,
    why_stuck,
)

Response = dict[str, Any]  # id, tag, start, end, length, lag (None until trained), dropped


class LaneSettings(NamedTuple):
    """The settings of one simulation: n_lanes lanes, batches of B responses, staleness bound
    k, until the n_steps-th update; each update takes train_time; drop_stale: take_batch
    throws away the responses staler than k."""

    n_lanes: int
    B: int
    k: int
    n_steps: int = 200
    train_time: float = 1.0
    drop_stale: bool = False


def simulate(
    may_start: Callable,
    take_batch: Callable,
    settings: LaneSettings,
    lengths: Iterable[float] | None = None,
    sigma: float = 1.25,
    seed: int = 0,
) -> dict[str, Any]:
    """Run the simulator with the decisions may_start and take_batch (scheduler.simulate).

    Response lengths are `lengths` (time units, in start order) if given: any
    iterable of numbers > 0 (a list, a generator, an endless itertools.cycle),
    read one at a time as lanes start; free lanes stay idle once it runs out.
    Otherwise they are drawn from a lognormal distribution with mean 1 and
    shape `sigma` (a heavy tail: with sigma = 1.25 about one response in 20 is
    over 4 times the mean), seeded by `seed` so the same call always gives the
    same run.

    The counts may be whole floats (7.0) or numpy ints; the loop gets them as Python ints.
    Returns the dict of `summarize`. Example, with Task 2's answers:
    simulate(may_start, take_batch, LaneSettings(2, 2, 0, n_steps=2), [1, 3, 1, 1])["time"]
    == 6. Bounds: sigma <= 4, n_lanes and B * n_steps <= 10**6 (MAX_SIGMA, MAX_RESPONSES).
    """
    n_lanes, B, k, n_steps, train_time, drop_stale = settings
    check_settings(n_lanes, B, k, n_steps, train_time, drop_stale, sigma)
    counts = LaneSettings(int(n_lanes), int(B), int(k), int(n_steps), train_time, drop_stale)
    drawn = lognormal_lengths(sigma, seed) if lengths is None else checked_lengths(lengths)
    return run_simulation(counts, drawn, unchecked(may_start), unchecked(take_batch))


def lognormal_lengths(sigma: float, seed: int) -> Iterator[float]:
    """Endless lognormal response lengths with mean 1 (drawn in blocks, for speed)."""
    rng = np.random.default_rng(seed)
    while True:
        yield from rng.lognormal(-(sigma**2) / 2, sigma, size=4096).tolist()


def run_simulation(
    settings: LaneSettings, lengths: Iterator[float], may_start: Callable, take_batch: Callable
) -> dict[str, Any]:
    """Simulate until the n_steps-th update; return the summary dict of `summarize`.

    lengths: an iterator of response lengths in start order; when it runs out,
    free lanes stay idle. may_start and take_batch are called as they are given.
    """
    n_lanes, B, k, n_steps, train_time, drop_stale = settings
    time, version = 0.0, 0
    trace: list[Response] = []  # every response ever started, in start order (id = index)
    finished: list[Response] = []  # finished responses waiting for the trainer, oldest first
    running: list[tuple[float, int]] = []  # heap of (end time, id) of the responses generating
    n_dropped = 0
    trainer_done_at = None  # when the current update ends; None while idle
    updates = []  # (start, end) of every update, in order
    out_of_lengths = False

    while True:
        # The idle trainer looks for a batch (dropping stale responses if asked).
        if trainer_done_at is None:
            batch, dropped = checked_take_batch(
                take_batch, finished, version, k, B, drop_stale, len(trace), n_dropped
            )
            n_dropped += len(dropped)
            if batch is not None:
                trainer_done_at = time + train_time
                updates.append((time, trainer_done_at))

        # Free lanes start new responses for as long as admission allows.
        while len(running) < n_lanes and not out_of_lengths:
            if not checked_may_start(may_start, len(trace), n_dropped, version, k, B):
                break
            length = next(lengths, None)
            if length is None:
                out_of_lengths = True
                break
            response: Response = {
                "id": len(trace),
                "tag": version,
                "start": time,
                "end": time + length,
                "length": length,
                "lag": None,
                "dropped": False,
            }
            trace.append(response)
            heapq.heappush(running, (response["end"], response["id"]))

        if trainer_done_at is None and not running:
            raise SchedulerError(
                why_stuck(len(trace), n_dropped, version, k, B, len(finished), out_of_lengths)
            )

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


def summarize(
    trace: list[Response],
    updates: list[tuple[float, float]],
    n_lanes: int,
    B: int,
    n_steps: int,
    time: float,
) -> dict[str, Any]:
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
    return dict(
        time=time,
        throughput=n_steps * B / time,
        utilization=busy / (n_lanes * time),
        mean_lag=float(np.mean(lags)),
        lag_p95=lags[math.ceil(0.95 * len(lags)) - 1],
        max_lag=lags[-1],
        wasted_frac=wasted / busy,
        updates=updates,
        trace=trace,
    )


def assign_lanes(trace: list[Response]) -> list[int]:
    """The lane (0, 1, ...) of each response in `trace`, for drawing a timeline.

    The simulator only counts busy lanes, since lanes are identical. Here each
    response, in start order, takes the lowest-numbered lane that is free at its
    start; a lane is busy over [start, end) and free again at `end`, so a run
    never needs more than its n_lanes lanes.

    Example: starts 0, 0, 1 and ends 1, 2, 3 give lanes [0, 1, 0].
    """
    free: list[int] = []  # heap of free lanes
    busy: list[tuple[float, int]] = []  # heap of (end, lane)
    lanes = []
    for r in trace:
        while busy and busy[0][0] <= r["start"]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy)
        heapq.heappush(busy, (r["end"], lane))
        lanes.append(lane)
    return lanes
