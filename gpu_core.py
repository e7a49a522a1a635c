"""The GPU-level rollout simulator (given): engines that decode many responses at once.

Part 2's lanes each take one time unit per mean response, whatever else runs.
A real generation engine (one GPU, or tp GPUs sharing one copy of the model)
decodes up to S responses together: each decode step reads the weights once and
the KV cache of every active response, and adds one token to each. Reading the
weights and multiplying them with the n tokens overlap (the matrix multiplies
stream the weights they read), so a step of an engine costs

    step seconds = o + max(a, c * n) + b * C        (Step(a, b, c, o) below)

  a: reading the bf16 weights that are read whole each step (2 * N / bandwidth,
     N without the input embedding, of which a step reads one row per token);
  c: the matrix multiplies of one response's token (2 * N / FLOP/s);
  b: reading one token of KV cache (KV bytes per token / bandwidth);
  o: a fixed per-step overhead (scheduling, sampling, kernel launches), 0 in a bound;
  n, C: the engine's active responses, and the tokens in their KV caches.

Convention: a response that has generated g tokens reads prompt + g tokens of
KV at its next step, which makes token g + 1; a response of L tokens takes L
steps. Prefill is not counted. Responses join an engine at step boundaries
(an idle engine starts at once), and a freed slot is refilled at the next
boundary: continuous batching.

Between two events an engine's n contexts each grow by one token a step, so
from a boundary with C0 tokens in flight, m steps take

    T(m) = m * (o + max(a, c * n) + b * C0) + b * n * m * (m - 1) / 2

That gives every finish in closed form, and the boundary at or after any time
from the quadratic's root: the loop jumps from event to event, never over tokens.

Training works as in scheduler_core: B counts groups of `group_size` responses
to one prompt (GRPO's unit; a group finishes when its last response does), the
trainer takes B finished groups with take_batch and trains for
train(tokens) seconds, tokens = prompt + response tokens of the whole batch.
A group starts when may_start allows it, fewer than max_running groups are
running (AReaL's max_concurrent_rollouts) and the engines have group_size free
slots. Placement: each response to the engine with the fewest active responses,
or (pin=True, as AReaL's gserver manager does) all of a group's responses to one
engine, taken round-robin; an engine without group_size free slots is passed over
(SGLang would queue the group there, so this is the optimistic side). When an
update ends, each engine pauses swap(C) seconds before its next step (swap: a
Linear of the tokens C in its KV caches: reloading the weights, and recomputing
the KV of the interrupted responses), idle engines swap.fixed.

With S = 1, group_size 1, a = 1, b = c = 0, no prompt and a constant train time,
this is run_simulation with lane lengths = tokens (experiments/test_gpu_model.py checks it).
"""

import contextlib
import gc
import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from lab.simulator_checks import SchedulerError, checked_may_start, checked_take_batch


class Linear(NamedTuple):
    """A cost in seconds that grows linearly: fixed + per_token * tokens.

    Example: Linear(0.01, 1e-8)(1000) == 0.01001.
    """

    fixed: float
    per_token: float

    def __call__(self, tokens: float) -> float:
        return self.fixed + self.per_token * tokens


class Step(NamedTuple):
    """Seconds of one decode step of an engine with n active responses and C tokens of KV:
    overhead + max(weights, per_response * n) + per_token * C (weights read and matrix
    multiplies overlap; the KV read comes on top).

    Example: Step(0.01, 1e-8, 1e-4)(1000, 2) == 0.01001 (the weights bind, 2e-4 < 0.01);
    Step(0.01, 1e-8, 1e-4)(1000, 200) == 0.02001 (the matrix multiplies bind).
    """

    weights: float
    per_token: float
    per_response: float = 0.0
    overhead: float = 0.0

    def __call__(self, C: float, n: int) -> float:
        multiplies = self.per_response * n  # max(weights, multiplies), without a call to max
        bound = multiplies if multiplies > self.weights else self.weights
        return self.overhead + bound + self.per_token * C


def steps_time(step: Step, n: int, C0: int, m: int) -> float:
    """Seconds of m decode steps from a boundary with n responses and C0 tokens in flight.

        T(m) = m * step(C0, n) + b * n * m * (m - 1) / 2   with b = step.per_token

    Example: a = 1, b = 0.5, c = 0, n = 2, C0 = 4: steps cost 3, 4, 5, so T(3) = 12.
    """
    return grown(step(C0, n), step.per_token * n, m)


