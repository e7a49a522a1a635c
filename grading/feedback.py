"""Failure messages for the tests (given): expected vs got, and the likely mistake.

A graded test calls `check(got, expected, what, hint)`. When it fails, the
student reads one message: what was computed, from which inputs, the expected
and the actual value, and, when the student's function certainly behaves like
one known mistake, which mistake that is.

A wrong hint sends a student to fix code that is right, so a hint is a
hypothesis tested before it is shown. Each task's known mistakes are gathered
with a probe set in `KnownMistakes`: every input the task's tests use, plus
seeded random inputs on which the mistakes disagree with one another. What the
right rule and each mistake give on the probes (their fingerprints) is data,
read through grading/expected.py. Mistake M is named only if the student's
function agrees with M's fingerprint on every probe, and with the right answer
on none of the probes where M differs from it. A mistake the lab does not know
may agree with M on one test, but not on all of these; then no hint is shown.
The probes run only after a test has failed, under a short time limit: a probe
that errors or runs too long, or probes whose fingerprints are not at hand
(another LAB_SEED in the students' copy), mean no hint.
"""

import copy
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

import grading
from grading import expected
from grading.harness import HINT_LIMIT, StudentExit, TimeLimitExceeded, shorter_limit
from lab.input_checks import show_short
from lab.tolerances import FLOATS, Tolerance


class Mistake(NamedTuple):
    why: str  # the hint: what the student did, and what the rule is
    mutant: str  # the corpus mutant it describes (tools/mutants.py, its `mistake`), which
    # also names its fingerprint: the table "<task>:<mutant>"


def call(function: Callable[..., Any], args: Sequence[Any]) -> Any:
    """function(*args), on copies of the arguments (a probe must not change them)."""
    return function(*copy.deepcopy(args))


class KnownMistakes:
    """The known mistakes of one task function, and the probes that tell them apart.

    task:     the task ("1a"): its fingerprints are the tables "<task>:right" and
              "<task>:<mutant>" of grading/expected.py.
    mistakes: Mistake(why, mutant) for each known mistake.
    probes:   a function returning the probe inputs: a list of argument tuples.
    observe:  observe(function, args) -> the value to compare (default: the return
              value, on copies of args); it may call with keywords, or read what a
              function changed in its arguments.
    limit:    seconds the student's function gets for all the probes together.
    fingerprints: fingerprints(names, probes) -> {name: answers} or None (default: the
              stored tables, expected.tables; a test of this class passes its own).
    """

    def __init__(
        self,
        task: str,
        mistakes: Sequence[Mistake],
        probes: Callable[[], Sequence[Any]],
        observe: Callable[[Callable[..., Any], Any], Any] = call,
        limit: float = HINT_LIMIT,
        fingerprints: Callable[..., dict[str, list[Any]] | None] = expected.tables,
    ) -> None:
        self.task, self.mistakes, self.probes, self.observe = task, mistakes, probes, observe
        self.limit, self.fingerprints = limit, fingerprints
        self._tables: dict[
            int, Any
        ] = {}  # seed -> (probes, right answers, each mistake's answers) or None
        self._hints: dict[
            int, tuple[Callable[..., Any], str]
        ] = {}  # id(function) -> (function, its hint or "")
        self._right: dict[
            int, tuple[Callable[..., Any], bool]
        ] = {}  # id(function) -> (function, whether it is right on every probe)

    def tables(self) -> tuple[Sequence[Any], list[Any], dict[Mistake, list[Any]]] | None:
        """(probes, right answers, {mistake: its answers}), the same for every student, so
        read once per seed; None where the fingerprints are not at hand."""
        seed = grading.test_seed()
        if seed not in self._tables:
            probes = self.probes()
            names = {m: f"{self.task}:{m.mutant}" for m in self.mistakes}
            found = self.fingerprints([f"{self.task}:right", *names.values()], probes)
            self._tables[seed] = (
                None
                if found is None
                else (
                    probes,
                    found[f"{self.task}:right"],
                    {m: found[names[m]] for m in self.mistakes},
                )
            )
        return self._tables[seed]

    def matches(self, function: Callable[..., Any]) -> list[Mistake]:
        """The mistakes the function behaves like on every probe (a list of Mistakes).

        One probe at a time, each answer compared and dropped at once (an answer may be
        large), stopping as soon as no mistake is left. [] if a probe errs or the probes
        run past the limit."""
        found = self.tables()
        if found is None:
            return []
        probes, right, answers = found
        left = list(self.mistakes)
        start = time.monotonic()
        try:
            with shorter_limit(self.limit), np.errstate(all="ignore"):
                for i, args in enumerate(probes):
                    got = self.observe(function, args)
                    left = [
                        m
                        for m in left
                        if same(got, answers[m][i])
                        and (same(answers[m][i], right[i]) or not same(got, right[i]))
                    ]
                    if not left or time.monotonic() - start > self.limit:  # (no alarm: Windows)
                        return []
        except (Exception, TimeLimitExceeded, StudentExit):  # noqa: BLE001 (no hint, that's all)
            return []
        return left

    def right_everywhere(self, function: Callable[..., Any]) -> bool:
        """True if the function gives the right answer on every probe (within the limit);
        found once per function."""
        cached = self._right.get(id(function))
        if cached is None or cached[0] is not function:
            found, right = self.tables(), False
            if found is not None:
                try:
                    with shorter_limit(self.limit), np.errstate(all="ignore"):
                        right = all(
                            same(self.observe(function, args), want)
                            for args, want in zip(found[0], found[1])
                        )
                except (Exception, TimeLimitExceeded, StudentExit):  # noqa: BLE001 (not right)
                    right = False
            cached = self._right[id(function)] = (function, right)
        return cached[1]

    def hint(self, function: Callable[..., Any]) -> str:
        """'\\n  Likely mistake: ...' if the function behaves like exactly one known
        mistake (several models may share one `why`), else ''. Found once per function."""
        cached = self._hints.get(id(function))
        if cached is None or cached[0] is not function:
            whys = list(dict.fromkeys(mistake.why for mistake in self.matches(function)))
            hint = f"\n  Likely mistake: {whys[0]}" if len(whys) == 1 else ""
            cached = self._hints[id(function)] = (function, hint)  # (kept alive: ids stay unique)
        return cached[1]

    def about(self, function: Callable[..., Any]) -> Callable[[], str]:
        """The hint for `function`, to be found only if a check fails: pass this to check()."""
        return lambda: self.hint(function)


