"""--preset (Tasks 1 and 2): a published run on the GPU model, a bound walked down to it.

The computation is experiments/gpu_model.py's gpu_comparison (it shares the cost model
with --gpu-sweep): the perfect pipeline at the run's configuration (the bound), then each
sourced or ASSUMED cost of the real pipeline, one at a time (the walk), against the
published numbers. Here are the option, the printed section and the figure
(rl_systems_preset.png): a row per preset, the synchronous and the asynchronous run in
panels of their own (the bound, each cost of the walk up to the point prediction, the band
shaded, the published hours a marker across the panel); on the right AReaL's Fig. 7
throughput over k (bound, predicted, published), verl's seconds per phase, or the hours.
"""

import grading
from experiments.gpu_components import gpu_components
from experiments.gpu_model import gpu_comparison
from experiments.gpu_sources import PRESETS
from experiments.plotting import placeholder
from experiments.printing import say

KEY, LABEL, TASK, FLAG = "gpu_model", "GPU model", "2", "preset"  # and Task 1's bytes: a TODO
# there names its own task
SECONDS = 25.0  # per preset (with the components and the band, all three: 14-16 s, shared machine)


def arguments(p):
    p.add_argument(
        "--preset",
        choices=[*PRESETS, "all"],
        default=None,
        help="a published run on the GPU model: the bound, each cost of the walk "
        "down, the published numbers (docs/gpu-model.md); all: the three presets",
    )


def names(settings):
    preset = settings.options.preset
    return list(PRESETS) if preset == "all" else [preset]


def work(settings):
    return len(names(settings))


def run(settings, results):
    """{preset: its comparison}, for each preset asked for. The components (Fig. 2 and
    Fig. 5 against the model, the same for every preset) go to results["gpu_components"],
    beside the presets, and their table is printed here: show() sees the presets only."""
    scheduler, memory = grading.load("scheduler"), grading.load("memory")
    results["gpu_components"] = gpu_components(scheduler, memory)
    show_components(results["gpu_components"])
    return {name: gpu_comparison(scheduler, memory, name) for name in names(settings)}


def show(runs):
    for g in runs.values():
        print()
        show_preset(g)
    print()
    print(
        "Sources, once for every preset above (experiments/gpu_sources.py and "
        "docs/gpu-model.md give each in full):"
    )
    lines: dict[str, None] = {}  # each cost's and configuration's source once, in order
    for g in runs.values():
        lines |= {f"{w['name']}: {w['source']}": None for w in g["walk"][1:]}
        lines |= {f"{what}: {source}": None for what, source in g["notes"]}
    for line in lines:
        say(f"  {line}")


def show_components(rows):
    say(
        "GPU model, components: generation throughput against AReaL v0.3's Fig. 2 and Fig. 5, "
        "thousands of tokens/s (range: each unpublished setting at the other end of its range)"
    )
    print(f"  {'component':<42}{'predicted':>10}{'low':>9}{'high':>9}{'published':>10}{'ratio':>7}")
    for r in rows:
        print(
            f"  {r['name']:<42}{r['predicted'] / 1e3:>10.1f}{r['low'] / 1e3:>9.1f}"
            f"{r['high'] / 1e3:>9.1f}{r['published'] / 1e3:>10.1f}{r['ratio']:>7.2f}"
        )


