"""No GPU-model prediction reads a held-out number (python -m pytest -q tools/test_gpu_held_out.py;
about a minute: it reruns every preset twice, so it stays out of the students' suite).

Each preset is run as it is and with every published number it is compared with moved
by 10% (its hours, its Fig. 7 curve, verl's rows), the one number its lengths were set
from excepted: that one lives in experiments/gpu_sources.py's module constants (AREAL_FIG7's
k = 0 point and AREAL_SYNC_HOURS, VERL_ASYNC_UPDATE), which this test leaves alone.
The bound, every step of the walk and every prediction must come out exactly the same.
"""
import pytest

from experiments.gpu_model import gpu_comparison
from experiments.gpu_sources import PRESETS
from solutions import memory, scheduler


def moved(preset, factor=1.1):
    """The preset with every held-out published number times `factor`."""
    curve = tuple((k, v * factor) for k, v in preset.curve)
    scaling = ()
    if preset.scaling:
        colocated, asynchronous = preset.scaling
        scaling = ({g: {key: v * factor for key, v in row.items()} for g, row in colocated.items()},
                   {g: {key: v * (1 if (g, key) == (preset.gen_gpus, "update_actor") else factor)
                        for key, v in row.items()} for g, row in asynchronous.items()})
    return preset._replace(sync_hours=preset.sync_hours * factor,
                           async_hours=preset.async_hours * factor, curve=curve, scaling=scaling)


def predictions(g):
    return dict(walk=[(w["name"], w["seconds"], w["sync_seconds"]) for w in g["walk"]],
                held_out=[(what, predicted, bound) for what, predicted, _, _, bound, _
                          in g["held_out"]],
                by_k=[r["throughput"] for r in g["by_k"]], set=[row[:2] for row in g["set"]])


@pytest.mark.parametrize("name", list(PRESETS))
def test_no_prediction_moves_when_a_held_out_number_does(name, monkeypatch):
    original = gpu_comparison(scheduler, memory, name)
    monkeypatch.setitem(PRESETS, name, moved(PRESETS[name]))
    after = gpu_comparison(scheduler, memory, name)
    assert predictions(after) == predictions(original)
    # the published side did move (so the check is not vacuous): every ratio by 1 / 1.1
    for (what, _, _, before, *_), (_, _, _, now, *_) in zip(original["held_out"],
                                                           after["held_out"]):
        if what.startswith("speedup"):
            assert now == pytest.approx(before)  # both hours moved alike
        else:
            assert now == pytest.approx(before / 1.1), what
