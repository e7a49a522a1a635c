"""Printing helpers that several experiments share (given)."""

import textwrap
from typing import Any

WIDTH = 100  # the longest line run.py prints


def say(text: str) -> None:
    """Print prose, each of its lines wrapped at WIDTH characters, the wrapped part two spaces
    further in than the line. (The tables are laid out to fit.)"""
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        print(
            textwrap.fill(
                line,
                WIDTH,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )


def row_name(row: dict[str, Any]) -> str:
    """A staleness row's k as printed: "1" or "1 drop" (k = 1 dropping stale responses)."""
    return f"{row['k']}" + (" drop" if row["drop_stale"] else "")
