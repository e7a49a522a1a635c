"""A finished response as the simulator makes it, and what a test observes of one
take_batch call: shared by the graded tests (which observe the student's function) and
the instructors' reference (which stores what the right rule and each known mistake
give), so the two observe alike."""

from collections.abc import Callable, Iterable
from typing import Any

# A finished response as the simulator keeps it (see response below).
Response = dict[str, Any]


def response(id: int, tag: str, start: float | None = None, length: float = 1.0) -> Response:
    """A finished response dict: id, tag, start (its id unless given), end, length, lag
    (None until trained), dropped."""
    start = float(id) if start is None else start
    return dict(
        id=id, tag=tag, start=start, end=start + length, length=length, lag=None, dropped=False
    )


def ids(responses: list[Response] | None) -> list[int] | None:
    return None if responses is None else [r["id"] for r in responses]


def take_outcome(
    take_batch: Callable[..., Any],
    shapes: Iterable[tuple[int, str, float, float]],
    version: int,
    k: int,
    B: int,
    drop_stale: bool,
) -> str:
    """What take_batch does to fresh responses of these shapes ((id, tag, start, length), in
    finish order), written out exactly: (batch ids or None, dropped ids sorted, ids left in
    `finished`, and (id, lag, dropped) of every response)."""
    finished = [response(i, tag, start, length) for i, tag, start, length in shapes]
    given = list(finished)
    batch, dropped = take_batch(finished, version, k, B, drop_stale)
    batch_ids = ids(batch)
    # a None from the student's take_batch fails in sorted, as it should
    dropped_ids = sorted(ids(dropped))  # type: ignore[arg-type]
    return repr(
        (batch_ids, dropped_ids, ids(finished), [(r["id"], r["lag"], r["dropped"]) for r in given])
    )
