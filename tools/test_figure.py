"""The main figure reads at its default size: no two texts of one panel overlap.

It draws rl_systems.png from the reference's snapshot of the default run
(tools/snapshots/default.json), so it needs no experiment to run, and measures every
text's box as the saved figure (90 dpi) renders it.
"""
import json
from itertools import combinations
from pathlib import Path

import pytest

from experiments import main_figure

ROOT = Path(__file__).resolve().parent.parent
PAD = 1.0  # points: two texts closer than this read as one


def overlaps(fig):
    """(panel title, text, text) for each pair of texts of one panel whose boxes, grown by
    PAD on every side, intersect."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig.set_dpi(90)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    pad = PAD * fig.dpi / 72
    found = []
    for ax in fig.axes:
        boxes = [(t.get_text(), t.get_window_extent(renderer).expanded(1, 1).padded(pad))
                 for t in ax.texts if t.get_visible() and t.get_text()]
        found += [(ax.get_title(), a, b) for (a, box_a), (b, box_b) in combinations(boxes, 2)
                  if box_a.overlaps(box_b)]
    return found


def test_no_two_texts_of_a_panel_overlap():
    results = json.loads((ROOT / "tools" / "snapshots" / "default.json").read_text())
    assert not overlaps(main_figure.figure(results))


def test_an_overlap_is_found():
    results = json.loads((ROOT / "tools" / "snapshots" / "default.json").read_text())
    fig = main_figure.figure(results)
    ax = fig.axes[1]
    ax.text(0.5, 0.5, "one", transform=ax.transAxes)
    ax.text(0.5, 0.5, "two", transform=ax.transAxes)
    assert ("Throughput, and lanes busy (Task 2)", "one", "two") in overlaps(fig)


if __name__ == "__main__":
    pytest.main([__file__])
