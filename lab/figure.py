"""The figure (given): rl_systems.png drawn from the numbers run.py computed.

Top row: the memory bill and the scheduling experiment. Bottom row: the
mismatch experiment. A part whose task is not implemented yet is drawn as a
labelled placeholder panel. Each panel reads on its own: its lines are named at
their right ends (no legend to look up elsewhere), and its settings are under its
x-axis.
"""
import math

import matplotlib
# Figure, not pyplot: a figure saved to a file needs no window, and no pyplot (0.1 s to import)
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator

from lab import PARTS
from lab.experiments import LONG
from lab.model_shapes import GPU_GB

COLORS = {"none": "black", "token": "tab:blue", "token_tis": "tab:green", "seq": "tab:red",
          "seq_tis": "tab:orange", "token_mask": "tab:cyan", "seq_mask": "tab:pink",
          "geo_mask": "tab:olive"}
# A marker per scheme too, so lines of close colours (or printed in grey) stay apart.
MARKERS = {"none": "o", "token": "s", "token_tis": "^", "seq": "D", "seq_tis": "v",
           "token_mask": "P", "seq_mask": "X", "geo_mask": "*"}
# Panel titles, left to right, per part (also on a part's placeholder panels).
TITLES = {"memory": ["Model state of a 7B model"],
          "scheduling": ["Throughput, and lanes busy", "Price: policy lag",
                         "Lag distribution at k = 1"],
          "mismatch": ["Bias vs mismatch", "Noise vs mismatch", "Total error vs mismatch",
                       "Bigger batches cut noise, not bias"]}
# The estimators the README's story is about, drawn bold in the bottom row; the others faint.
STORY = ("none", "token_tis", "seq_tis")
# The code's names (the README gives their long forms once); the masks add their task.
LABELS = {"none": "none", "token": "token", "token_tis": "token_tis", "seq": "seq",
          "seq_tis": "seq_tis", "token_mask": "token_mask (3c)", "seq_mask": "seq_mask (3c)",
          "geo_mask": "geo_mask (3c)"}


def draw(results, path):
    """Save the 2 x 4 figure for `results` (the dict run.py writes as JSON) to `path`."""
    matplotlib.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.grid": True,
                         "grid.alpha": 0.3,
                         "axes.titley": 1.0})  # fixed: finding room above ticks is slow
    height = 9
    fig = Figure(figsize=(18, height))
    axes = fig.subplots(2, 4)
    # Fixed margins (in inches, whatever the height) instead of tight_layout, which lays
    # out every label a second time. Set first: the line labels measure their panels.
    fig.subplots_adjust(left=0.045, right=0.99, bottom=0.75 / height, top=1 - 0.75 / height,
                        wspace=0.3, hspace=0.42)
    top, bottom = axes[:2]
    parts = [("memory", [top[0]], memory_panel),
             ("scheduling", top[1:], scheduling_panels),
             ("mismatch", bottom, mismatch_panels)]
    for key, panels, draw_part in parts:
        part, task = PARTS[key]
        if results[key] is None:
            for ax in panels:
                placeholder(ax, results["unavailable"][part])
        elif key == "mismatch":
            draw_part(results[key], *panels, masking=results.get("masking"))
        else:
            draw_part(results[key], *panels)
        for ax, title in zip(panels, TITLES[key]):
            ax.set_title(f"{title} (Task {task})")
    for ax in fig.axes:
        ax.minorticks_off()  # a log axis has dozens of unlabelled ticks: slow to draw, no help
    fig.suptitle(f"RL systems on a laptop. Code under test: {results['code']}", fontsize=13)
    # 90 dpi: the saved figure costs half as much and reads the same on a screen.
    fig.savefig(path, dpi=90, pil_kwargs={"compress_level": 1})  # fast; the file is bigger