def same(got: Any, expected: Any, tolerance: Tolerance = FLOATS) -> bool:
    """Numbers, lists or arrays equal in shape and (within `tolerance`, lab/tolerances.py)
    in value; NaN equals NaN, so a model that overflows where the student's code does is
    confirmed. Other values (lists with None in them, say) must be equal."""
    rtol, atol = tolerance.rtol, tolerance.atol
    if got is None or expected is None:
        return got is expected
    if type(got) is type(expected) and type(got) in (bool, int, float):  # the usual case, quickly
        if got == expected or (got != got and expected != expected):  # (NaN equals NaN)
            return True
        try:  # np.allclose's test; never true for inf (an int too big for a float: False)
            return (
                math.isfinite(got)
                and math.isfinite(expected)
                and abs(got - expected) <= atol + rtol * abs(expected)
            )
        except OverflowError:
            return False
    if (
        type(got) is type(expected) is np.ndarray
        and got.shape == expected.shape
        and got.dtype == expected.dtype == np.float64
    ):
        # The usual arrays, quickly: np.allclose's test without its set-up, which takes most
        # of its time. Only a pass is decided here, where every expected number is finite (a
        # finite answer where inf is expected is within any tolerance, yet wrong); inf, NaN or
        # a difference go on to np.allclose below.
        with np.errstate(all="ignore"):
            if (np.abs(got - expected) <= atol + rtol * np.abs(expected)).all() and np.isfinite(
                expected
            ).all():
                return True
    try:
        if np.shape(got) != np.shape(expected):  # before copying what may be a large answer
            return False
        got_array, expected_array = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError, OverflowError):
        try:
            return type(got) is type(expected) and bool(got == expected)
        except Exception:  # noqa: BLE001 (a value that cannot even be compared is not equal)
            return False
    return got_array.shape == expected_array.shape and bool(
        np.allclose(got_array, expected_array, rtol=rtol, atol=atol, equal_nan=True)
    )


WIDTH = 100  # characters of one value in a message, at most


def show(value: Any, exact: bool = False) -> str:
    """A value on one short line, for a failure message: a short list as it is, a long
    one by its length and first item, an array to 6 decimals (`exact`: every digit of
    each number), a large one by its range, a numpy number as the Python number it is."""
    if isinstance(value, np.generic):  # np.float64(3.75) -> 3.75, np.True_ -> True
        value = value.item()
    if isinstance(value, (list, tuple)) and len(repr(value)) <= WIDTH:
        return repr(value)
    if not isinstance(value, (list, tuple, np.ndarray)):
        return (
            repr(float(value)) if exact and isinstance(value, (float, np.floating)) else repr(value)
        )
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):  # not numbers (response dicts, say)
        return show_short(value, WIDTH)
    if array.size > 16:
        finite = array[np.isfinite(array)]
        values = f"from {finite.min():.4g} to {finite.max():.4g}" if finite.size else "none finite"
        return (
            f"an array of shape {array.shape}, values {values}, "
            f"{np.isnan(array).sum()} NaN, {np.isinf(array).sum()} inf"
        )
    return f"array({(array if exact else np.round(array, 6)).tolist()})"


