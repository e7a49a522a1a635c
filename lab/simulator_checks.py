"""The simulators' checks (given): simulate's arguments, the response lengths it reads, and
every answer of may_start and take_batch, each against the rule of Task 2 it must follow.

scheduler_core.py and gpu_core.py call these, so that their loops read as the model they
are. A broken rule is a SchedulerError that says which rule broke and in what state, not a
wrong number later; a run that can never finish says why (why_stuck).
"""

import itertools
import math
import numbers
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from lab.input_checks import at_least, at_most, one_of, show_short, whole_at_least


class SchedulerError(RuntimeError):
    """A decision broke a rule of the simulation, or the run can never finish."""


# Upper bounds of the arguments of scheduler.simulate (and of run.py's flags):
MAX_SIGMA = 4.0  # lognormal shape; the median length exp(-sigma**2 / 2) is then 3e-4
MAX_RESPONSES = 10**6  # for B * n_steps and n_lanes: every response is a dict in memory

Response = dict  # a response dict of the simulator (scheduler_core's module docstring)


def check_settings(
    n_lanes: int, B: int, k: int, n_steps: int, train_time: float, drop_stale: bool, sigma: float
) -> None:
    """A ValueError naming the first of simulate's arguments that is out of bounds."""
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


def checked_lengths(lengths: Iterable[float]) -> Iterator[float]:
    """The given lengths as an iterator, each length checked before the simulator reads it.
    A list or tuple is checked a block at a time; any other iterable one length at a time,
    as it is drawn, so a generator or an endless itertools.cycle works too."""
    if isinstance(lengths, (list, tuple)):
        return itertools.chain.from_iterable(_checked_blocks(lengths))
    try:
        each = iter(lengths)
    except TypeError:
        raise ValueError(
            f"lengths must be a list or other iterable of numbers, got {lengths!r}"
        ) from None
    return _each_checked(each)


def _checked_blocks(lengths, size=4096):
    for start in range(0, len(lengths), size):
        block = lengths[start : start + size]
        # One pass in C for the usual block of floats > 0; NaN or inf make the sum not finite.
        if not (
            set(map(type, block)) == {float} and min(block) > 0.0 and math.isfinite(sum(block))
        ):
            for i, length in enumerate(block, start):
                _check_length(i, length)
        yield block


def _each_checked(lengths):
    for i, length in enumerate(lengths):
        if type(length) is not float or not 0.0 < length < math.inf:  # one cheap test for
            _check_length(i, length)  # the usual float
        yield length


def _check_length(i, length):
    """lengths[i] is a finite number > 0, or a ValueError that says which one is not."""
    is_number = isinstance(length, numbers.Real) and not isinstance(length, bool)
    if not is_number or not 0 < length < math.inf:
        raise ValueError(
            f"lengths must all be finite numbers > 0, but lengths[{i}] "
            f"(counting from 0) is {length!r}"
        )


def checked_may_start(
    may_start: Callable[..., bool], n_started: int, n_dropped: int, version: int, k: int, B: int
) -> bool:
    """may_start's answer in this state, which must be True or False (numpy's bool too)."""
    answer = may_start(n_started, n_dropped, version, k, B)
    if type(answer) is bool:  # the usual answer, at the cost of one test
        return answer
    if not isinstance(answer, np.bool_):
        raise SchedulerError(
            f"may_start must return True or False, got {answer!r} "
            f"(n_started={n_started}, n_dropped={n_dropped}, version={version}, k={k}, B={B}). "
            "Did you forget the return statement?"
        )
    return bool(answer)


def checked_take_batch(
    take_batch: Callable,
    finished: list[Response],
    version: int,
    k: int,
    B: int,
    drop_stale: bool,
    n_started: int,
    n_dropped: int,
) -> tuple[list[Response] | None, list[Response]]:
    """Call take_batch and make sure it followed the rules of Task 2b: (batch, dropped), with
    batch None or a list of B responses."""
    before = finished[:]
    answer = take_batch(finished, version, k, B, drop_stale)
    if (
        type(answer) is tuple
        and len(answer) == 2
        and answer[0] is None
        and type(answer[1]) is list
        and not answer[1]
        and finished == before
    ):
        return None, []  # nothing taken: the common case, checked cheaply

    def broken(rule):
        return SchedulerError(
            f"take_batch broke a rule: {rule} (version={version}, k={k}, B={B}, "
            f"drop_stale={drop_stale}, n_started={n_started}, n_dropped={n_dropped}, "
            f"responses in `finished` before the call: {len(before)})"
        )

    if not (isinstance(answer, tuple) and len(answer) == 2):
        raise broken(f"it must return a tuple (batch, dropped), got {show_short(answer)}.")
    batch, dropped = answer
    if not isinstance(dropped, (list, tuple)) or (dropped and not drop_stale):
        raise broken(
            f"dropped must be a list, empty unless drop_stale is True; got {show_short(dropped)}."
        )
    if batch is not None:
        if not isinstance(batch, (list, tuple)) or len(batch) != B:
            size = f"{len(batch)} responses" if isinstance(batch, (list, tuple)) else repr(batch)
            raise broken(f"batch must be None or a list of exactly B={B} responses, got {size}.")
        batch = list(batch)
    dropped = list(dropped)
    rule = _misplaced(before, finished, (batch or []) + dropped) or _mislabelled(
        batch or [], dropped, version
    )
    if rule:
        raise broken(rule)
    return batch, dropped


