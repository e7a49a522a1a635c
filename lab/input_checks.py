"""Input checks (given): shared by the task files and the toy; you do not write these.

Each check raises a ValueError that names the argument and what is allowed,
so a bad call fails on its first line instead of deep inside the maths.
"""
import math
import numbers


def at_least(name, value, low):
    """Require a real number `value` >= `low`."""
    is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not is_number or not math.isfinite(value) or not value >= low:
        raise ValueError(f"{name} must be a finite number >= {low}, got {value!r}")


def whole_at_least(name, value, low):
    """Require a whole number `value` >= `low` (7.0 is allowed, 7.5 is not)."""
    at_least(name, value, low)
    if value != int(value):
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")


def one_of(name, value, allowed):
    """Require `value` to be one of `allowed`."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