def expected_got(expected: Any, got: Any, tolerance: Tolerance = FLOATS) -> str:
    """'expected X, got Y', both in one form: numbers expected as a list are shown as an
    array when the answer is an array, and as a list when it is a list. Numbers that would
    print alike are shown with every digit; for numbers of one shape, the first element
    that differs and the largest difference."""
    try:
        e, g = np.asarray(expected), np.asarray(got)
    except (TypeError, ValueError, OverflowError):  # a ragged list
        return f"expected {show(expected)}, got {show(got)}"
    if e.ndim and g.ndim and e.dtype.kind in "biuf" and g.dtype.kind in "biuf":
        if isinstance(got, np.ndarray):
            expected = e
        elif isinstance(got, (list, tuple)) and isinstance(expected, np.ndarray):
            expected = expected.tolist()
    if e.shape != g.shape or e.dtype.kind not in "biuf" or g.dtype.kind not in "biuf":
        return f"expected {show(expected)}, got {show(got)}"
    numbers = "b" not in (e.dtype.kind + g.dtype.kind)  # (True and False have no difference)
    with np.errstate(all="ignore"):
        ef, gf = e.astype(float), g.astype(float)
        alike = show(expected) == show(got) or np.array_equal(
            np.round(ef, 6), np.round(gf, 6), equal_nan=True
        )
        text = f"expected {show(expected, alike)}, got {show(got, alike)}"
        wrong = ~np.isclose(gf, ef, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True)
        if not wrong.any() or not (alike or e.size > 1):
            return text
        if e.size > 1:
            at = tuple(int(i) for i in np.argwhere(wrong)[0])
            text += (
                f"; first difference at index {list(at)}: expected {e[at].item()!r}, "
                f"got {g[at].item()!r}"
            )
        finite = wrong & np.isfinite(gf) & np.isfinite(ef)
        if numbers and finite.any():
            gap, scale = np.abs(gf - ef)[finite], np.abs(ef)[finite]
            text += f"; largest difference {gap.max():.3g}"
            if (scale > 0).any():
                text += f" (relative {np.max(gap[scale > 0] / scale[scale > 0]):.3g})"
    return text


def check(
    got: Any,
    expected: Any,
    what: str,
    hint: Callable[[], str] | None = None,
    where: Callable[[Any, Any], str] | None = None,
    tolerance: Tolerance = FLOATS,
) -> None:
    """Assert got == expected (within `tolerance`), with a message a student can act on.

    hint:  KnownMistakes.about(function), asked only when the check fails.
    where: where(got, expected) -> text saying where the answer broke, if it can tell.
    tolerance: the kind of comparison (lab/tolerances.py)."""
    if same(got, expected, tolerance):
        return
    found = (where(got, expected) if where else "") + (hint() if hint else "")
    if got is None and not found:
        found = " (did you forget a return statement?)"
    raise AssertionError(f"{what}: {expected_got(expected, got, tolerance)}.{found}")


def check_cases(
    cases: Sequence[Any],
    got: Sequence[Any],
    expected: Sequence[Any],
    what: str,
    rule: str,
    hint: Callable[[], str] | None = None,
    shown: Callable[[Any], str] = str,
) -> None:
    """Assert a function gave the expected answer on every case, showing the smallest wrong one.

    cases:    the inputs, smallest first: the first wrong one is the counter-example shown.
    got, expected: the answers, one per case.
    rule:     the rule in words, printed with the failure.
    hint:     KnownMistakes.about(function), asked only when a case is wrong.
    shown:    shown(case) -> the case as a short readable string ("may_start(8, 1, 0, 1, 4)"),
              written out only for the case shown (by default the cases are such strings).
    """
    wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if not same(g, e)]
    if not wrong:
        return
    found = hint() if hint else ""
    if not found and all(g is None for g in got):
        found = "\n  (did you forget a return statement?)"
    first = wrong[0]
    raise AssertionError(
        f"{what}: {len(wrong)} of {len(cases)} cases wrong. The rule: {rule}\n"
        f"  smallest wrong case: {shown(cases[first])}: "
        f"{expected_got(expected[first], got[first])}{found}"
    )
