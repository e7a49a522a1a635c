"""The --preset figure (given): predicted against published hours, and one engine's speed.

Kept apart from lab/figure.py: one figure per file of the optional parts that
have their own module.
"""
from matplotlib.figure import Figure

from lab.figure import placeholder


def draw(results, path):
    """Save rl_systems_gpu_model.png: a row per preset, hours on the left (predicted
    beside published), one engine's tokens per second over a synchronous step on the right."""
    runs = results["gpu_model"]
    rows = len(runs) if runs else 1
    fig = Figure(figsize=(11, 3.6 * rows))
    axes = fig.subplots(rows, 2, squeeze=False)
    if not runs:
        for ax in axes[0]:
            placeholder(ax, results["unavailable"]["GPU model"])
    for (ax_hours, ax_speed), g in zip(axes, (runs or {}).values()):
        hours_panel(g, ax_hours)
        speed_panel(g, ax_speed)
    fig.tight_layout()
    fig.savefig(path, pil_kwargs={"compress_level": 1})


def hours_panel(g, ax):
    labels = [f"synchronous\n({g['baseline']})", f"asynchronous\n(k = {g['k']})"]
    predicted = [g["sync"]["hours"], g["asynchronous"]["hours"]]
    published = [g["published"]["sync_hours"], g["published"]["async_hours"]]
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], predicted, 0.4, label="GPU model (predicted)")
    ax.bar([i + 0.2 for i in x], published, 0.4, label="published")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel(f"hours for {g['n_steps']} steps")
    ax.set_title(f"{g['preset']}: speedup {g['speedup']:.2f}x predicted, "
                 f"{g['published']['speedup']:.2f}x published", fontsize=10)
    ax.legend(fontsize=8)


def speed_panel(g, ax):
    points = g["sync"]["tokens_per_second"]
    ax.step([t for t, _ in points], [v for _, v in points], where="post")
    ax.set_xlabel("seconds into one synchronous step's generation")
    ax.set_ylabel("tokens per second, one engine")
    ax.set_title("the tail: few responses left, each step still reads all the weights",
                 fontsize=10)
