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
    """How many of preset `name`'s held-out ratios (predicted / published) lie in
    [low, high] (those whose label contains one of `words`, if given)."""
    rows = [r for r in g[name]["held_out"] if words is None or any(w in r[0] for w in words)]
    return str(sum(low <= r[3] <= high for r in rows))


def verdict(c):
    """A check's band as docs/gpu-model.md names it: "inside" or "outside" where the band
    is no wider than 2x (a check), "unconstrained" where it is wider."""
    if c["high"] > 2 * c["low"]:
        return f"unconstrained ({c['high'] / c['low']:.1f}×)"
    inside = c["low"] <= c["published"] <= c["high"]
    return f"{'inside' if inside else 'outside'} ({c['high'] / c['low']:.2f}×)"


def check_row(c):
    """A preset's check as docs/gpu-model.md's band tables print it after its name:
    "low | point | high | published | point / published | verdict | held out"."""
    return (
        f"{c['low']:.2f} | {c['point']:.2f} | {c['high']:.2f} | {c['published']:.2f} | "
        f"{c['point'] / c['published']:.2f} | {verdict(c)} | "
        f"{'yes' if c['held_out'] else 'no'}"
    )


def checks_held_out(g, name, inside=None):
    """How many of preset `name`'s held-out checks there are (inside=None), or how many
    are checks (band <= 2x) with the published number inside (True) or outside (False)."""
    rows = [c for c in g[name]["checks"] if c["held_out"]]
    if inside is None:
        return str(len(rows))
    return str(
        sum(
            c["high"] <= 2 * c["low"] and (c["low"] <= c["published"] <= c["high"]) == inside
            for c in rows
        )
    )


def component_row(r):
    """A component as docs/gpu-model.md prints it after its name, thousands of tokens/s:
    "predicted | low-high | published | ratio"."""
    return (
        f"{r['predicted'] / 1e3:.0f} | {r['low'] / 1e3:.0f}–{r['high'] / 1e3:.0f} | "
        f"{r['published'] / 1e3:.0f} | {r['ratio']:.2f}"
    )


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
    "0.8–2.8%"."""
    over = [
        v["gain_per_update"] / v["exact_gain"] - 1 for row in rows for v in row["schemes"].values()
    ]
    return f"{min(over):.1%}–{max(over):.1%}".replace("%–", "–")


def exact_cell(v):
    """ "0.0862 ± 0.0007", with * if the second-order gain is more than 10% off it."""
    return f"{v['exact_gain']:.4f} ± {v['exact_gain_se']:.4f}" + (
        "*" if v["second_order_off"] else ""
    )


def row_label(row):
    return f"{row['k']}" + (", drop stale" if row["drop_stale"] else "")


# ---- the learning curves (--learning-curves) and their step grid (--step-grid): rows
# of the lists trainer_bound / generation_bound, found by their setting, scheme,
# mismatch and step
def lc_find(rows, k, scheme, mismatch, step, drop=False):
    return next(
        r
        for r in rows
        if (r["k"], r["drop_stale"], r["scheme"], r["mismatch"]) == (k, drop, scheme, mismatch)
        and (step is None or r["step"] == step)
    )


def lc_time(r):
    """A time to target as the docs quote it: "12.81 ± 0.35", and " (147)" (the seeds that
    reached it) if not all did."""
    return f"{r['mean']:.2f} ± {r['se']:.2f}" + (
        f" ({r['reached']})" if r["reached"] < r["seeds"] else ""
    )


def lc_best(r):
    """A cell of the best-step table: the time to target at the best scale: "9.85 ± 0.21 [2×]"."""
    return f"{lc_time(r)} [{r['scale']:g}×]"


def lc_paired(v):
    return f"{v['mean']:+.2f} ± {v['se']:.2f}"


def lc_cost_cell(c, step, mismatch, part, *keys):
    """A paired difference of learning_curves' costs: "+5.73 ± 0.15" (a key ending in _lanes
    names the setting's lane count)."""
    d = next(d for d in c["costs"] if (d["step"], d["mismatch"]) == (step, mismatch))[part]
    for key in keys:
        d = d[key if not key.endswith("_lanes") else str(c[key])]
    return lc_paired(d)


def lc_range(rows, pick, key, fmt, join=" to "):
    """The least and the most `key` over the rows `pick` accepts: "0.11 to 0.17"."""
    values = [r[key] for r in rows if pick(r)]
    return f"{fmt.format(min(values))}{join}{fmt.format(max(values))}"


def lc_shares(c, step="equal_kl", mismatch=0.0, schemes=None):
    """Each 16-lane asynchronous cell's time as a share of k = 0's, same scheme (of
    `schemes`, if given): "25–54%"."""
    rows = [
        r
        for r in c["generation_bound"]
        if (r["step"], r["mismatch"]) == (step, mismatch)
        and (schemes is None or r["scheme"] in schemes)
    ]
    sync = {r["scheme"]: r["mean"] for r in rows if r["k"] == 0}
    shares = [r["mean"] / sync[r["scheme"]] for r in rows if r["k"] > 0]
    return f"{min(shares):.0%}–{max(shares):.0%}".replace("%–", "–")


def lc_async_factor(c):
    """k = 0's time over k = 1's at 16 lanes at equal KL, no mismatch, for no correction and
    for token_tis (the least and the most): "2 to 4"."""
    sync = lc_find(c["generation_bound"], 0, "none", 0.0, "equal_kl")["mean"]
    return " to ".join(
        f"{sync / lc_find(c['generation_bound'], 1, s, 0.0, 'equal_kl')['mean']:.0f}"
        for s in ("none", "token_tis")
    )


