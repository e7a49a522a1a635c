"""Command-line option types that several experiments share (given)."""
import argparse
import math


def bounded(kind, low, high=math.inf):
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
                f"{upper}, got {text!r}")
        return value
    return parse