def _misplaced(before, finished, taken):
    """The rule broken by how take_batch moved responses out of `finished`, or None."""
    given = {id(r) for r in before}
    copies = [r for r in taken if id(r) not in given]
    if copies:
        return (
            f"batch and dropped must hold the very dicts that were in `finished` on "
            f"this call, not copies; response {copies[0].get('id')!r} is not one of "
            "them (a copy, or a dict kept from an earlier call?)."
        )
    taken_ids = {id(r) for r in taken}
    kept = [r for r in before if id(r) not in taken_ids]
    if len(kept) + len(taken) != len(before) or finished != kept:
        return (
            "every response in batch and dropped must be removed from `finished`, "
            "and nothing else may be added, removed or reordered there."
        )
    return None


def _mislabelled(batch, dropped, version):
    """The rule broken by the lag or dropped mark take_batch gave a response, or None."""
    for r in batch:
        if r["dropped"] or r["lag"] != version - r["tag"]:
            return (
                f"each trained response needs lag = version - tag = "
                f"{version} - {r['tag']} and dropped False; response {r['id']} has "
                f"lag={r['lag']!r}, dropped={r['dropped']!r}."
            )
    for r in dropped:
        if r["dropped"] is not True or r["lag"] is not None:
            return (
                f"each dropped response needs dropped=True and lag None (it is never "
                f"trained); response {r['id']} has dropped={r['dropped']!r}, "
                f"lag={r['lag']!r}."
            )
    return None


def why_stuck(
    n_started: int,
    n_dropped: int,
    version: int,
    k: int,
    B: int,
    n_finished: int,
    out_of_lengths: bool,
) -> str:
    """Explain a run that can never finish: no lane may start, the trainer has no batch."""
    state = (
        f"version={version}, n_started={n_started}, n_dropped={n_dropped}, "
        f"k={k}, B={B}, {n_finished} finished responses waiting"
    )
    if out_of_lengths:
        culprit = "the given response lengths ran out before the last update"
    elif n_finished >= B:
        culprit = f"take_batch returned no batch although {n_finished} >= B responses were waiting"
    elif n_started - n_dropped < (version + k + 1) * B:
        culprit = (
            "may_start refused although n_started - n_dropped < (version + k + 1) * B"
            + _refused_because(n_started, n_dropped, version, k, B)
        )
    else:
        culprit = "responses went missing: check that take_batch returns every response it removes"
    return f"the simulation can never finish: {culprit} ({state})."


def _refused_because(n_started, n_dropped, version, k, B):
    """What explains a refusal of a start the rule allows, as far as the state tells: the
    missing + 1 (one batch short), n_dropped not subtracted (only when some were dropped),
    or k not counted in batches; "" if none of them would refuse here."""
    count = n_started - n_dropped
    short = count >= (version + k) * B  # refused by n_started - n_dropped < (v + k) * B
    dropped = n_dropped > 0 and n_started >= (version + k + 1) * B  # refused by n_started < ...
    if short and dropped:
        return (
            "; either it stops one batch short (is the + 1 of (version + k + 1) * B "
            "missing?) or it does not subtract n_dropped (dropped responses free their place)"
        )
    if short:
        return (
            f": it stops one batch short, at {count} = (version + k) * B. Is the + 1 of "
            "(version + k + 1) * B missing? The lanes may fill the batch the trainer needs "
            "next, plus k more"
        )
    if dropped:
        return "; does it subtract n_dropped? Dropped responses free their place"
    if k and count >= (version + 1) * B:
        return "; does it allow k batches (k * B responses) ahead?"
    return ""