def grown(first: float, growth: float, m: int) -> float:
    """steps_time from its first step's seconds and what each step adds (b * n), in the
    same arithmetic: Cluster.reschedule, the hot path, computes step(C0, n) once."""
    return m * first + growth * m * (m - 1) / 2


def steps_before(step: Step, n: int, C0: int, seconds: float) -> int:
    """The fewest whole steps m >= 0 with steps_time(step, n, C0, m) >= seconds: how many
    steps an engine finishes before the boundary at or after `seconds` from now."""
    if seconds <= 0:
        return 0
    first, growth = step(C0, n), step.per_token * n
    if growth == 0:
        m = math.ceil(seconds / first)
    else:  # growth/2 m^2 + (first - growth/2) m - seconds = 0
        half = first - growth / 2
        m = math.ceil((-half + math.sqrt(half * half + 2 * growth * seconds)) / growth)
    while m > 0 and steps_time(step, n, C0, m - 1) >= seconds:  # rounding, either way
        m -= 1
    while steps_time(step, n, C0, m) < seconds:
        m += 1
    return m


@dataclass(slots=True)
class Response:
    """One response in flight: its group, its engine, the engine step it joined at and its
    length in tokens; `version_tokens` sums, over its first `marked` tokens, the version of
    the weights that made each (mark_versions adds to both when an update ends)."""

    group: int
    engine: int
    joined: int
    length: int
    version_tokens: int = 0
    marked: int = 0


class Engine:
    """One generation engine: its active responses and where its decode steps stand.

    `steps` counts the decode steps it has made, `t0` is the time of the boundary
    after the last of them. A response that joined at step j has generated
    steps - j tokens and ends at step j + length; `ends` is a heap of (end step, id).
    """

    __slots__ = ("ends", "joined_sum", "prompt", "stamp", "steps", "t0")

    def __init__(self, prompt: int):
        self.prompt, self.steps, self.t0 = prompt, 0, 0.0
        self.ends: list[tuple[int, int]] = []  # heap of (end step, response id)
        self.joined_sum, self.stamp = 0, 0

    def in_flight(self) -> int:
        """C: tokens in the KV caches of the active responses (prompts included)."""
        return len(self.ends) * (self.prompt + self.steps) - self.joined_sum

    def advance(self, step: Step, m: int) -> None:
        """Move the reference boundary m steps on (no response may end inside them)."""
        self.t0 += steps_time(step, len(self.ends), self.in_flight(), m)
        self.steps += m

    def catch_up(self, step: Step, time: float) -> None:
        """Advance to the first boundary at or after `time` (an idle engine waits there)."""
        if self.t0 >= time:  # already there (as when groups start together): 0 steps
            return
        if not self.ends:
            self.t0 = max(self.t0, time)
        else:  # never past the next end (rounding could suggest it)
            m = steps_before(step, len(self.ends), self.in_flight(), time - self.t0)
            self.advance(step, min(m, self.ends[0][0] - self.steps))


@dataclass(frozen=True)
class GpuSettings:
    """The settings of one run_gpu_simulation (checked when made).

    n_engines engines of S slots; B groups of group_size responses a batch, staleness
    bound k, until the n_steps-th update; step: a Step (seconds of a decode step); train: a
    Linear cost in seconds of an update of a batch's tokens; prompt: prompt tokens of every
    response. filter_p: if given, a finished group whose group_size rewards are all equal is
    discarded, with probability p**n + (1 - p)**n for a per-response success rate p (DAPO's
    dynamic sampling); it frees its place like a dropped group. max_running: groups started
    and not finished at most (None: no cap); pin: a group's responses on one engine,
    round-robin; swap: seconds an engine pauses when an update ends, a Linear of the tokens
    in its KV caches (see the module docstring).
    """

    n_engines: int
    S: int
    B: int
    k: int
    n_steps: int
    group_size: int
    step: Step
    train: Linear
    prompt: int = 0
    drop_stale: bool = False
    filter_p: float | None = None
    seed: int = 0
    max_running: int | None = None
    pin: bool = False
    swap: Linear = Linear(0.0, 0.0)

    def __post_init__(self) -> None:
        S, group_size, max_running, filter_p = (
            self.S,
            self.group_size,
            self.max_running,
            self.filter_p,
        )
        if max_running is not None and max_running < 1:
            raise ValueError(f"max_running must be None or at least 1, got {max_running!r}")
        if self.pin and group_size > S:
            raise ValueError(
                f"with pin=True group_size must be at most S = {S} (a group's "
                f"responses share one engine), got {group_size}"
            )
        if group_size > self.n_engines * S:
            raise ValueError(
                f"group_size must be at most n_engines * S = {self.n_engines * S} "
                f"(a group starts only when all its responses have a slot), "
                f"got {group_size}"
            )
        if filter_p is not None and not 0 < filter_p < 1:
            raise ValueError(
                f"filter_p must be None or between 0 and 1 (exclusive): at 0 or 1 "
                f"every group is filtered out and nothing is ever trained, "
                f"got {filter_p!r}"
            )


