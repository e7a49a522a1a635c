"""The graded tests' expected values, as data (given): nothing here computes an answer.

The tests compare a student's answers with what the reference gives on the same
inputs, and a "Likely mistake" line with what each known mistake gives on its
task's probes. Those outcomes are stored in grading/expected.json, made by the
instructors' tool (tools/make_expected.py) with the reference, for the inputs the
tests draw at LAB_SEED=2026 (STORED_SEED). A stored table is found by its name (the
task function, or "1a:right" and "1a:<mistake>" for a hint's fingerprints) and by
a digest of its inputs, so a table is used only for the very inputs it was made on.

With another LAB_SEED the random tests draw other inputs, whose answers are not
stored: where the reference is at hand (the instructors' copy and the autograder)
they are worked out with it; in the students' copy such a test is skipped, saying
why, and no hint is shown.
"""

import base64
import copy
import hashlib
import importlib
import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import grading

DATA = Path(__file__).with_name("expected.json")
STORED_SEED = 2026
ORACLES = "solutions.oracles"  # the instructors' reference and mistake models
RECORD: dict[str, dict[str, list[Any]]] | None = (
    None  # tools/make_expected.py sets a dict: every table is worked out and kept here
)


class StaleData(LookupError):
    """grading/expected.json has no table for inputs the tests use at the stored seed."""


# ---------------------------------------------------------------- the format


def encode(value: Any) -> Any:
    """value as JSON that keeps what the tests' comparisons tell apart: bool, int (any size)
    and float (NaN and inf too), None, str, list and tuple, dicts, numpy arrays (dtype,
    shape) and numpy numbers (dtype)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, tuple):
        return {"tuple": [encode(item) for item in value]}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):  # its bytes, every bit of every number, compressed
        raw = zlib.compress(np.ascontiguousarray(value).tobytes(), 9)
        return {
            "array": value.dtype.str,
            "shape": list(value.shape),
            "zlib": base64.b64encode(raw).decode(),
        }
    if isinstance(value, np.generic):
        return {"scalar": value.dtype.str, "value": value.item()}
    raise TypeError(f"cannot store a {type(value).__name__} as an expected value")


def decode(data: Any) -> Any:
    """The value encode() wrote (arrays read-only: an expected value is never changed)."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    if "tuple" in data:
        return tuple(decode(item) for item in data["tuple"])
    if "dict" in data:
        return {decode(k): decode(v) for k, v in data["dict"]}
    if "array" in data:
        raw = zlib.decompress(base64.b64decode(data["zlib"]))
        array = np.frombuffer(raw, dtype=data["array"])
        return array.reshape(data["shape"])  # (read-only: it is the bytes' view)
    return np.dtype(data["scalar"]).type(data["value"])


def digest(cases: Any) -> str:
    """A short fingerprint of a list of inputs: equal for equal inputs, types included."""
    hasher = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, np.ndarray):
            hasher.update(f"a{value.dtype.str}{value.shape}".encode())
            hasher.update(np.ascontiguousarray(value).tobytes())
        elif isinstance(value, (list, tuple)):
            hasher.update(f"{type(value).__name__[0]}{len(value)}(".encode())
            for item in value:
                feed(item)
            hasher.update(b")")
        elif isinstance(value, dict):
            feed(list(value.items()))
        elif isinstance(value, np.generic):
            hasher.update(f"g{value.dtype.str}{value.item()!r};".encode())
        else:
            hasher.update(f"{type(value).__name__}{value!r};".encode())

    feed(cases)
    return hasher.hexdigest()[:16]


# ---------------------------------------------------------------- the tables

_STORED: dict[
    str, Any
] = {}  # "tables" and "values" of DATA, once read; decoded tables by (name, digest)


def stored(name: str, key: str) -> list[Any]:
    """The stored table `name` for inputs of digest `key`, decoded; KeyError if none."""
    if not _STORED:
        data = json.loads(DATA.read_text())
        _STORED.update(tables=data["tables"], values=data["values"], decoded={})
    decoded = _STORED["decoded"]
    if (name, key) not in decoded:
        decoded[name, key] = [decode(_STORED["values"][i]) for i in _STORED["tables"][name][key]]
    return decoded[name, key]


def oracles() -> ModuleType | None:
    """The instructors' module of reference answers, or None in the students' copy."""
    if not (grading.SOLUTIONS_DIR / "oracles.py").is_file():
        return None
    return importlib.import_module(ORACLES)


def tables(names: Sequence[str], cases: Sequence[Any]) -> dict[str, list[Any]] | None:
    """{name: [the outcome of oracle `name` on each case]} for every name, or None where
    neither the data nor the reference has them (inputs drawn at another LAB_SEED, in the
    students' copy). Inputs that are not random are stored, whatever the seed; inputs
    drawn at the stored seed always are."""
    key = digest(cases)
    if RECORD is None:
        try:
            return {name: stored(name, key) for name in names}
        except KeyError:
            if grading.test_seed() == STORED_SEED:
                raise StaleData(
                    f"{DATA.name} holds no expected values for these inputs of "
                    f"{names[0]!r}: run python tools/make_expected.py --write"
                ) from None
    module = oracles()
    if module is None:
        return None
    with np.errstate(all="ignore"):  # a mistake's model may overflow: that is its answer
        found = {
            name: [module.ORACLES[name](*copy.deepcopy(case)) for case in cases] for name in names
        }
    if RECORD is not None:
        for name, values in found.items():
            RECORD.setdefault(name, {})[key] = values
    return found


def answers(name: str, cases: Sequence[Any]) -> list[Any]:
    """[the reference's outcome on each case] of task function `name`; skips the test
    (saying why) where they cannot be had: another LAB_SEED in the students' copy."""
    found = tables([name], cases)
    if found is None:
        import pytest  # (only the tests get here)

        pytest.skip(
            f"LAB_SEED={grading.test_seed()}: the expected values of this test's "
            f"random inputs are stored for LAB_SEED={STORED_SEED} only (the "
            "autograder's fresh-seed run works them out with the reference)"
        )
    return found[name]


def answer(name: str, *args: Any) -> Any:
    """The reference's outcome of task function `name` on one case."""
    return answers(name, [args])[0]
