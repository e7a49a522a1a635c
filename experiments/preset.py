"""--preset (Tasks 1 and 2): a published run's hours predicted on the GPU model.

The computation is experiments/gpu_model.py's gpu_comparison (it shares the cost model
with --gpu-sweep); here are the option, the printed section and the figure
(rl_systems_gpu_model.png): a row per preset, on the left what it is compared with
(AReaL's Fig. 7 throughput over k, Table 2's hours, verl's seconds per phase), on the
right the engine that finished last in one synchronous step.
"""

import grading
from experiments.gpu_model import gpu_comparison
from experiments.gpu_sources import PRESETS
from experiments.printing import say
from experiments.plotting import placeholder

KEY, LABEL, TASK, FLAG = "gpu_model", "GPU model", "2", "preset"  # and Task 1's bytes: a TODO
# there names its own task
SECONDS = 11.0  # per preset
PREDICTED, PUBLISHED = "tab:blue", "tab:orange"
PREDICTED, PUBLISHED = "tab:blue", "tab:orange"


def arguments(p):
    p.add_argument("--preset", choices=[*PRESETS, "all"], default=None,
                   help="predict a published run's hours on the GPU model (docs/gpu-model.md); "
                        "all: the three presets")


def names(args):
    return list(PRESETS) if args.preset == "all" else [args.preset]


def work(args):
    return len(names(args))


def run(args, results):
    """{preset: its comparison}, for each preset asked for."""
    return {name: gpu_comparison(grading.load("scheduler"), grading.load("memory"), name)
            for name in names(args)}


def show(runs):
    for i, g in enumerate(runs.values()):
        if i:
            print()
        show_preset(g)


def show_preset(g):
    print(f"GPU model, {g['preset']}: {g['system']}; {g['gpus']} x {g['gpu']}")
    print(f"  {g['prompts']} prompts x {g['group_size']}, cap {g['max_len']:,} tokens, mean "
          f"length {g['mean_len']:,.0f}, {g['slots']} responses per engine at most")
    print(f"  trainer passes per token: {g['sync_passes']} synchronous "
          f"(efficiency {g['sync_efficiency']:.3f}), {g['async_passes']} asynchronous "
          f"({g['async_efficiency']:.3f}); {g['n_steps']} batches")
    print(f"  {'fitted to':<42}{'model':>10}{'target':>11}{'ratio':>8}")
    for what, predicted, published, ratio in g["fit"]:
        print(f"  {what:<42}{predicted:>10.1f}{published:>11.1f}{ratio:>8.2f}")
    print(f"  {'held out':<42}{'predicted':>10}{'published':>11}{'ratio':>8}")
    for what, predicted, published, ratio in g["held_out"]:
        print(f"  {what:<42}{predicted:>10.2f}{published:>11.2f}{ratio:>8.2f}")
    if g["implied"]:
        i = g["implied"]
        print(f"  at the {i['tokens_per_sequence']:,.0f} tokens a sequence that the published "
              f"k = 0 rate and hours imply:")
        print(f"    a synchronous step takes {i['seconds']:.0f} s, published "
              f"{i['published_seconds']:.0f} s")
    print(f"  one synchronous step: generation {g['sync']['generation_seconds']:.0f} s of "
          f"{g['sync']['seconds']:.0f} s; the last 10% of responses take "
          f"{g['sync']['tail_share']:.0%} of it")
    say("  asynchronous at the published split: " + ", ".join(
        f"k = {r['k']}: {r['hours']:.1f} h" for r in g["by_k"]))
    a = g["asynchronous"]
    print(f"  lag at k = {a['k']}: head {a['mean_lag']:.2f} per group, {a['head_token_lag']:.2f} "
          f"per token; by token {a['token_lag']:.2f} (weights swapped mid-response)")
    print("  where each value comes from (experiments/gpu_sources.py names the sources):")
    for what, source in g["notes"]:
        say(f"    {what}: {source}")