def show_preset(g):
    say(
        f"GPU model, {g['preset']}: {g['system']}; {g['gpus']} x {g['gpu']}: a bound, "
        "walked down, and the band its ranged costs give"
    )
    say(
        f"  {g['prompts']} prompts x {g['group_size']}, cap {g['max_len']:,} tokens, mean "
        f"length {g['mean_len']:,.0f} (sigma {g['sigma']:.2f}), {g['slots']} responses per "
        f"engine at most; {g['n_steps']} batches; synchronous on {g['sync_gpus'][0]}:"
        f"{g['sync_gpus'][1]}"
    )
    say(f"  fit set: {g['set_number']}")
    for row in g["set"]:  # GivenBack
        print(
            f"    given back: {row.what} {row.model:,.2f} against {row.target:,.2f} "
            f"({row.ratio:.3f})"
        )
    print(f"  {'walk down (cumulative)':<44}{'sync s':>9}{'sync h':>8}{'async s':>9}{'async h':>8}")
    for w in g["walk"]:
        print(
            f"  {w['name']:<44}{w['sync_seconds']:>9.1f}{w['sync_hours']:>8.2f}"
            f"{w['seconds']:>9.1f}{w['hours']:>8.2f}"
        )
    for what, hours in g["sensitivity"].items():
        print(f"  sensitivity: {what} {hours:.2f}")
    bound = {row.what: row.bound for row in g["held_out"]}
    print(
        f"  {'published number':<36}{'bound':>8}{'low':>9}{'point':>9}{'high':>9}"
        f"{'published':>10}{'ratio':>7}  band"
    )
    for c in g["checks"]:
        b = bound.get(c["name"])
        width = c["high"] / c["low"]
        inside = "inside" if c["low"] <= c["published"] <= c["high"] else "outside"
        kind = f"{inside}, {width:.2f}x" if width <= 2 else f"unconstrained ({width:.1f}x)"
        print(
            f"  {c['name']:<36}{'' if b is None else f'{b:.2f}':>8}{c['low']:>9.2f}"
            f"{c['point']:>9.2f}{c['high']:>9.2f}{c['published']:>10.2f}"
            f"{c['point'] / c['published']:>7.2f}  {kind}"
            f"{'' if c['held_out'] else ', not held out'}"
        )
    say(
        f"  the residual (published - point) is what the walk leaves unpriced; likeliest: "
        f"{g['residual_causes']}"
    )
    print(
        f"  one synchronous step: generation {g['sync']['generation_seconds']:.0f} s of "
        f"{g['sync']['seconds']:.0f} s; the last 10% of responses take "
        f"{g['sync']['tail_share']:.0%} of it"
    )
    a = g["asynchronous"]
    print(
        f"  lag at k = {a['k']}: head {a['mean_lag']:.2f} per group, {a['head_token_lag']:.2f} "
        f"per token; by token {a['token_lag']:.2f} (weights swapped mid-response)"
    )


PREDICTED, PUBLISHED = "tab:blue", "tab:orange"


def draw(results, path):
    """Save rl_systems_preset.png (figure)."""
    figure(results).savefig(path, pil_kwargs={"compress_level": 1})


def figure(results):
    """A row per preset, the synchronous and the asynchronous walk in panels of their own,
    then the preset's published curve, phases or hours."""
    from matplotlib.figure import Figure

    runs = results["gpu_model"]
    rows = len(runs) if runs else 1
    fig = Figure(figsize=(17, 4.6 * rows))
    axes = fig.subplots(rows, 3, squeeze=False, gridspec_kw={"width_ratios": (1, 1, 1)})
    if not runs:
        for ax, title in zip(
            axes[0],
            (
                "GPU model: the synchronous run, walked down",
                "GPU model: the asynchronous run, walked down",
                "GPU model: predicted against published",
            ),
        ):
            placeholder(ax, results["unavailable"][LABEL])
            ax.set_title(f"{title} (Tasks 1 and 2)", fontsize=10)
    for (ax_sync, ax_async, ax_right), g in zip(axes, (runs or {}).values()):
        for ax, mode in ((ax_sync, WALKS[0]), (ax_async, WALKS[1])):
            waterfall_panel(g, ax, mode)
        if g["published"]["curve"]:
            curve_panel(g, ax_right)
        elif g["scaling"]:
            phase_panel(g, ax_right)
        else:
            hours_panel(g, ax_right)
    fig.tight_layout()
    return fig


# (the walk's hours key, the published hours key, the check's name, the mode, its colour)
WALKS = (
    ("sync_hours", "sync_hours", "synchronous hours", "sync", "tab:cyan"),
    ("hours", "async_hours", "asynchronous hours", "async", PREDICTED),
)


