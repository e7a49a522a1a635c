"""The numbers the docs quote that a format string can't say, for the "= expression"
formats of tools/snapshots/*.toml: there v is the value at the quote's path, and these
functions (and math) are in scope, e.g. "= exact_share(v, 4, 'token_tis')" on the path
staleness.rows gives row 4's exact gain per update as a share of k = 0's: "61%".
"""
import math


# ---- the GPU model (snapshot gpu_model: the presets by name)
def within(g, key, low, high):
    """How many of the presets' ratios `key` (sync, asynchronous, speedup) lie in [low, high]."""
    return str(sum(low <= run["ratio"][key] <= high for run in g.values()))


def hour_ratios(g):
    """Every preset's predicted / published hours, synchronous and asynchronous."""
    return [run["ratio"][key] for run in g.values() for key in ("sync", "asynchronous")]


def held_out_within(g, name, low, high, words=None):
    """How many of preset `name`'s held-out ratios lie in [low, high] (those whose label
    contains one of `words`, if given)."""
    rows = [r for r in g[name]["held_out"] if words is None or any(w in r[0] for w in words)]
    return str(sum(low <= r[3] <= high for r in rows))


# ---- docs/staleness.md: the one-step tables (snapshots staleness*)
def exact_ratio(rows, i, scheme):
    """Row i's exact gain per update over the k = 0 row's."""
    return rows[i]["schemes"][scheme]["exact_gain"] / rows[0]["schemes"][scheme]["exact_gain"]


def exact_share(rows, i, scheme):
    """Row i's exact gain per update as a share of the k = 0 row's: "61%"."""
    return f"{exact_ratio(rows, i, scheme):.0%}"


def exact_speedup(rows, i, scheme):
    """Row i's exact gain per time unit over the k = 0 row's: "2.49"."""
    v, sync = rows[i]["schemes"][scheme], rows[0]["schemes"][scheme]
    return f"{v['exact_gain_per_time'] / sync['exact_gain_per_time']:.2f}"


def second_order_speedup(rows, i, scheme):
    """Row i's second-order gain per time unit over the k = 0 row's: "1.03"."""
    v, sync = rows[i]["schemes"][scheme], rows[0]["schemes"][scheme]
    return f"{v['gain_per_time'] / sync['gain_per_time']:.2f}"


def overstatement(rows):
    """How far the second-order gain per update lies above the exact one, over all cells:
    "1–3%"."""
    over = [v["gain_per_update"] / v["exact_gain"] - 1 for row in rows
            for v in row["schemes"].values()]
    return f"{min(over):.0%}–{max(over):.0%}".replace("%–", "–")


def exact_cell(v):
    """"0.0862 ± 0.0007", with * if the second-order gain is more than 10% off it."""
    return f"{v['exact_gain']:.4f} ± {v['exact_gain_se']:.4f}" + ("*" if v["second_order_off"]
                                                                  else "")


def row_label(row):
    """A staleness row's label: "2", or "1, drop stale"."""
    return f"{row['k']}" + (", drop stale" if row["drop_stale"] else "")


# ---- the learning curves: level 0 has no engine mismatch, level 1 the mismatch 0.6
def check_cell(v):
    """Time to the harder check target: "14.49 ± 0.32"."""
    return f"{v['time_check']['mean']:.2f} ± {v['time_check']['se']:.2f}"


def learning_cell(v, e, n_seeds=200):
    """Time to target at step scale e: "7.88 ± 0.14", and "(199)" if not every seed reached
    it."""
    t = v["time"][e]
    return f"{t['mean']:.2f} ± {t['se']:.2f}" + (f" ({v['n_reached'][e]})"
                                                 if v["n_reached"][e] < n_seeds else "")


NAMES = {"none": "no correction", "token_tis": "`token_tis`", "seq_tis": "`seq_tis`"}


def cell_name(level, row, scheme):
    """"`token_tis` at k = 2" or "... at k = 1 dropping stale"."""
    r = level["rows"][row]
    return f"{NAMES[scheme]} at k = {r['k']}" + (" dropping stale" if r["drop_stale"] else "")