def run_gpu_simulation(
    settings: GpuSettings, lengths: Iterator[int], may_start: Callable, take_batch: Callable
) -> dict[str, Any]:
    """Simulate the GpuSettings `settings` until its n_steps-th update; return the dict of
    `summarize_gpu`. lengths: an iterator of response lengths in tokens (whole numbers >= 1,
    capped by the caller; when it runs out, no group starts); may_start and take_batch:
    Task 2's functions."""
    with collector_paused():
        return simulate(Cluster(settings, lengths, may_start, take_batch))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector paused, then resumed if it ran. A simulation makes millions
    of small records and no reference cycles: the collector would only scan them, and every
    result kept so far, again and again (a fifth of --preset's time). Also a decorator."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def simulate(cluster: "Cluster") -> dict[str, Any]:
    """run_gpu_simulation's loop, event by event, until the cluster's n_steps-th update."""
    settings = cluster.settings
    while True:
        if cluster.trainer_done_at is None:
            cluster.train()
        cluster.start_groups()
        if cluster.trainer_done_at is None and not cluster.events:
            raise SchedulerError(f"the GPU simulation can never finish: {cluster.state()}")
        # The next event: the update ends (first, on a tie), or a response ends.
        if cluster.update_ends_next():
            cluster.end_update()
            if cluster.version == settings.n_steps:
                return summarize_gpu(
                    settings,
                    cluster.groups,
                    cluster.updates,
                    cluster.log,
                    cluster.ends,
                    cluster.time,
                    cluster.batches,
                    cluster.refused is not None,
                )
        else:
            cluster.end_response()


class Cluster:
    """The state of one run_gpu_simulation: the engines and the heap of their next ends,
    the groups and responses started, the trainer's updates, and the clock."""

    def __init__(
        self,
        settings: GpuSettings,
        lengths: Iterator[int],
        may_start: Callable,
        take_batch: Callable,
    ):
        self.settings, self.lengths = settings, lengths
        self.may_start, self.take_batch = may_start, take_batch
        p, n = settings.filter_p, settings.group_size
        self.p_filter = 0.0 if p is None else p**n + (1 - p) ** n
        self.rng = np.random.default_rng(settings.seed)
        self.engines = [Engine(settings.prompt) for _ in range(settings.n_engines)]
        # heap of (time, response id, engine, engine stamp); stale stamps are skipped
        self.events: list[tuple[float, int, int, int]] = []
        self.responses: list[Response] = []  # every Response, by id
        self.groups: list[dict[str, Any]] = []  # every group started, by id
        self.finished: list[dict[str, Any]] = []  # finished groups waiting for the trainer
        self.updates: list[tuple[float, float]] = []  # (start, end) of every update
        self.log: list[tuple[float, int, int, float]] = []  # see summarize_gpu
        self.ends: list[float] = []  # the time each response finished
        self.time, self.version, self.n_dropped = 0.0, 0, 0
        self.trainer_done_at: float | None = None  # when the update ends; None while idle
        self.batches: list[int] = []  # the tokens of each update
        self.free, self.out_of_lengths = settings.n_engines * settings.S, False
        self.running, self.turn = 0, 0  # groups started and not finished; pin's next engine
        # engines with room for a whole group (pin's placement), all of them while empty
        self.roomy = settings.n_engines if settings.group_size <= settings.S else 0
        self.room_at = settings.S - settings.group_size  # the most active that leave room for one
        self.started_on: dict[int, None] = {}  # engines start() changed, in order, to reschedule
        # Task 2's functions decide on their arguments alone, so a call with the arguments of
        # one that took nothing, or refused, would answer the same: these are not made again.
        # declined: (len(finished), version) when take_batch last took nothing (`finished`
        # only grows until take_batch takes from it); refused: (n_started, n_dropped,
        # version) when may_start last said False.
        self.declined: tuple[int, int] | None = None
        self.refused: tuple[int, int, int] | None = None

    def state(self) -> str:
        s = self.settings
        return (
            f"version={self.version}, {len(self.groups)} groups started, "
            f"{self.n_dropped} dropped, {len(self.finished)} finished groups waiting, "
            f"k={s.k}, B={s.B}"
        )

    def reschedule(self, e: int) -> None:
        """Engine e changed: log its speed and push its next end (older entries go stale)."""
        engine, step = self.engines[e], self.settings.step
        engine.stamp += 1
        n = len(engine.ends)
        # one step's seconds, logged and reused as the first step of the steps_time to its
        # next end (pushed on the event heap): this runs at every event, so it is computed
        # once (grown is steps_time's own arithmetic, so the times are bit-identical)
        first = step(engine.in_flight(), n)
        self.log.append((engine.t0, e, n, first))
        if n:
            end_step, rid = engine.ends[0]
            seconds = grown(first, step.per_token * n, end_step - engine.steps)
            heapq.heappush(self.events, (engine.t0 + seconds, rid, e, engine.stamp))

    def train(self) -> None:
        """The idle trainer takes a batch, if take_batch gives one, and starts its update."""
        s = self.settings
        asked = (len(self.finished), self.version)
        if asked == self.declined:
            return
        batch, dropped = checked_take_batch(
            self.take_batch,
            self.finished,
            self.version,
            s.k,
            s.B,
            s.drop_stale,
            len(self.groups),
            self.n_dropped,
        )
        self.n_dropped += len(dropped)
        self.declined = asked if batch is None and not dropped else None
        if batch is not None:
            tokens = sum(g["tokens"] for g in batch) + s.prompt * s.group_size * s.B
            self.trainer_done_at = self.time + s.train(tokens)
            self.updates.append((self.time, self.trainer_done_at))
            self.batches.append(tokens)

    def start_groups(self) -> None:
        """Start groups while there are slots, lengths, room under the cap and may_start
        allows it."""
        s = self.settings
        while (
            self.free >= s.group_size
            and not self.out_of_lengths
            and (s.max_running is None or self.running < s.max_running)
        ):
            asked = (len(self.groups), self.n_dropped, self.version)
            if asked == self.refused:  # may_start said no to these very arguments
                break
            pinned = self.pinned_engine() if s.pin else None
            if s.pin and pinned is None:
                break
            if not checked_may_start(self.may_start, *asked, s.k, s.B):
                self.refused = asked
                break
            drawn = list(itertools.islice(self.lengths, s.group_size))
            if len(drawn) < s.group_size:
                self.out_of_lengths = True
                break
            self.start(drawn, pinned)
        # Groups that start together (hundreds at once in a synchronous step) change an engine
        # at one boundary: its speed is logged and its next end pushed once, after the last.
        if self.started_on:
            for e in self.started_on:
                self.reschedule(e)
            self.started_on.clear()

    def has_room(self, engine: Engine) -> bool:
        """Whether the engine has room for a whole group (pin=True places a group there)."""
        return len(engine.ends) <= self.room_at

    def pinned_engine(self) -> int | None:
        """The first engine, round-robin from the next one, with room for a whole group (None:
        none has; `roomy` counts them, so a full cluster is not scanned at every event)."""
        n = len(self.engines)
        if self.roomy:
            for i in range(n):
                if self.has_room(self.engines[(self.turn + i) % n]):
                    return (self.turn + i) % n
        return None

    def start(self, drawn: list[int], pinned: int | None) -> None:
        """Start a group of responses of the `drawn` lengths: all on engine `pinned` if given,
        else each on the engine with the fewest active responses."""
        group: dict[str, Any] = dict(
            id=len(self.groups),
            tag=self.version,
            start=self.time,
            end=None,
            tokens=sum(drawn),
            lag=None,
            dropped=False,
            left=len(drawn),
            version_tokens=0,
        )
        self.groups.append(group)
        self.running += 1
        if pinned is not None:
            placed = [(pinned, length) for length in drawn]
            self.turn = (pinned + 1) % len(self.engines)
        else:
            loads = [len(engine.ends) for engine in self.engines]
            placed = []
            for length in drawn:
                e = loads.index(min(loads))
                loads[e] += 1
                placed.append((e, length))
        group["engines"] = sorted({e for e, _ in placed})
        for e in group["engines"]:
            self.engines[e].catch_up(self.settings.step, self.time)
            self.roomy -= self.has_room(self.engines[e])  # counted again once they are placed
        for e, length in placed:
            engine = self.engines[e]
            heapq.heappush(engine.ends, (engine.steps + length, len(self.responses)))
            engine.joined_sum += engine.steps
            self.responses.append(Response(group["id"], e, engine.steps, length))
        for e in group["engines"]:
            self.roomy += self.has_room(self.engines[e])
            self.started_on[e] = None
        self.free -= len(drawn)

    def update_ends_next(self) -> bool:
        """Whether the update ends before the next response does (or on a tie)."""
        events = self.events
        while events and events[0][3] != self.engines[events[0][2]].stamp:
            heapq.heappop(events)
        return self.trainer_done_at is not None and (
            not events or self.trainer_done_at <= events[0][0]
        )

    def end_update(self) -> None:
        """The update ends: the tokens so far are the old version's, the engines pause."""
        swap, ends_at = self.settings.swap, self.trainer_done_at
        assert ends_at is not None, "called only when update_ends_next()"
        self.time, self.trainer_done_at = ends_at, None
        mark_versions(self.engines, self.responses, self.settings.step, self.time, self.version)
        for e, engine in enumerate(self.engines):
            if engine.ends:  # at its boundary now (mark_versions), it pauses there
                engine.t0 += swap(engine.in_flight())
                self.reschedule(e)
            else:
                engine.t0 = max(engine.t0, self.time) + swap.fixed
        self.version += 1

    def end_response(self) -> None:
        """The next response ends; its group finishes with its last response (and may be
        filtered out)."""
        self.time, rid, e, _ = heapq.heappop(self.events)
        engine = self.engines[e]
        # The engine is as reschedule left it (any change pushes a new stamp), so its boundary
        # at this end is the event's time: advance() would add the same steps_time to t0.
        engine.t0, engine.steps = self.time, heapq.heappop(engine.ends)[0]
        self.roomy += len(engine.ends) == self.room_at  # it has room for a group again
        response = self.responses[rid]
        engine.joined_sum -= response.joined
        self.free += 1
        self.ends.append(self.time)
        self.reschedule(e)
        group = self.groups[response.group]
        # its unmarked tokens were all made by the current version
        group["version_tokens"] += (
            response.version_tokens + (response.length - response.marked) * self.version
        )
        group["left"] -= 1
        if group["left"] == 0:
            group["end"] = self.time
            self.running -= 1
            if self.p_filter and self.rng.random() < self.p_filter:
                group["dropped"] = True
                self.n_dropped += 1
            else:
                self.finished.append(group)


def mark_versions(
    engines: list[Engine], responses: list[Response], step: Step, time: float, version: int
) -> None:
    """An update ends at `time`: every active response's tokens so far were made by
    `version`; the next ones, from each engine's next boundary, by version + 1 (weights
    swap at a step boundary and generation goes on, as in AReaL's interruptible rollouts;
    what the swap costs is GpuSettings' `swap`)."""
    for engine in engines:
        if not engine.ends:
            continue
        engine.catch_up(step, time)
        for _, rid in engine.ends:
            response = responses[rid]
            made = engine.steps - response.joined
            response.version_tokens += (made - response.marked) * version
            response.marked = made


def summarize_gpu(
    settings: GpuSettings,
    groups: list[dict],
    updates: list[tuple[float, float]],
    log: list[tuple],
    ends: list[float],
    time: float,
    batches: list[int],
    refused: bool,
) -> dict[str, Any]:
    """The numbers of a finished run of GpuSettings `settings` (seconds; groups and tokens).

    throughput      = trained groups per second = n_steps * B / time
    mean_lag        = mean of version - tag over trained groups (the head lag of Part 2)
    head_token_lag  = the same lag, weighted by each group's tokens
    token_lag       = mean over trained tokens of (trained version - version that made
                      the token): weights swapped mid-response make it <= head_token_lag
    train_tokens    = prompt + response tokens trained, all batches
    batch_tokens    = the same for each update, in order
    log             = (time, engine, active responses, seconds of its next step) at every
                      change (groups started together: once, after the last), for drawing
                      tokens per second = active / step seconds
    ends            = the time each response finished, in order
    refused         = whether may_start ever refused a start
    """
    trained = [g for g in groups if g["lag"] is not None]
    lags = sorted(g["lag"] for g in trained)
    tokens = sum(g["tokens"] for g in trained)
    trained_version = sum((g["tag"] + g["lag"]) * g["tokens"] for g in trained)
    return dict(
        time=time,
        throughput=settings.n_steps * settings.B / time,
        mean_lag=float(np.mean(lags)),
        max_lag=lags[-1],
        head_token_lag=sum(g["lag"] * g["tokens"] for g in trained) / tokens,
        token_lag=(trained_version - sum(g["version_tokens"] for g in trained)) / tokens,
        train_tokens=sum(batches),
        batch_tokens=batches,
        updates=updates,
        groups=groups,
        log=log,
        ends=ends,
        group_size=settings.group_size,
        refused=refused,
    )
