"""Failure messages for the tests (given): expected vs got, and the likely mistake.

A graded test calls `check(got, expected, what, mistakes)`. When it fails, the
student reads one message: what was computed, from which inputs, the expected
and the actual value, and, when the actual value is exactly what a known
mistake gives, which mistake that is.
"""
import numpy as np


def likely(got, mistakes):
    """'Likely mistake: ...' if `got` equals the answer of a known mistake."""
    for wrong, why in mistakes:
        if same(got, wrong):
            return f"\n  Likely mistake: {why}"
    return ""


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
