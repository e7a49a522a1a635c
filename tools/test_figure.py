"""The figures read at their default size: no two texts of one panel overlap.

It draws rl_systems.png from the reference's snapshot of the default run
(tools/snapshots/default.json), rl_systems_preset.png (its waterfalls) from the snapshot of
--preset all (tools/snapshots/gpu_model.json), and the training runs' figures
(--learning-curves, --ppo-curves) from theirs, so it needs no experiment to run, and
measures every text's box as the saved figure (90 dpi) renders it.
"""

import json
from itertools import combinations
from pathlib import Path

import pytest

from experiments import learning_curves, main_figure, ppo_curves, preset

ROOT = Path(__file__).resolve().parent.parent
PAD = 1.0  # points: two texts closer than this read as one


def overlaps(fig, ticks=False):
    """(panel title, text, text) for each pair of texts of one panel whose boxes, grown by
    PAD on every side, intersect; with ticks, the tick labels and the legend's texts too."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig.set_dpi(90)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    pad = PAD * fig.dpi / 72
    found = []
    for ax in fig.axes:
        texts = list(ax.texts)
        if ticks:
            texts += ax.get_xticklabels() + ax.get_yticklabels()
            texts += ax.get_legend().get_texts() if ax.get_legend() else []
        boxes = [
            (t.get_text(), t.get_window_extent(renderer).expanded(1, 1).padded(pad))
            for t in texts
            if t.get_visible() and t.get_text()
        ]
        found += [
            (ax.get_title(), a, b)
            for (a, box_a), (b, box_b) in combinations(boxes, 2)
            if box_a.overlaps(box_b)
        ]
    return found


def test_no_two_texts_of_a_panel_overlap():
    results = json.loads((ROOT / "tools" / "snapshots" / "default.json").read_text())
    assert not overlaps(main_figure.figure(results))


def preset_figure():
    """rl_systems_preset.png as preset.draw saves it, from the --preset all snapshot."""
    return preset.figure(json.loads((ROOT / "tools" / "snapshots" / "gpu_model.json").read_text()))


def test_no_two_texts_of_the_preset_figure_overlap():
    """The waterfalls (a row per cost), the curve, the hours and verl's phases: labels,
    ticks and legends apart."""
    assert not overlaps(preset_figure(), ticks=True)


def test_an_overlap_of_tick_labels_is_found():
    fig = preset_figure()
    ax = fig.axes[0]
    ax.set_yticks([0, 0.05], ["one", "two"])
    assert any({"one", "two"} == {a, b} for _, a, b in overlaps(fig, ticks=True))


def test_an_overlap_is_found():
    results = json.loads((ROOT / "tools" / "snapshots" / "default.json").read_text())
    fig = main_figure.figure(results)
    ax = fig.axes[1]
    ax.text(0.5, 0.5, "one", transform=ax.transAxes)
    ax.text(0.5, 0.5, "two", transform=ax.transAxes)
    assert ("Throughput, and lanes busy (Task 2)", "one", "two") in overlaps(fig)


@pytest.mark.parametrize("experiment", [learning_curves, ppo_curves])
def test_the_training_figures_read_at_their_size(experiment, monkeypatch):
    # at most six panels, no overlapping texts, and numbers on every axis
    results = json.loads((ROOT / "tools" / "snapshots" / f"{experiment.KEY}.json").read_text())
    drawn = []
    monkeypatch.setattr("matplotlib.figure.Figure.savefig", lambda fig, *a, **k: drawn.append(fig))
    experiment.draw(results, ROOT / "unused.png")
    (fig,) = drawn
    assert len(fig.axes) <= 6
    assert not overlaps(fig)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
            assert len(labels) >= 2, f"{ax.get_title()}: too few tick labels {labels}"


if __name__ == "__main__":
    pytest.main([__file__])