def waterfall_panel(g, ax, mode):
    """One run's hours from the bound through each cost that applies to it (a bar for what
    it adds) to the point prediction, its band (shaded) and the published hours (a marker
    across the panel)."""
    key, published_key, check, applies, colour = mode
    walk = [w for w in g["walk"] if w["applies"] in ("both", applies)]
    values = [w[key] for w in walk]
    labels = ["bound"] + [w["name"] for w in walk[1:]]
    ax.barh(0, values[0], 0.6, color=colour)
    for i in range(1, len(values)):
        ax.barh(i, values[i] - values[i - 1], 0.6, left=values[i - 1], color=colour)
    band = next(c for c in g["checks"] if c["name"] == check)
    ax.axvspan(
        band["low"],
        band["high"],
        color="0.85",
        zorder=0,
        label=f"band {band['low']:.1f}-{band['high']:.1f} h",
    )
    published = g["published"][published_key]
    ax.axvline(published, color=PUBLISHED, lw=3, label=f"published {published:.1f} h")
    ax.plot([published], [len(values) - 1], "D", color=PUBLISHED, markersize=9)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.08 * max(published, band["high"], values[-1]))
    ax.set_xlabel(f"hours for {g['n_steps']} batches")
    ax.set_title(f"{g['preset']}, {check.split()[0]}: bound walked down", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")  # the last row holds the published marker


def curve_panel(g, ax):
    """Trained tokens per second against the staleness bound k: bound, walked down, Fig. 7."""
    labels = [k for k, _ in g["published"]["curve"]]
    published = [v / 1e3 for _, v in g["published"]["curve"]]
    predicted = [g["sync"]["throughput"] / 1e3] + [r["throughput"] / 1e3 for r in g["by_k"]]
    bound = [g["bound"]["sync_throughput"] / 1e3] + [
        r["throughput"] / 1e3 for r in g["bound"]["by_k"]
    ]
    x = range(len(labels))
    ax.plot(x, bound, "^:", color="0.5", label="bound (perfect pipeline)")
    ax.plot(x, predicted, "o-", color=PREDICTED, label="walked down (predicted)")
    ax.plot(x, published, "s--", color=PUBLISHED, label="AReaL v0.3, Fig. 7 (published)")
    ax.set_xticks(list(x), ["∞" if k == "no bound" else k for k in labels])
    ax.set_xlabel("staleness bound k")
    ax.set_ylabel("trained tokens per second (thousands)")
    ax.set_ylim(0, None)
    ax.set_title(
        f"{g['preset']}: throughput over k, {g['gen_gpus']} generate, "
        f"{g['gpus'] - g['gen_gpus']} train",
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="lower right")


def hours_panel(g, ax):
    """Hours of the run, synchronous and asynchronous: the model beside the paper."""
    labels = [f"synchronous\n({g['baseline']}, k = 0)", f"asynchronous\n(k = {g['k']})"]
    predicted = [g["sync"]["hours"], g["asynchronous"]["hours"]]
    published = [g["published"]["sync_hours"], g["published"]["async_hours"]]
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], predicted, 0.4, color=PREDICTED, label="GPU model (predicted)")
    ax.bar([i + 0.2 for i in x], published, 0.4, color=PUBLISHED, label="published")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel(f"hours for {g['n_steps']} batches")
    ax.set_title(
        f"{g['preset']}: hours\nspeedup {g['speedup']:.2f}x predicted, "
        f"{g['published']['speedup']:.2f}x published",
        fontsize=10,
    )
    ax.legend(fontsize=8)


PHASES = (("gen", "generation"), ("old_log_prob", "old_log_prob"), ("update_actor", "update_actor"))


def phase_panel(g, ax):
    """verl's seconds per step: colocated runs split into phases, asynchronous runs whole;
    for each run the model (left bar) beside the README (right bar, hatched)."""
    published = published_scaling(g)
    colours = ("tab:green", "tab:purple", "tab:red")
    for i, row in enumerate(g["scaling"]):
        for dx, values, hatch in ((-0.2, row, ""), (0.2, published[i], "//")):
            if row["mode"] == "colocated":
                bottom = 0.0
                for (key, label), colour in zip(PHASES, colours):
                    ax.bar(
                        i + dx,
                        values[key],
                        0.38,
                        bottom=bottom,
                        color=colour,
                        hatch=hatch,
                        edgecolor="white",
                        label=label if i == 0 and not hatch else None,
                    )
                    bottom += values[key]
            else:
                ax.bar(
                    i + dx,
                    values["step"],
                    0.38,
                    color="tab:gray",
                    hatch=hatch,
                    edgecolor="white",
                    label="asynchronous step" if i == 3 and not hatch else None,
                )
    ax.set_xticks(
        range(len(g["scaling"])),
        [
            f"{r['gpus']}\n{'coloc.' if r['mode'] == 'colocated' else r['mode']}"
            for r in g["scaling"]
        ],
        fontsize=8,
    )
    ax.set_xlabel("GPUs, and colocated (coloc.) or generating:training")
    ax.set_ylabel("seconds per step")
    ax.set_title(f"{g['preset']}: per phase\nmodel (plain) beside README (hatched)", fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def published_scaling(g):
    """The README's numbers for each row of g['scaling'], read from the preset's published
    tables: colocated rows by their GPUs, g:g rows by their g generating GPUs (half)."""
    colocated, asynchronous = PRESETS[g["preset"]].scaling
    return [
        colocated[r["gpus"]] if r["mode"] == "colocated" else asynchronous[r["gpus"] // 2]
        for r in g["scaling"]
    ]