def placeholder(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=13, color="gray",
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


# ---------------------------------------------------------------- helpers for every panel

def label_ends(ax, lines, fontsize=8.5):
    """Name each line at its right end, in its colour, inside the frame.

    The x-axis is widened so the names fit right of the data; names that would overlap
    are moved apart vertically, each joined to its line's end by a thin stroke.
    (Call it once the panel's data, scales and x-ticks are set.)"""
    fig = ax.get_figure()
    box = ax.get_position()
    width_pt, height_pt = 72 * box.width * fig.get_figwidth(), 72 * box.height * fig.get_figheight()
    name_pt = 0.58 * fontsize * max(len(line.get_label()) for line in lines) + 22
    widen_x(ax, min(0.45, name_pt / width_pt))
    ax.set_ylim(ax.get_ylim())  # freeze the y-range: the names are placed against it
    to_axes = ax.transData + ax.transAxes.inverted()
    ends = [(line, to_axes.transform((line.get_xdata()[-1], line.get_ydata()[-1])))
            for line in lines]
    ends = [(line, end) for line, end in ends if all(map(math.isfinite, end))]
    if not ends:  # nothing finite to name (a log axis of zeros, say)
        return
    gap = 1.2 * fontsize / height_pt  # one line of text, as a share of the panel's height
    heights = spread([end[1] for _, end in ends], gap, low=gap / 2, high=1 - gap / 2)
    x_text = max(end[0] for _, end in ends) + 16 / width_pt
    for (line, end), y in zip(ends, heights):
        ax.text(x_text + 2 / width_pt, y, line.get_label(), transform=ax.transAxes,
                va="center", fontsize=fontsize, color=line.get_color(), alpha=line.get_alpha(),
                fontweight="bold" if line.get_linewidth() > 2 else "normal")
    # the strokes, in one collection: far cheaper to draw than an arrow per name
    ax.add_collection(LineCollection(
        [[end, (x_text, y)] for (_, end), y in zip(ends, heights)], transform=ax.transAxes,
        colors=[line.get_color() for line, _ in ends], linewidths=0.6,
        alpha=min(line.get_alpha() or 1 for line, _ in ends)), autolim=False)


def widen_x(ax, share):
    """Widen the x-axis on the right so the data fill the left (1 - share) of the frame.
    (Set the ticks first: ticks chosen after this would run on under the names.)"""
    x0, x1 = ax.get_xlim()
    if ax.get_xscale() == "log":
        ax.set_xlim(x0, x0 * (x1 / x0) ** (1 / (1 - share)))
    else:
        ax.set_xlim(x0, x0 + (x1 - x0) / (1 - share))


def spread(ys, gap, low, high):
    """Positions near ys (any order), at least `gap` apart, kept within [low, high] where
    there is room. Example: spread([0.5, 0.52], 0.1, 0, 1) = [0.5, 0.6]."""
    order = sorted(range(len(ys)), key=ys.__getitem__)
    placed = []
    for i in order:  # upwards: each at least a gap above the one below
        placed.append(max(min(max(ys[i], low), high), placed[-1] + gap if placed else low))
    for j in range(len(placed) - 1, -1, -1):  # downwards: back under the top
        placed[j] = min(placed[j], high if j == len(placed) - 1 else placed[j + 1] - gap)
    out = [0.0] * len(ys)
    for i, y in zip(order, placed):
        out[i] = y
    return out


def log_ticks(axis, percent=False):
    """Label a log axis in plain numbers: 1, 2 and 5 times each power of ten over a short
    range (by default only the powers of ten are labelled, often just two of them)."""
    low, high = axis.get_view_interval()
    short = math.log10(high / low) <= 2.5
    axis.set_major_locator(LogLocator(subs=(1, 2, 5) if short else (1,)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}" + "%" * percent))


# ---------------------------------------------------------------- the panels

def memory_panel(memory, ax):
    bars = {"PPO": memory["ppo_7b_gb"], "GRPO": memory["grpo_7b_gb"],
            "GRPO + LoRA": memory["grpo_lora_7b_gb"]}
    ax.bar(list(bars), list(bars.values()), color=["tab:red", "tab:blue", "tab:green"])
    for x, gb in enumerate(bars.values()):
        ax.text(x, gb, f"{gb:.3g} GB", ha="center", va="bottom")  # 252, 126, 14.6 as printed
    ax.set_ylim(0, 1.18 * max(*bars.values(), GPU_GB))  # room above the tallest label
    ax.axhline(GPU_GB, color="gray", linestyle="--")
    ax.text(len(bars) - 0.55, GPU_GB, f"one {GPU_GB} GB GPU", ha="right", va="bottom",
            fontsize=9, color="dimgray")
    ax.set_ylabel("GB (10^9 bytes), before activations and KV cache")


def scheduling_panels(s, ax_gain, ax_lag, ax_tail):
    setup = f"{s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, train_time = {s['train_time']}"
    # Throughput and lanes busy rise together (the lanes are the work), so one panel
    # shows both: the line is the throughput, the numbers on it the lanes busy.
    ax_gain.plot(s["k"], s["throughput_gain"], "o-", color="tab:purple")
    shown = None
    for k, gain, busy in zip(s["k"], s["throughput_gain"], s["utilization"]):
        if f"{busy:.0%}" != shown:  # a repeat would crowd the line and say nothing new
            shown = f"{busy:.0%}"
            ax_gain.annotate(shown, (k, gain), xytext=(0, 7), textcoords="offset points",
                             ha="center", fontsize=8.5, color="tab:purple")
    ax_gain.set_ylim(0, 1.2 * max(s["throughput_gain"]))
    ax_gain.set_xlim(s["k"][0] - 0.6, s["k"][-1] + 0.6)  # room for the first and last %
    ax_gain.text(0.97, 0.05, "%: share of time the lanes are\ngenerating (repeats left out)",
                 transform=ax_gain.transAxes, ha="right", va="bottom", fontsize=8.5)
    # The mean hides the tail: k bounds how far generation runs ahead, not how old
    # a trained response can be.
    lines = [ax_lag.plot(s["k"], s["max_lag"], "^-", color="tab:red", label="max")[0],
             ax_lag.plot(s["k"], s["lag_p95"], "s-", color="tab:orange", label="95th pct")[0],
             ax_lag.plot(s["k"], s["mean_lag"], "o-", color="tab:purple", label="mean")[0],
             ax_lag.plot(s["k"], s["k"], ":", color="gray", label="lag = k")[0]]
    ax_lag.set_ylim(-0.5, 1.08 * max(s["max_lag"] + s["k"]) + 0.5)
    for ax, ylabel in ((ax_gain, "x throughput of k = 0"),
                       (ax_lag, "lag of trained responses (versions)")):
        ax.set_xlabel(f"staleness bound k (versions ahead)\n{setup}")
        ax.set_ylabel(ylabel)
        ax.set_xticks(s["k"])
    label_ends(ax_lag, lines)
    lag_tail_panel(s, ax_tail, setup)


def lag_tail_panel(s, ax, setup, k=1):
    """The share of trained responses at each lag, at staleness bound k: most are fresh,
    and a few are many versions old."""
    counts = s["lag_counts"][s["k"].index(k)]
    n = sum(counts)
    share = [100 * c / n for c in counts]
    ax.bar(range(len(counts)), share, color="tab:purple")
    ax.set_yscale("log")
    ax.set_ylim(0.5 * min(x for x in share if x > 0), 100)
    log_ticks(ax.yaxis, percent=True)
    ax.set_xlim(-0.6, max(len(counts), k + 6) - 0.4)  # room right of the bound for the note
    ax.axvline(k + 0.5, color="gray", linestyle=":")
    older = sum(counts[k + 1:]) / n
    ax.text(0.97, 0.97, f"right of the dotted line:\n{older:.1%} have lag > k = {k};\n"
            f"the oldest has lag {len(counts) - 1}", transform=ax.transAxes, ha="right",
            va="top", fontsize=8.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"lag (versions) of a trained response\n{setup}")
    ax.set_ylabel("share of trained responses")


def mismatch_panels(m, ax_bias, ax_std, ax_rmse, ax_batch, masking=None):
    """The four bottom panels. The three estimators the story is about (STORY) bold; token
    and sequence IS thin and faint, and the masked schemes of Task 3c, once it is done,
    faint and dashed."""
    setup = f"batch of {m['batch_size']}, C = {m['C']}, {m['noise']} noise"
    schemes = m["schemes"] | (masking["schemes"] if masking else {})
    lines = {ax_bias: [], ax_std: [], ax_rmse: []}
    for scheme, stats in schemes.items():
        story = scheme in STORY
        style = dict(color=COLORS[scheme], label=LABELS[scheme].split(" (")[0],
                     marker=MARKERS[scheme], markersize=5 if story else 3,
                     linewidth=2.4 if story else 1.0, alpha=None if story else 0.45,
                     zorder=3 if story else 2,
                     linestyle="--" if scheme.endswith("_mask") else "-")
        for ax, values in ((ax_bias, stats["bias"]),
                           (ax_std, [v**0.5 for v in stats["variance"]]),
                           (ax_rmse, stats["rmse"])):
            lines[ax] += ax.plot(m["mismatch"], values, **style)
    if masking:
        mask_step_note(ax_bias, m["mismatch"], masking)
    for ax, ylabel in ((ax_bias, "|| E[estimate] - true gradient ||"),
                       (ax_std, "standard deviation of the estimate"),
                       (ax_rmse, "RMSE = sqrt(bias^2 + variance)")):
        ax.set_xlabel(f"mismatch (scale of the logit perturbation)\n{setup}")
        ax.set_ylabel(ylabel)
        ax.set_xticks(m["mismatch"][::2])
        if ax is not ax_bias:
            ax.set_yscale("log")
        label_ends(ax, lines[ax])
        if ax is not ax_bias:
            log_ticks(ax.yaxis)

    by = m["by_batch_size"]
    lines = []
    for scheme in ("none", "seq_tis"):
        name = LABELS[scheme].split(" (")[0]
        lines += ax_batch.plot(by["batch_size"], by[scheme]["bias"], "o-", color=COLORS[scheme],
                               label=f"{name}: bias", linewidth=2.4)
        lines += ax_batch.plot(by["batch_size"], [v**0.5 for v in by[scheme]["variance"]], "s--",
                               color=COLORS[scheme], label=f"{name}: std", linewidth=2.4)
    ax_batch.set_xscale("log", base=2)
    ax_batch.set_yscale("log")
    ax_batch.set_xticks(by["batch_size"], [str(n) for n in by["batch_size"]])
    ax_batch.set_xlabel(f"batch size (responses)\nmismatch {by['mismatch']}, "
                        f"C = {m['C']}, {m['noise']} noise")
    ax_batch.set_ylabel("bias or standard deviation")
    label_ends(ax_batch, lines)
    log_ticks(ax_batch.yaxis)


def mask_step_note(ax, mismatch, masking):
    """Say on the bias panel why the token mask's bias jumps (at mismatch 0.9 -> 1.0 in the
    reference): the toy has 20 (previous token, token) pairs, and all tokens of a pair
    leave the band together, so its bias is a staircase, not a defect of the sweep."""
    bias = masking["schemes"]["token_mask"]["bias"]
    steps = [b - a for a, b in zip(bias, bias[1:])]
    i = max(range(len(steps)), key=steps.__getitem__)
    if steps[i] < 0.05:  # no big step: nothing to explain
        return
    low, high = ax.get_ylim()
    ax.set_ylim(low, low + 1.4 * (high - low))  # room for the note above the curves
    ax.annotate("token_mask: a step, not noise. The toy has\n20 (previous token, token) "
                "pairs; every token\nof one pair leaves the band at once (here\n0 after 0, "
                "in half the rewarded responses)", (mismatch[i + 1], bias[i + 1]),
                xytext=(0.03, 0.97), textcoords="axes fraction", ha="left", va="top",
                fontsize=7.5, color=COLORS["token_mask"],
                arrowprops=dict(arrowstyle="->", color=COLORS["token_mask"], lw=0.8))


# ---------------------------------------------------------------- the optional figures

def draw_equal_hardware(results, path):
    """Save the --equal-hardware figure: throughput of each async split vs the sync run."""
    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    e = results["equal_hardware"]
    if e is None:
        placeholder(ax, results["unavailable"]["Equal hardware"])
        gpus = "the same GPUs"
    else:
        equal_hardware_panel(e, ax)
        gpus = f"the same {e['gpus']} GPUs"
    ax.set_title(f"Synchronous vs asynchronous on {gpus} (Task {PARTS['equal_hardware'][1]})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def equal_hardware_panel(e, ax):
    G = e["gpus"]
    g = [s["gen_gpus"] for s in e["splits"]]
    x = [s["throughput"] for s in e["splits"]]
    ax.plot(g, x, "o-", color="tab:purple",
            label=f"asynchronous, k = {e['k']}: g GPUs generate, {G} - g train")
    excluded = [s for s in e["splits"] if not s["feasible"]]
    if excluded:
        ax.plot([s["gen_gpus"] for s in excluded], [s["throughput"] for s in excluded], "x",
                color="black", markersize=10, label="excluded: trainers cannot hold the model")
    ax.axhline(e["sync_throughput"], color="gray", linestyle="--",
               label=f"synchronous, colocated: {e['sync_throughput']:.2f}")
    if e["best_gen_gpus"] is not None:
        ax.plot([e["best_gen_gpus"]], [e["best_throughput"]], "*", color="tab:red", markersize=16,
                label=f"best: g = {e['best_gen_gpus']}, {e['speedup']:.2f}x synchronous")
    ax.set_xlabel("g, GPUs that generate")
    ax.set_ylabel("throughput (trained responses per time unit)")
    ax.set_xticks(g if G <= 16 else g[::2])
    ax.set_ylim(0, 1.6 * max(x + [e["sync_throughput"]]))  # the legend goes above the data
    ax.legend(title=f"{e['lanes_per_gpu']} lane(s) per GPU, update = {e['train_work']:g} "
                    f"GPU-time, B = {e['B']}", fontsize=8, title_fontsize=8, loc="upper left")


# The length sweep's panels: the ESS and cosine of the sequence-level schemes, the cosine of
# the token-level ones (at most four schemes a panel), one row per KL level
LENGTH_PANELS = (("ess", ("seq", "seq_tis", "seq_mask", "geo_mask"),
                  "Sequence-level weights: ESS of a batch"),
                 ("cosine", ("seq", "seq_tis", "seq_mask", "geo_mask"),
                  "Sequence-level: cosine of the mean estimate"),
                 ("cosine", ("none", "token", "token_tis", "token_mask"),
                  "Token-level: cosine of the mean estimate"))


def draw_length_sweep(results, path):
    """Save the --length-sweep figure: one row per KL level (a level of KL 0 has no place on a
    T x KL axis: it is printed only), the panels of LENGTH_PANELS against T x KL."""
    s = results["length_sweep"]
    levels = [level for level in s["levels"] if level["kl"] > 0] if s else []
    why = (results["unavailable"]["Length sweep"] if s is None
           else "KL 0: no T x KL axis (printed only)")
    fig = Figure(figsize=(17, 4.6 * max(1, len(levels))))
    axes = fig.subplots(max(1, len(levels)), len(LENGTH_PANELS), squeeze=False)
    fig.subplots_adjust(left=0.05, right=0.99, top=1 - 0.55 / fig.get_figheight(),
                        bottom=0.6 / fig.get_figheight(), wspace=0.25, hspace=0.45)
    task = PARTS["length_sweep"][1]
    for row, level in zip(axes, levels or [None]):
        for ax, (key, schemes, title) in zip(row, LENGTH_PANELS):
            if level is None:
                placeholder(ax, why)
                ax.set_title(f"{title} (Task {task})")
            else:
                ax.set_title(f"{title}, KL {level['kl']:g}", fontsize=10)
                length_panel(s, level, key, [n for n in schemes if n in level["schemes"]], ax)
    fig.savefig(path, dpi=90)


def length_panel(s, level, key, schemes, ax):
    """One metric of one KL level against T x KL, a line per scheme (with its standard error
    as a band, where sampled); on the ESS panel also the lognormal prediction and the exact
    large-batch ESS of sequence IS, and the collapse levels."""
    x, lines = level["T_kl"], []
    for scheme in schemes:
        stats = level["schemes"][scheme]
        y = stats[key]
        lines += ax.plot(x, y, color=COLORS[scheme], marker=MARKERS[scheme], markersize=5,
                         label=LABELS[scheme])
        if key == "ess":
            low = [max(v - 2 * e, 1e-3) for v, e in zip(y, stats["ess_stderr"])]
            ax.fill_between(x, low, [v + 2 * e for v, e in zip(y, stats["ess_stderr"])],
                            color=COLORS[scheme], alpha=0.15, linewidth=0)
    ax.set_xscale("log")
    if key == "ess":
        N, bottom = s["batch_size"], 0.3
        for name, style, label in (("ess_lognormal", "--", "lognormal N e^(-2 T KL)"),
                                   ("ess_limit", ":", "seq IS, exact, large N")):
            # drawn down to the first point under the frame, so its name sits by its end
            shown = next((i + 1 for i, v in enumerate(level[name]) if v < bottom), len(x))
            lines += ax.plot(x[:shown], level[name][:shown], color="gray" if style == "--"
                             else "black", linestyle=style, label=label)
        for share in (s["ess_share"] * N, s["ess_floor"]):
            ax.axhline(share, color="gray", linewidth=0.8, alpha=0.6)
        ax.set_yscale("log")
        ax.set_ylim(bottom, 1.5 * N)
        ax.set_ylabel(f"ESS, of a batch of {N} (bands: 2 standard errors)")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    else:
        ax.axhline(s["collapse_cosine"], color="gray", linewidth=0.8, alpha=0.6)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("cos(mean estimate, true gradient)")
    log_ticks(ax.xaxis)
    ax.set_xlabel(f"T x KL (T = {level['T'][0]:,} to {level['T'][-1]:,})")
    label_ends(ax, lines, fontsize=8)


def extra_figure(results, key, titles, figsize):
    """A figure of its own for the flag `key`: (fig, its panels, the result or None). Each
    panel gets its title; a part that did not run leaves placeholders."""
    fig = Figure(figsize=figsize)
    axes = list(fig.subplots(1, len(titles))) if len(titles) > 1 else [fig.subplots()]
    part, task = PARTS[key]
    for ax, title in zip(axes, titles):
        if results.get(key) is None:
            placeholder(ax, results["unavailable"].get(part, "not run"))
        ax.set_title(f"{title} (Task {task})")
    return fig, axes, results.get(key)


def draw_drop_stale(results, path):
    """Save the --drop-stale figure: what dropping costs, which responses go, what it buys."""
    fig, (ax_time, ax_length, ax_lag), d = extra_figure(
        results, "drop_stale", ["Generation time: trained or wasted",
                                "Dropped responses are the long ones", "What it buys: max lag"],
        (15, 4.6))
    if d is not None:
        ax_time.bar(["trained", "dropped (wasted)"], [100 * (1 - d["wasted_frac"]),
                                                      100 * d["wasted_frac"]],
                    color=["tab:purple", "lightgray"], edgecolor="dimgray")
        ax_time.set_ylabel("% of all generation time")
        ax_time.set_ylim(0, 100)
        ax_time.text(0.5, 0.97, f"{d['n_dropped']:,} of {d['n_started']:,} responses dropped",
                     transform=ax_time.transAxes, ha="center", va="top", fontsize=9)
        lengths = [d["mean_length_trained"], d["mean_length_dropped"]]
        ax_length.bar(["trained", "dropped"], lengths, color=["tab:purple", "lightgray"],
                      edgecolor="dimgray")
        for x, (value, long) in enumerate(zip(lengths, [d["long_share_trained"],
                                                        d["long_share_dropped"]])):
            ax_length.text(x, value, f"mean {value:.2f}\n{100 * long:.2g}% over {LONG}x the mean",
                           ha="center", va="bottom", fontsize=9)
        ax_length.axhline(1, color="gray", linestyle=":")
        ax_length.text(1.45, 1, "mean of all lengths", ha="right", va="bottom", fontsize=8,
                       color="dimgray")
        ax_length.set_ylim(0, 1.3 * max(lengths + [1]))
        ax_length.set_ylabel("mean response length (the mean of all is 1)")
        lags = [d["max_lag_keeping_stale"], d["max_lag"]]
        ax_lag.bar(["keeping them", "dropping them"], lags, color=["tab:red", "tab:purple"])
        for x, (lag, throughput) in enumerate(zip(lags, [d["throughput_keeping_stale"],
                                                         d["throughput"]])):
            ax_lag.text(x, lag, f"max lag {lag}\nthroughput {throughput:.2f}", ha="center",
                        va="bottom", fontsize=9)
        ax_lag.axhline(d["k"], color="gray", linestyle=":")
        ax_lag.set_ylim(0, 1.3 * max(lags))
        ax_lag.set_ylabel(f"max lag of a trained response (dotted: k = {d['k']})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def draw_c_sweep(results, path):
    """Save the --c-sweep figure: token TIS's bias and RMSE against the truncation level C."""
    fig, (ax,), c = extra_figure(results, "c_sweep", ["token_tis: the truncation level C"],
                                 (7, 4.6))
    if c is not None:
        ax.plot(c["C"], c["rmse"], "o-", color=COLORS["token_tis"], label="RMSE")
        ax.plot(c["C"], c["bias"], "s--", color=COLORS["token_tis"], label="bias")
        best = c["C"].index(c["best_C"])
        ax.plot([c["best_C"]], [c["rmse"][best]], "*", color="tab:red", markersize=15,
                label=f"lowest RMSE: C = {c['best_C']:g} ({c['rmse'][best]:.3f})")
        ax.set_xscale("log")
        ax.set_xticks(c["C"], [f"{C:g}" for C in c["C"]])
        ax.minorticks_off()
        ax.set_ylim(0, 1.15 * max(c["rmse"]))
        ax.set_xlabel(f"C (weights above it are cut to C)\nmismatch {c['mismatch']}, "
                      f"batch of {c['batch_size']}, {c['noise']} noise")
        ax.set_ylabel("bias or RMSE of the gradient estimate")
        ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def draw_gpu_sweep(results, path):
    """Save the --gpu-sweep figure: its two tables as bars, one row per variant."""
    fig, (ax_speed, ax_lanes), w = extra_figure(
        results, "gpu_sweep", ["GPU model: seconds per step, and the speedup",
                               "Part 2's lanes on the GPU model: gain over k = 0"], (15, 5))
    if w is not None:
        rows = w["rows"]
        y = range(len(rows))
        ax_speed.barh([i + 0.2 for i in y], [r["sync_seconds"] for r in rows], 0.4,
                      color="gray", label="synchronous (k = 0)")
        ax_speed.barh([i - 0.2 for i in y], [r["async_seconds"] for r in rows], 0.4,
                      color="tab:purple", label=f"asynchronous (k = {w['k']})")
        for i, r in enumerate(rows):
            ax_speed.text(r["sync_seconds"], i + 0.2, f" {r['speedup']:.2f}x, max lag "
                          f"{r['max_lag']}", va="center", fontsize=8.5)
        ax_speed.set_yticks(list(y), [r["variant"] for r in rows])
        ax_speed.invert_yaxis()
        ax_speed.set_xlim(0, 1.45 * max(r["sync_seconds"] for r in rows))
        ax_speed.set_xlabel(f"seconds per step (text: speedup, max lag)\n{w['preset']}, "
                            f"{w['gen_gpus']} of {w['gpus']} GPUs generate")
        ax_speed.legend(fontsize=8.5, loc="lower right")
        lanes = w["lanes"]
        for j, k in enumerate(lanes["rows"][0]["k"][1:], start=1):
            ax_lanes.barh([i + 0.4 * (j - 1.5) for i in range(len(lanes["rows"]))],
                          [r["gain"][j] for r in lanes["rows"]], 0.4,
                          color=["tab:blue", "tab:orange"][(j - 1) % 2], label=f"k = {k}")
        for i, r in enumerate(lanes["rows"]):
            ax_lanes.text(max(r["gain"]), i, "  max lag " + ", ".join(map(str, r["max_lag"][1:])),
                          va="center", fontsize=8.5)
        ax_lanes.set_yticks(range(len(lanes["rows"])), [r["variant"] for r in lanes["rows"]])
        ax_lanes.invert_yaxis()
        ax_lanes.set_xlim(0, 1.4 * max(max(r["gain"]) for r in lanes["rows"]))
        ax_lanes.set_xlabel(f"x throughput of k = 0 (text: max lag at k = 1, 2)\n"
                            f"{lanes['n_lanes']} lanes, B = {lanes['B']}, sigma = {lanes['sigma']}")
        ax_lanes.legend(fontsize=8.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def draw_timeline(results, path):
    """Save the --timeline figure: one row per lane, one bar per response, the trainer below."""
    t = results["timeline"]
    runs = t["runs"] if t else [None, None]
    fig = Figure(figsize=(15, 5.2 * len(runs)))
    axes = fig.subplots(len(runs), 1, sharex=True)
    fig.subplots_adjust(left=0.06, right=0.85, top=0.95, bottom=0.07, hspace=0.17)
    task = PARTS["timeline"][1]
    # one colour per version drawn, the same in both panels: blue the oldest, red the newest
    n_versions = 1 + max(len(run["updates"]) for run in runs) if t else 0
    colors = matplotlib.colormaps["turbo"]([0.05 + 0.9 * v / max(1, n_versions - 1)
                                     for v in range(n_versions)])
    for k, (ax, run) in enumerate(zip(axes, runs)):  # the runs are k = 0 and k = 1
        if run is None:
            placeholder(ax, results["unavailable"]["Timeline"])
            ax.set_title(f"Timeline of the generation lanes at k = {k} (Task {task})")
        else:
            timeline_panel(t, run, ax, colors)
            caption = TIMELINE_CAPTIONS.get(run["k"], f"k = {run['k']}")
            ax.set_title(f"{caption}: lanes busy {run['busy']:.0%} of this window (Task {task})",
                         loc="left")
    if t:
        axes[-1].set_xlabel(f"time (mean response length = 1); {t['n_lanes']} lanes, B = {t['B']}, "
                            f"train_time = {t['train_time']}, sigma = {t['sigma']}")
    fig.savefig(path, dpi=100)


def draw_staleness(results, path):
    """Save the --staleness figure: the batch estimate's RMSE, the expected gain of J per
    time unit, and that gain as a ratio to the synchronous run's, against k, for each
    weighting scheme; k = 1 with drop_stale as stars."""
    s = results["staleness"]
    fig = Figure(figsize=(18, 4.8))
    axes = fig.subplots(1, 3)
    titles = ["Stale batches: error of the gradient", "What a time unit buys: gain of J",
              "Gain per time unit / synchronous"]
    for ax, title in zip(axes, titles):
        if s is None:
            placeholder(ax, results["unavailable"]["Staleness"])
        ax.set_title(f"{title} (Tasks 2 and 3)")
    if s is not None:
        staleness_panels(s, *axes)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def staleness_panels(s, ax_error, ax_gain, ax_ratio):
    """RMSE (solid) and bias (dashed) against k; the gain of J per time unit, exact (solid,
    +- 2 SE) and second order (dashed); the exact gain as a ratio to k = 0's (+- 2 SE, the
    two standard errors combined as if independent). The row of k = 1 with drop_stale as
    stars beside k = 1."""
    kept = [row for row in s["rows"] if not row["drop_stale"]]
    dropped = [row for row in s["rows"] if row["drop_stale"]]
    ks = [row["k"] for row in kept]
    sync = s["rows"][0]["schemes"]
    for scheme in s["schemes"]:
        label, color = STALENESS_LABELS[scheme], COLORS[scheme]
        for key, style in (("rmse", "o-"), ("bias", "s--")):
            ax_error.plot(ks, [row["schemes"][scheme][key] for row in kept], style, color=color,
                          label=f"{label}: {key}")
            ax_error.plot([row["k"] for row in dropped],
                          [row["schemes"][scheme][key] for row in dropped], "*", color=color,
                          markersize=13)
        for rows, fmt, size in ((kept, "o-", 6), (dropped, "*", 13)):
            x = [row["k"] + (0.15 if row["drop_stale"] else 0) for row in rows]
            v = [row["schemes"][scheme] for row in rows]
            ax_gain.errorbar(x, [c["exact_gain_per_time"] for c in v],
                             yerr=[2 * c["exact_gain_per_time_se"] for c in v], fmt=fmt,
                             color=color, markersize=size, capsize=3,
                             label=f"{label}: exact" if rows is kept else None)
            ax_gain.plot(x, [c["gain_per_time"] for c in v], "--" if rows is kept else "x",
                         color=color, alpha=0.6,
                         label=f"{label}: second order" if rows is kept else None)
            base = sync[scheme]
            ratio = [c["exact_gain_per_time"] / base["exact_gain_per_time"] for c in v]
            spread = [r * math.hypot(c["exact_gain_per_time_se"] / c["exact_gain_per_time"],
                                     base["exact_gain_per_time_se"] / base["exact_gain_per_time"])
                      for r, c in zip(ratio, v)]
            ax_ratio.errorbar(x, ratio, yerr=[2 * e for e in spread], fmt=fmt, color=color,
                              markersize=size, capsize=3, label=label if rows is kept else None)
    for ax in (ax_gain, ax_ratio):
        ax.plot([], [], "*", color="gray", markersize=13, label="k = 1 dropping stale responses")
    ax_ratio.axhline(1.0, color="gray", linewidth=1, linestyle=":")
    for ax, ylabel in ((ax_error, "error of the batch estimate at version v"),
                       (ax_gain, "expected gain of J per time unit"),
                       (ax_ratio, "exact gain per time unit / k = 0's (+- 2 SE)")):
        ax.set_xlabel("staleness bound k (versions ahead)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(ks)
        ax.set_ylim(bottom=0)
    ax_error.legend(fontsize=8, loc="center right", ncol=2)
    ax_gain.legend(title=f"one update moves {s['kl']:g} nats/token; B = {s['B']}, "
                         f"engine mismatch {s['mismatch']}", fontsize=8, title_fontsize=8,
                   loc="lower right", ncol=2)
    ax_ratio.legend(fontsize=8, loc="lower right")


STALENESS_LABELS = {"none": "none (stale as on-policy)", "token_tis": "token_tis",
                    "seq_tis": "seq_tis"}


TIMELINE_CAPTIONS = {0: "k = 0, synchronous: every batch waits for its slowest response",
                     1: "k = 1: the lanes start the next batch while the trainer works"}


def timeline_panel(t, run, ax, colors):
    """Bars [start, end) on each response's lane, in the colour of the version that generated
    it (colors[v] for version v); the trainer's updates on a row of their own, in the colour
    of the version they produce. Each bar wide enough for it says its version."""
    trainer_row = t["n_lanes"] + 1
    kept = [r for r in run["responses"] if not r["dropped"]]
    dropped = [r for r in run["responses"] if r["dropped"]]
    bars(ax, [(r["lane"], r["start"], r["end"]) for r in kept], 0.8, edgecolor="white",
         linewidth=0.5, facecolor=[colors[r["tag"]] for r in kept])
    if dropped:
        bars(ax, [(r["lane"], r["start"], r["end"]) for r in dropped], 0.8, facecolor="lightgray",
             edgecolor="dimgray", hatch="////", label="dropped as stale")
    updates = [(v + 1, start, end) for v, (start, end) in enumerate(run["updates"])]
    bars(ax, [(trainer_row, start, end) for _, start, end in updates], 1.6, edgecolor="black",
         facecolor=[colors[v] for v, _, _ in updates])
    ax.set_xlim(0, t["window"])
    ax.set_ylim(trainer_row + 1.2, -0.8)  # lane 0 on top, the trainer at the bottom
    # The version numbers: as large as a lane's bar allows, on the bars wide enough for them.
    box = ax.get_position()
    fig = ax.get_figure()
    bar_pt = 0.8 * 72 * box.height * fig.get_figheight() / (trainer_row + 2)
    points_per_time = 72 * box.width * fig.get_figwidth() / t["window"]
    fontsize = min(10, 0.75 * bar_pt)
    if fontsize >= 6:  # below that (many lanes) no label would be legible
        texts = [(r["lane"], r["start"], min(r["end"], t["window"]), r["tag"]) for r in kept]
        texts += [(trainer_row, start, end, v) for v, start, end in updates]
        for row, start, end, v in texts:
            label = f"v{v}"
            if (end - start) * points_per_time >= 0.65 * fontsize * len(label) + 6:
                r, g, b, _ = colors[v]
                ax.text(start + 3 / points_per_time, row, label, va="center", fontsize=fontsize,
                        color="white" if 0.3 * r + 0.6 * g + 0.1 * b < 0.5 else "black")
    rows = list(range(0, t["n_lanes"], max(1, t["n_lanes"] // 16)))
    ax.set_yticks(rows + [trainer_row], [f"lane {i}" for i in rows] + ["trainer"], fontsize=9)
    ax.grid(False)
    ax.text(1.008, 0.5, "colour = policy version\nthat generated it,\nblue oldest, red newest"
            "\n(trainer: the version\nit produces)\n\nwhite = idle lane", transform=ax.transAxes,
            fontsize=9.5, va="center")
    if dropped:
        ax.legend(loc="upper left", bbox_to_anchor=(1.008, 1.0), fontsize=9.5)


def bars(ax, spans, height, **style):
    """Draw (row, start, end) spans as rectangles, all in one collection (fast for hundreds)."""
    boxes = [[(start, row - height / 2), (end, row - height / 2), (end, row + height / 2),
              (start, row + height / 2)] for row, start, end in spans]
    ax.add_collection(PolyCollection(boxes, **style))