def lc_cost_value(c, step, mismatch, part, *keys):
    """A paired difference without its sign: "5.73 ± 0.15"."""
    return lc_cost_cell(c, step, mismatch, part, *keys).lstrip("+-")


def lc_recovered_share(c, scheme, step="equal_kl", mismatch=0.0):
    """The share of the uncorrected per-version cost a correction recovers: "94%"."""
    d = next(d for d in c["costs"] if (d["step"], d["mismatch"]) == (step, mismatch))
    return f"{d['recovered'][scheme]['mean'] / d['per_version']['none']['mean']:.0%}"


def lc_setting_value(c, lanes_key, k, key, fmt, drop=False):
    s = next(
        s for s in c["settings"] if (s["lanes"], s["k"], s["drop_stale"]) == (c[lanes_key], k, drop)
    )
    return fmt.format(s[key])


def lc_setting_cell(c, lanes_key, k, drop=False):
    """(throughput, mean lag) of a setting, as a time-to-target table prints them:
    "31.96 | 3.96"."""
    throughput = lc_setting_value(c, lanes_key, k, "throughput", "{:.2f}", drop)
    return f"{throughput} | {lc_setting_value(c, lanes_key, k, 'mean_lag', '{:.2f}', drop)}"


# ---- docs/long-responses.md (snapshot length_sweep)
def span(c):
    """A crossing's bracket: "1.02 and 2.05"."""
    return f"{c['after']:.3g} and {c['at']:.3g}"


def collapse_cell(c):
    """A crossing as the table says it: "2.05 to 4.1", "≤ 0.16 (the first T)", "none up to
    16.4"; a sampled ESS crossing with the mean ESS ± SE at its ends, "(unresolved)" if an
    end lies within 2 SE of the level."""
    if c["at"] is None:
        return f"none up to {c['after']:.3g}"
    text = (
        f"≤ {c['at']:.3g} (the first T)"
        if c["after"] is None
        else f"{c['after']:.3g} to {c['at']:.3g}"
    )
    if "resolved" in c and c["after"] is not None:
        text += (
            f" ({c['value_after']:.3g} ± {c['se_after']:.2g} to {c['value_at']:.3g} ± "
            f"{c['se_at']:.2g}" + ("" if c["resolved"] else ", unresolved") + ")"
        )
    return text


# ---- the PPO curves (--ppo-curves): rows of the list ppo, found by their set-up, setting,
# objective, mismatch and rate
def ppo_find(c, lanes, k, objective, mismatch, rate="1x", drop=False):
    """The row of `lanes` ("n_lanes" or "trainer_lanes", the set-up's key) and the rest."""
    return next(
        r
        for r in c["ppo"]
        if (r["lanes"], r["k"], r["drop_stale"], r["objective"], r["mismatch"], r["rate"])
        == (c[lanes], k, drop, objective, mismatch, rate)
    )


def ppo_cell(c, lanes, k, objective, mismatch, rate="1x", drop=False):
    """A time to target as the docs quote it: "12.81 ± 0.35", and " (47)" if not every seed
    arrived."""
    return lc_time(ppo_find(c, lanes, k, objective, mismatch, rate, drop))


def ppo_cost(c, rate, mismatch, part, objective):
    """A paired difference of ppo_curves' costs: "+0.85 ± 0.05"."""
    d = next(d for d in c["costs"] if (d["rate"], d["mismatch"]) == (rate, mismatch))
    return lc_paired(d[part][objective])


def ppo_range(c, pick, key, fmt, join=" to "):
    """The least and the most `key` over the ppo rows `pick` accepts."""
    return lc_range(c["ppo"], pick, key, fmt, join)


def ppo_cost_range(c, rate, mismatch, objectives):
    """The least and the most per-version cost of `objectives`, unsigned: "0.82 to 0.85"."""
    d = next(d for d in c["costs"] if (d["rate"], d["mismatch"]) == (rate, mismatch))
    means = [d["per_version"][o]["mean"] for o in objectives]
    return f"{min(means):.2f} to {max(means):.2f}"


def ppo_shares(c, rate="1x"):
    """Each 16-lane asynchronous cell's time as a share of k = 0's, same objective and
    mismatch, over the cells where every seed arrived: "24–31%"."""
    rows = [r for r in c["ppo"] if (r["lanes"], r["rate"]) == (c["n_lanes"], rate)]
    sync = {(r["objective"], r["mismatch"]): r["mean"] for r in rows if r["k"] == 0}
    shares = [
        r["mean"] / sync[r["objective"], r["mismatch"]]
        for r in rows
        if r["k"] > 0 and r["reached"] == r["seeds"]
    ]
    return f"{min(shares):.0%}–{max(shares):.0%}".replace("%–", "–")


def lowest_token_ess(levels):
    """The lowest mean ESS of `token` and `token_tis` over every T, rounded down: "40"."""
    lowest = min(
        min(level["schemes"][s]["ess"]) for level in levels for s in ("token", "token_tis")
    )
    return f"{math.floor(lowest):.0f}"


def first_above(level, value):
    """The first T x KL from which both `token`'s and `token_tis`'s relative RMSE exceed value."""
    for i, t_kl in enumerate(level["T_kl"]):
        if all(
            level["schemes"][s]["rmse"][j] > value
            for s in ("token", "token_tis")
            for j in range(i, len(level["T_kl"]))
        ):
            return f"{t_kl:.2g}"
    return "never"


def zero_share(share):
    return "0" if share == 0 else f"{share:.0%}"
