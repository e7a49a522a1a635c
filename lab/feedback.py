"""Failure messages for the tests (given): expected vs got, and the likely mistake.

A graded test calls `check(got, expected, what, mistakes)`. When it fails, the
student reads one message: what was computed, from which inputs, the expected
and the actual value, and, when the actual value is exactly what one known
mistake gives, which mistake that is.

A wrong hint sends a student to fix code that is right, so a hint is shown
only when it is certain on the test's inputs: the value matches that mistake's
and no other known mistake gives the same value. Two mistakes that agree on
these inputs get no hint at all.
"""
import numpy as np


def likely(got, mistakes):
    """'Likely mistake: ...' if `got` equals the answer of exactly one known mistake.

    mistakes: (wrong value, why) pairs. Several pairs may share a `why` (one
    mistake, several forms); a value that matches two different `why`s is
    ambiguous and gets no hint.
    """
    matched = list(dict.fromkeys(why for wrong, why in mistakes if same(got, wrong)))
    return f"\n  Likely mistake: {matched[0]}" if len(matched) == 1 else ""


def same(got, expected, rtol=1e-9, atol=1e-12):
    """Numbers, lists or arrays equal in shape and (to rounding) in value."""
    if got is None or expected is None:
        return got is expected
    try:
        got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and np.allclose(got, expected, rtol=rtol, atol=atol)


def show(value):
    """A value on one short line, for a failure message."""
    if np.ndim(value) == 0 or (isinstance(value, (list, tuple)) and np.size(value) <= 16):
        return repr(value)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return repr(value)
    if array.size > 16:
        finite = array[np.isfinite(array)]
        values = f"from {finite.min():.4g} to {finite.max():.4g}" if finite.size else "none finite"
        return (f"an array of shape {array.shape}, values {values}, "
                f"{np.isnan(array).sum()} NaN, {np.isinf(array).sum()} inf")
    return f"array({np.round(array, 6).tolist()})"


def check(got, expected, what, mistakes=(), rtol=1e-9, atol=1e-12):
    """Assert got == expected (to rounding), with a message a student can act on."""
    hint = likely(got, mistakes)
    if got is None and not hint:
        hint = " (did you forget a return statement?)"
    assert same(got, expected, rtol, atol), (
        f"{what}: expected {show(expected)}, got {show(got)}.{hint}")


def check_cases(cases, got, expected, what, rule, mistakes=()):
    """Assert a function gave the expected answer on every case, showing the smallest wrong one.

    cases:    the inputs, each a short readable string ("may_start(8, 1, 0, 1, 4)"),
              smallest first: the first wrong one is the counter-example shown.
    got, expected: the answers, one per case.
    rule:     the rule in words, printed with the failure.
    mistakes: {why: the answers that mistake gives, one per case}, or a function
              that returns it (called only on a failure, as it may be costly). The
              hint comes from all the cases together, so it is shown only when
              exactly one known mistake gives every answer the student gave.
    """
    wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if not same(g, e)]
    if not wrong:
        return
    hint = likely_everywhere(got, mistakes() if callable(mistakes) else mistakes)
    if not hint and all(g is None for g in got):
        hint = "\n  (did you forget a return statement?)"
    first = wrong[0]
    raise AssertionError(
        f"{what}: {len(wrong)} of {len(cases)} cases wrong. The rule: {rule}\n"
        f"  smallest wrong case: {cases[first]} returned {show(got[first])}, "
        f"expected {show(expected[first])}{hint}")


def likely_everywhere(got, mistakes):
    """likely() over many cases: the mistake must match the student's answer on every case."""
    matched = [why for why, answers in mistakes.items()
               if len(answers) == len(got) and all(same(g, a) for g, a in zip(got, answers))]
    return f"\n  Likely mistake: {matched[0]}" if len(matched) == 1 else ""