def draw(results, path):
    """Save rl_systems_gpu_model.png: a row per preset."""
    from matplotlib.figure import Figure
    runs = results["gpu_model"]
    rows = len(runs) if runs else 1
    fig = Figure(figsize=(12, 3.8 * rows))
    axes = fig.subplots(rows, 2, squeeze=False, gridspec_kw=dict(width_ratios=(1.3, 1)))
    if not runs:
        for ax, title in zip(axes[0], ("GPU model: predicted against published",
                                       "GPU model: the slowest engine's tail")):
            placeholder(ax, results["unavailable"][LABEL])
            ax.set_title(f"{title} (Tasks 1 and 2)", fontsize=10)
    for (ax_left, ax_tail), g in zip(axes, (runs or {}).values()):
        if g["published"]["curve"]:
            curve_panel(g, ax_left)
        elif g["scaling"]:
            phase_panel(g, ax_left)
        else:
            hours_panel(g, ax_left)
        tail_panel(g, ax_tail)
    fig.tight_layout()
    fig.savefig(path, pil_kwargs={"compress_level": 1})


def curve_panel(g, ax):
    """Trained tokens per second against the staleness bound k: the model, Fig. 7."""
    labels = [k for k, _ in g["published"]["curve"]]
    published = [v / 1e3 for _, v in g["published"]["curve"]]
    predicted = [g["sync"]["throughput"] / 1e3] + [r["throughput"] / 1e3 for r in g["by_k"]]
    x = range(len(labels))
    ax.plot(x, predicted, "o-", color=PREDICTED, label="GPU model (k = 0 fitted, rest predicted)")
    ax.plot(x, published, "s--", color=PUBLISHED, label="AReaL v0.3, Fig. 7 (published)")
    ax.set_xticks(list(x), ["∞" if k == "no bound" else k for k in labels])
    ax.set_xlabel("staleness bound k")
    ax.set_ylabel("trained tokens per second (thousands)")
    ax.set_ylim(0, None)
    ax.set_title(f"{g['preset']}: throughput over k, {g['gen_gpus']} generate, "
                 f"{g['gpus'] - g['gen_gpus']} train", fontsize=10)
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
    ax.set_title(f"{g['preset']}: hours, speedup {g['speedup']:.2f}x predicted, "
                 f"{g['published']['speedup']:.2f}x published", fontsize=10)
    ax.legend(fontsize=8)
PHASES = (("gen", "generation"), ("old_log_prob", "old_log_prob"),
          ("update_actor", "update_actor"))


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
                    ax.bar(i + dx, values[key], 0.38, bottom=bottom, color=colour, hatch=hatch,
                           edgecolor="white", label=label if i == 0 and not hatch else None)
                    bottom += values[key]
            else:
                ax.bar(i + dx, values["step"], 0.38, color="tab:gray", hatch=hatch,
                       edgecolor="white", label="asynchronous step" if i == 3 and not hatch
                       else None)
    ax.set_xticks(range(len(g["scaling"])),
                  [f"{r['gpus']}\n{r['mode']}" for r in g["scaling"]], fontsize=8)
    ax.set_ylabel("seconds per step")
    ax.set_title(f"{g['preset']}: per phase, model (plain) beside README (hatched)",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def published_scaling(g):
    """The README's numbers for each row of g['scaling'], from the held-out list."""
    table = {what: published for what, _, published, _ in g["held_out"] + g["fit"]}
    rows = []
    for r in g["scaling"]:
        if r["mode"] == "colocated":
            prefix = f"colocated {r['gpus']}: "
            rows.append({key: table[f"{prefix}{key} s"] for key, _ in PHASES})
        else:
            rows.append(dict(step=table[f"{r['mode']}: step s"]))
    return rows


def tail_panel(g, ax):
    """Tokens per second of the engine that finished last over one synchronous step's
    generation, with the time by which 90% of the step's responses had finished."""
    s = g["sync"]
    points = s["tokens_per_second"]
    ax.step([t for t, _ in points], [v for _, v in points], where="post", color=PREDICTED)
    ax.axvline(s["t90"], color="black", linestyle=":",
               label=f"90% of responses done: the last 10% take {s['tail_share']:.0%}")
    ax.set_xlim(0, s["generation_seconds"])
    ax.set_ylim(0, None)
    ax.set_xlabel("seconds into one synchronous step's generation")
    ax.set_ylabel("tokens per second, one engine")
    engine = f"{g['tp']} x {g['gpu']}" if g["tp"] > 1 else f"1 {g['gpu']}"
    ax.set_title(f"{g['preset']}: the last of {s['engines']} engines ({engine} each) "
                 f"to finish", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
