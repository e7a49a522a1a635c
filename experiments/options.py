"""run.py's command line (given): option types the experiments share, its help and its --out."""

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grading import harness


def bounded(kind: type, low: float, high: float = math.inf) -> Callable[[str], Any]:
    """An argparse type: a `kind` (int or float) from low to high, else a clear error."""

    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high or value == math.inf:
            upper = f" and <= {high}" if high < math.inf else ""
            raise argparse.ArgumentTypeError(
                f"must be {'a whole number' if kind is int else 'a finite number'} >= {low}"
                f"{upper}, got {text!r}"
            )
        return value

    return parse


class DefaultsOnce(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows a flag's default once: not for switches (off unless given), not for
    a default of None, and not where the help text already says it."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False or "(default" in action.help:
            return action.help
        return super()._get_help_string(action)


def png_path(text: str) -> Path:
    """An argparse type: a .png file that can be written, in a folder that exists, with
    room for its .json beside it (checked now, before any computation)."""
    path = Path(text)
    if path.suffix != ".png":
        raise argparse.ArgumentTypeError(f"must be a .png file, got {text!r}")
    problem = harness.cannot_write(path) or harness.cannot_write(path.with_suffix(".json"))
    if problem:
        raise argparse.ArgumentTypeError(f"cannot save {text!r}: {problem}")
    return path
