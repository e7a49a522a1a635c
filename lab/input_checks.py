"""Input checks (given): shared by the task files and the toy; you do not write these.

Each check raises a ValueError that names the argument and what is allowed,
so a bad call fails on its first line instead of deep inside the maths.
`checked` puts a task function's checks (lab/contracts.py) in one line above it:

    @checked(contracts.may_start)
    def may_start(n_started, n_dropped, version, k, B):
        ...your code only...

Numpy types follow one rule, in every check here and in lab/contracts.py: a numpy value
is judged by its value, as the Python value it equals would be. A numpy int or float is a
number (np.int64(7) is the whole number 7), np.True_ is True, and a float64 array is a
float64 array whatever its byte order or memory layout (a view, a transpose, Fortran
order, big-endian '>f8'). A numpy int is fine while its value fits in its type; past
that, numpy's arithmetic wraps without a word, and the tests that check answers exactly,
not these checks, find it (the docstrings of model_state_bytes and kv_cache_bytes
say where).
"""

import functools
import inspect
import math
import numbers
from collections.abc import Callable
from typing import TypeAlias

import numpy as np

# The numbers the checks take, for the task functions' signatures: Python's and numpy's
# (np.int64(7), np.float32(0.5)); a Whole one is an int, a float such as 7e9 or a numpy int
# (whole_at_least checks that it is whole).
Number: TypeAlias = int | float | np.integer | np.floating
Whole: TypeAlias = int | float | np.integer


class ContractError(ValueError):
    """Given code found that a task function's answer broke a rule it relies on (a sum
    where a mean is due, a wrong shape): the task's code is at fault, not the lab's."""


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


def at_most(name, value, high, why):
    """Require `value` <= `high`; `why` says what the bound protects ("the lengths
    underflow")."""
    if value > high:
        raise ValueError(f"{name} must be at most {high} ({why}), got {value!r}")


def real_array(name, value):
    """`value` as a float array; a ValueError for complex numbers or anything not numeric."""
    array = np.asarray(value)
    if np.iscomplexobj(array):
        raise ValueError(f"{name} must hold real numbers, got complex values")
    try:
        return array.astype(float, copy=False)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {show_short(value)}") from None


def is_float64(answer):
    """True for a numpy array of float64 numbers, in any byte order or memory layout."""
    return (
        isinstance(answer, np.ndarray) and answer.dtype.kind == "f" and answer.dtype.itemsize == 8
    )


def show_short(value, width=60):
    """repr(value), cut to one short line. A long list or tuple (of response dicts, say)
    is shown by its length and its first item: 'a list of 32 items, the first: {...}'."""
    text = repr(value)
    if len(text) <= width:
        return text
    if isinstance(value, (list, tuple)) and value:
        first = show_short(value[0], width)
        return f"a {type(value).__name__} of {len(value)} items, the first: {first}"
    return text[: width - 3] + "..."


def checked(inputs, returns=None):
    """A decorator: check a task function's arguments before it runs, and its answer after.

    inputs(**arguments) raises a ValueError for a bad argument; it may return a dict of
    arguments to replace (lists as float arrays, say), which the function then receives.
    returns(name, answer, **arguments), if given, raises a ContractError for an answer
    of the wrong shape or type, before any given code uses it.
    The arguments are bound to the function's own signature, and the checks get the ones
    they name: a parameter the student added (a helper default, a memo) is passed on unchecked.
    The decorated function keeps its name, signature and docstring; the undecorated one
    is its `unchecked` (see `unchecked` below).
    """
    checks = inspect.signature(inputs).parameters

    def decorate(function):
        signature = inspect.signature(function)
        names = list(signature.parameters)
        # The usual call passes every parameter by position, to a function whose parameters
        # all may be: zip binds it, eight times faster than inspect's bind (which takes a third
        # of a quick task function's checked call); every other call goes through bind.
        plain = all(p.kind is p.POSITIONAL_OR_KEYWORD for p in signature.parameters.values())

        @functools.wraps(function)
        def checked_function(*args, **kwargs):
            if plain and not kwargs and len(args) == len(names):
                arguments = dict(zip(names, args))
            else:
                call = signature.bind(*args, **kwargs)
                call.apply_defaults()
                arguments = call.arguments
            named = {name: arguments[name] for name in checks if name in arguments}
            arguments.update(inputs(**named) or {})
            answer = function(**arguments) if plain else function(*call.args, **call.kwargs)
            if returns is not None:
                returns(function.__name__, answer, **arguments)
            return answer

        checked_function.unchecked = function  # type: ignore[attr-defined]
        return checked_function

    return decorate


def unchecked(function: Callable) -> Callable:
    """`function` without the checks `checked` put above it, or `function` itself if it has
    none. Given code that calls a task function on values it made itself, already checked
    once (the simulator's loop, the toy's sums), calls this, so the checks cost nothing
    there; the answers it gets are still checked where they are used."""
    return getattr(function, "unchecked", function)