def best_cell(c, level, e):
    """The learning curves' best cell at mismatch level `level` and step scale e."""
    best = c["levels"][level]["best"][e]
    return cell_name(c["levels"][level], best["row"], best["scheme"])


def ties(c, level, e):
    """The cells not significantly slower than the best (paired, 2 SE), or "none"."""
    lv = c["levels"][level]
    best = lv["best"][e]
    names = [cell_name(lv, int(cell.split()[0]), cell.split()[1])
             for cell, d in best["differences"].items() if not d["significant"]]
    return ", ".join(n for n in names if n != best_cell(c, level, e)) or "none"


def time_share(c, level, e, row, scheme):
    """A cell's time to target as a share of k = 0's, same scheme: "48%"."""
    rows = c["levels"][level]["rows"]
    times = [rows[j]["schemes"][scheme]["time"][e]["mean"] for j in (row, 0)]
    return f"{times[0] / times[1]:.0%}"


def async_share_range(c):
    """The least and the most time to target of an asynchronous cell as a share of the
    synchronous one, over every level, scale, scheme and k >= 1: "36–53%"."""
    shares = [row["schemes"][s]["time"][e]["mean"] / lv["rows"][0]["schemes"][s]["time"][e]["mean"]
              for lv in c["levels"] for row in lv["rows"][1:] for s in row["schemes"]
              for e in range(len(c["scales"]))]
    return f"{min(shares):.0%}–{max(shares):.0%}".replace("%–", "–")


def paired(c, level, e, row, scheme):
    """A cell's paired difference from the best cell: "0.63 ± 0.10"."""
    d = c["levels"][level]["best"][e]["differences"][f"{row} {scheme}"]
    return f"{d['mean']:.2f} ± {d['se']:.2f}"


def unreached(c):
    """The cells where some seed never reached the target within max_updates, or "none"."""
    out = []
    for lv in c["levels"]:
        for i, row in enumerate(lv["rows"]):
            for scheme, v in row["schemes"].items():
                for e, scale in enumerate(c["scales"]):
                    if v["n_reached"][e] < c["n_seeds"]:
                        out.append(f"{cell_name(lv, i, scheme)}, step {scale:g}×, mismatch "
                                   f"{lv['mismatch']:g} ({c['n_seeds'] - v['n_reached'][e]} "
                                   f"of {c['n_seeds']})")
    return "; ".join(out) or "none"


# ---- docs/long-responses.md (snapshot length_sweep)
def collapse_cell(c):
    """A crossing as the table says it: "2.05 to 4.1", "≤ 0.16 (the first T)", "none up to
    16.4"."""
    if c["at"] is None:
        return f"none up to {c['after']:.3g}"
    return f"≤ {c['at']:.3g} (the first T)" if c["after"] is None else f"{c['after']:.3g} to {c['at']:.3g}"


def crossing_span(levels, scheme):
    """"2.05 and 4.16": over all levels, the smallest T x KL where the scheme's mean ESS still
    held 10% of the batch and the largest where it had fallen below."""
    points = [level["collapse"][scheme]["ess_share"] for level in levels]
    return f"{min(c['after'] for c in points):.1g} and {max(c['at'] for c in points):.1g}"


def lowest_token_ess(levels):
    """The lowest mean ESS of `token` and `token_tis` over every T, rounded down: "40"."""
    lowest = min(min(level["schemes"][s]["ess"]) for level in levels
                 for s in ("token", "token_tis"))
    return f"{math.floor(lowest):.0f}"


def first_above(level, value):
    """The first T x KL from which both `token`'s and `token_tis`'s relative RMSE exceed value."""
    for i, t_kl in enumerate(level["T_kl"]):
        if all(level["schemes"][s]["rmse"][j] > value for s in ("token", "token_tis")
               for j in range(i, len(level["T_kl"]))):
            return f"{t_kl:.2g}"
    return "never"


def zero_share(share):
    """A share of zero weights: "0", or "12%"."""
    return "0" if share == 0 else f"{share:.0%}"
