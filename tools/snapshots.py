"""Docs that can't drift: reference snapshots of run.py's numbers, and the docs' quotes of them.

    python tools/snapshots.py            # check (CI runs it)
    python tools/snapshots.py --update   # after a deliberate change: rewrite the snapshots
    python tools/snapshots.py --student-copy OUT/student   # a release's docs too

1. For each run in RUNS, run.py with the reference solutions writes rl_systems.json, and
   every number in it must match tools/snapshots/<name>.json within
   |fresh - snapshot| <= ATOL + RTOL * |snapshot|. The absolute part is for numbers near
   0 (a bias of 1e-16 changes by a large factor when the arithmetic is reordered).
2. Every number README.md or a file of docs/ quotes from a run is listed in QUOTES under
   that doc, with the words around it (a table row, all its numbers at once, in
   TABLE_ROWS); the snapshot's value, formatted as quoted, must appear there in that doc.
   A number in neither is not checked, so add it when you write it.
3. The table of Task 3's claims on other draws of the toy (DRAWS_DOC) must hold the counts
   tools/check_draws.py computes now (DRAW_CLAIMS names its rows).
4. --student-copy: a release's docs must be the ones tools/release.py makes, hold the same
   checked numbers (those outside instructor parts), and leave out the instructor-only docs.

To add an experiment flag: add a line to RUNS, run --update, and add its quotes to QUOTES.
The runs are independent, so they run in parallel, one per core.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "tools" / "snapshots"
RTOL, ATOL = 1e-6, 1e-9

# snapshot name -> run.py flags (the reference solutions always)
RUNS = {
    "default": [],
    "drop_stale": ["--drop-stale"],
    "c_sweep": ["--c-sweep"],
    "sigma_0.5": ["--sigma", "0.5"],
    "train_time_3": ["--train-time", "3.0"],
    "noise_gaussian": ["--noise", "gaussian"],
    "lanes_64": ["--lanes", "64"],
    "timeline": ["--timeline"],
    "length_sweep": ["--length-sweep"],
    "length_sweep_no_mismatch": ["--length-sweep", "--length-kl", "0"],
    "equal_hardware": ["--equal-hardware"],
    **{f"equal_hardware_work_{w}": ["--equal-hardware", "--train-work", str(w)]
       for w in (1, 4, 8, 32, 64, 128)},
    "equal_hardware_sigma_0.5": ["--equal-hardware", "--sigma", "0.5"],
    "equal_hardware_sigma_0": ["--equal-hardware", "--sigma", "0"],
    "equal_hardware_gpus_8": ["--equal-hardware", "--gpus", "8"],
    "equal_hardware_gpus_24": ["--equal-hardware", "--gpus", "24"],
    "staleness": ["--staleness"],
    "staleness_kl_0.1": ["--staleness", "--staleness-kl", "0.1"],
    "staleness_mismatch_0.6": ["--staleness", "--staleness-mismatch", "0.6"],
    "learning_curves": ["--learning-curves"],
    "step_grid": ["--step-grid"],
    "gpu_model": ["--preset", "all", "--gpu-sweep"],
}


def gpu(name, path, fmt):
    """A cell of docs/gpu-model.md: preset `name`'s value at `path` (preset names hold dots,
    so the path starts inside the preset)."""
    show = fmt if callable(fmt) else fmt.format
    return ("gpu_model", "gpu_model", lambda g: show(value_at(g[name], path)))


def gpu_quote(words, name, path, fmt):
    return (words, *gpu(name, path, fmt))


def within(g, key, low, high):
    """How many of the presets' ratios `key` (sync, asynchronous, speedup) lie in [low, high]."""
    return str(sum(low <= run["ratio"][key] <= high for run in g.values()))


def hour_ratios(g):
    """Every preset's predicted / published hours, synchronous and asynchronous."""
    return [run["ratio"][key] for run in g.values() for key in ("sync", "asynchronous")]


def compared_row(name, i):
    """Row i of preset `name`'s held-out list, as docs/gpu-model.md's table prints it:
    | preset | what (note) | bound | predicted | published | ratio |, the bound blank where
    it was not run, the note naming the row it is the same measurement as."""
    def row(g):
        what, predicted, published, ratio, bound, same = g[name]["held_out"][i]
        note = "" if not same else " (derived)" if same == "derived" else f" (= {same})"
        b = "" if bound is None else f"{bound:.2f}"
        return (f"| {name} | {what}{note} | {b} | {predicted:.2f} | {published:.2f} "
                f"| {ratio:.2f} |")
    return ("{}", [("gpu_model", "gpu_model", row)])


# how many rows each preset has in its held-out list (experiments.gpu_model.gpu_comparison)
COMPARED = {"areal-1.5b": 10, "areal-7b": 3, "verl-7b": 20}
# the labels of docs/gpu-model.md's walk tables, one per step of each preset's walk
AREAL_WALK_LABELS = ("bound", "+ decode overhead", "+ trainer efficiency 0.40", "+ weight save",
                     "+ weight reload", "+ poll", "+ KV recompute", "+ reward",
                     "+ checkpoints = predicted")
WALK_LABELS = {"areal-1.5b": AREAL_WALK_LABELS, "areal-7b": AREAL_WALK_LABELS,
               "verl-7b": ("bound", "+ decode overhead", "+ TP all-reduces",
                           "+ trainer efficiency 0.40", "+ parameter sync", "+ KV recompute",
                           "+ reward = predicted")}


def walk_row(name, i, label):
    """Step i of preset `name`'s walk: | label | sync s | sync h | async s | async h |."""
    def row(g):
        w = g[name]["walk"][i]
        return (f"| {label} | {w['sync_seconds']:.1f} | {w['sync_hours']:.2f} "
                f"| {w['seconds']:.1f} | {w['hours']:.2f} |")
    return ("{}", [("gpu_model", "gpu_model", row)])


def held_out_within(g, name, low, high, words=None):
    """How many of preset `name`'s held-out ratios lie in [low, high] (those whose label
    contains one of `words`, if given; derived rows, the speedups, left out)."""
    rows = [r for r in g[name]["held_out"] if r[5] != "derived"
            and (words is None or any(w in r[0] for w in words))]
    return str(sum(low <= r[3] <= high for r in rows))


def gpu_sweep_row(i, label):
    base = f"gpu_sweep.rows.{i}"
    return (f"| {label} | {{}} | {{}} | {{}} | {{}}× | {{}} | {{}} |",
            [("gpu_model", f"{base}.slots", "{}"), ("gpu_model", f"{base}.sync_seconds", "{:.1f}"),
             ("gpu_model", f"{base}.async_seconds", "{:.1f}"),
             ("gpu_model", f"{base}.speedup", "{:.2f}"), ("gpu_model", f"{base}.max_lag", "{}"),
             ("gpu_model", f"{base}.token_lag", "{:.2f}")])


def lane_row(i, label):
    base = f"gpu_sweep.lanes.rows.{i}"
    return (f"| {label} | {{}}× | {{}}× | {{}} |",
            [("gpu_model", f"{base}.gain.1", "{:.2f}"), ("gpu_model", f"{base}.gain.2", "{:.2f}"),
             ("gpu_model", f"{base}.max_lag.1", "{}")])


# ---- docs/staleness.md: the one-step tables (snapshots staleness*) and the learning curves

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
    over = [v["gain_per_update"] / v["exact_gain"] - 1 for row in rows
            for v in row["schemes"].values()]
    return f"{min(over):.1%}–{max(over):.1%}".replace("%–", "–")


def exact_cell(v):
    """"0.0862 ± 0.0007", with * if the second-order gain is more than 10% off it."""
    return f"{v['exact_gain']:.4f} ± {v['exact_gain_se']:.4f}" + ("*" if v["second_order_off"]
                                                                  else "")


def staleness_row(i):
    """Row i of docs/staleness.md's error table: k, throughput, lags, RMSE and cosine."""
    base = f"staleness.rows.{i}"
    words = "| {} | {} | {} / {} / {} |" + " {} / {} / {} |" * 2
    cells = [("staleness", base, row_label), ("staleness", f"{base}.throughput", "{:.2f}"),
             ("staleness", f"{base}.mean_lag", "{:.2f}"),
             ("staleness", f"{base}.lag_p95", "{}"), ("staleness", f"{base}.max_lag", "{}")]
    for key in ("rmse", "cosine"):
        cells += [("staleness", f"{base}.schemes.{scheme}.{key}", "{:.3f}")
                  for scheme in ("none", "token_tis", "seq_tis")]
    return words, cells


def row_label(row):
    return f"{row['k']}" + (", drop stale" if row["drop_stale"] else "")


SCHEME_KEYS = ("none", "token_tis", "seq_tis")


def gain_row(name, i):
    """Row i of a one-step gain table: second order, exact +- SE, noise term, KL moved."""
    base = f"staleness.rows.{i}"
    cells = [(name, base, row_label)]
    for key, fmt in (("gain_per_update", "{:.4f}"), (None, exact_cell),
                     ("noise_term", "{:+.4f}"), ("update_kl", "{:.3f}")):
        cells += [(name, f"{base}.schemes.{scheme}" + (f".{key}" if key else ""), fmt)
                  for scheme in SCHEME_KEYS]
    return "| {} |" + " {} / {} / {} |" * 4, cells


def time_row(name, i):
    """Row i of the gain-per-time-unit table: exact gain per time unit, and / k = 0's."""
    base = f"staleness.rows.{i}"
    cells = [(name, base, row_label)]
    cells += [(name, f"{base}.schemes.{scheme}.exact_gain_per_time", "{:.4f}")
              for scheme in SCHEME_KEYS]
    cells += [(name, "staleness.rows", lambda rows, s=scheme: exact_speedup(rows, i, s))
              for scheme in SCHEME_KEYS]
    return "| {} |" + " {} / {} / {} |" * 2, cells


def kl_row(i):
    """Row i of the --staleness-kl 0.1 table: second-order and exact gain per time / k = 0's."""
    cells = [("staleness_kl_0.1", f"staleness.rows.{i}", row_label)]
    for ratio in (second_order_speedup, exact_speedup):
        cells += [("staleness_kl_0.1", "staleness.rows",
                   lambda rows, s=scheme, f=ratio: f(rows, i, s)) for scheme in SCHEME_KEYS]
    return "| {} |" + " {} / {} / {} |" * 2, cells


# The learning curves (--learning-curves) and their step grid (--step-grid): rows of the
# lists trainer_bound / generation_bound, found by their setting, scheme, mismatch and step.
def lc_find(rows, k, scheme, mismatch, step, drop=False):
    return next(r for r in rows if (r["k"], r["drop_stale"], r["scheme"], r["mismatch"])
                == (k, drop, scheme, mismatch) and (step is None or r["step"] == step))


def lc_time(r):
    """A time to target as the docs quote it: "12.81 ± 0.35", and " (147)" (the seeds that
    reached it) if not all did."""
    return f"{r['mean']:.2f} ± {r['se']:.2f}" + (f" ({r['reached']})"
                                                 if r["reached"] < r["seeds"] else "")


def lc(setup, k, scheme, mismatch, step, drop=False, fmt=lc_time, snapshot="learning_curves"):
    """A cell of the learning curves (or, snapshot "step_grid", of its grid, step None)."""
    return (snapshot, f"{snapshot}.{setup}",
            lambda rows: fmt(lc_find(rows, k, scheme, mismatch, step, drop)))


def lc_setting(setup, k, drop=False):
    """(throughput, mean lag) of a setting, as "31.96 | 3.96"."""
    lanes = {"generation_bound": "n_lanes", "trainer_bound": "trainer_lanes"}[setup]
    return ("learning_curves", "learning_curves", lambda c: next(
        f"{s['throughput']:.2f} | {s['mean_lag']:.2f}" for s in c["settings"]
        if (s["lanes"], s["k"], s["drop_stale"]) == (c[lanes], k, drop)))


LC_SETTINGS = [(0, False), (1, False), (2, False), (4, False), (8, False), (1, True)]


def lc_label(k, drop):
    return f"{k}" + (", drop stale" if drop else "")


def lc_table_row(setup, mismatch, k, drop):
    """A row of a time-to-target table: | k | throughput | lag | three schemes at equal KL |
    the same at 1x |."""
    cells = [lc_setting(setup, k, drop)]
    cells += [lc(setup, k, s, mismatch, step, drop) for step in ("equal_kl", "1x")
              for s in SCHEME_KEYS]
    return f"| {lc_label(k, drop)} |" + " {} |" * 7, cells


def grid_table_row(mismatch, k, drop):
    """A row of the best-step table: | k | each scheme's time at its best scale [scale] |."""
    fmt = lambda r: f"{lc_time(r)} [{r['scale']:g}×]"
    return (f"| {lc_label(k, drop)} |" + " {} |" * 3,
            [lc("trainer_bound", k, s, mismatch, None, drop, fmt, "step_grid")
             for s in SCHEME_KEYS])


def lc_paired(v):
    return f"{v['mean']:+.2f} ± {v['se']:.2f}"


def lc_cost(step, mismatch, part, *keys):
    """A paired difference of learning_curves' costs: "+5.73 ± 0.15"."""
    def get(c):
        d = next(d for d in c["costs"] if (d["step"], d["mismatch"]) == (step, mismatch))[part]
        for key in keys:
            d = d[key if not key.endswith("_lanes") else str(c[key])]
        return lc_paired(d)
    return ("learning_curves", "learning_curves", get)


def lc_range(rows, pick, key, fmt, join=" to "):
    """The least and the most `key` over the rows `pick` accepts: "0.11 to 0.17"."""
    values = [r[key] for r in rows if pick(r)]
    return f"{fmt.format(min(values))}{join}{fmt.format(max(values))}"


def lc_shares(c, step="equal_kl", mismatch=0.0):
    """Each 16-lane asynchronous cell's time as a share of k = 0's, same scheme: "25–54%"."""
    rows = [r for r in c["generation_bound"] if (r["step"], r["mismatch"]) == (step, mismatch)]
    sync = {r["scheme"]: r["mean"] for r in rows if r["k"] == 0}
    shares = [r["mean"] / sync[r["scheme"]] for r in rows if r["k"] > 0]
    return f"{min(shares):.0%}–{max(shares):.0%}".replace("%–", "–")


def lc_async_factor(c):
    """k = 0's time over k = 1's at 16 lanes at equal KL, no mismatch, for no correction and
    for token_tis (the least and the most): "2 to 4"."""
    sync = lc_find(c["generation_bound"], 0, "none", 0.0, "equal_kl")["mean"]
    return " to ".join(f"{sync / lc_find(c['generation_bound'], 1, s, 0.0, 'equal_kl')['mean']:.0f}"
                       for s in ("none", "token_tis"))


def lc_cost_value(c, step, mismatch, part, *keys):
    """A paired difference without its sign: "5.73 ± 0.15"."""
    return lc_cost(step, mismatch, part, *keys)[2](c).lstrip("+-")


def lc_recovered_share(c, scheme, step="equal_kl", mismatch=0.0):
    """The share of the uncorrected per-version cost a correction recovers: "94%"."""
    d = next(d for d in c["costs"] if (d["step"], d["mismatch"]) == (step, mismatch))
    return f"{d['recovered'][scheme]['mean'] / d['per_version']['none']['mean']:.0%}"


def lc_setting_value(c, lanes_key, k, key, fmt, drop=False):
    s = next(s for s in c["settings"] if (s["lanes"], s["k"], s["drop_stale"]) ==
             (c[lanes_key], k, drop))
    return fmt.format(s[key])


STEP_NAMES = {"equal_kl": "equal KL", "1x": "1×"}


def version_row(step, mismatch):
    """| step, mismatch | one more version: none, token_tis, seq_tis | recovered: token_tis,
    seq_tis |"""
    cells = ([lc_cost(step, mismatch, "per_version", s) for s in SCHEME_KEYS]
             + [lc_cost(step, mismatch, "recovered", s) for s in SCHEME_KEYS[1:]])
    return f"| {STEP_NAMES[step]}, {mismatch:g} |" + " {} |" * 5, cells


def async_drop_row(step, mismatch):
    """| step, mismatch | k = 1 - k = 0 at 16 lanes (3) | dropping - keeping at k = 1, 16 and
    64 lanes (3 each) |"""
    cells = ([lc_cost(step, mismatch, "asynchrony", s) for s in SCHEME_KEYS]
             + [lc_cost(step, mismatch, "drop", lanes, s) for lanes in ("n_lanes", "trainer_lanes")
                for s in SCHEME_KEYS])
    return f"| {STEP_NAMES[step]}, {mismatch:g} |" + " {} |" * 9, cells


def span(c):
    """A crossing's bracket: "1.02 and 2.05"."""
    return f"{c['after']:.3g} and {c['at']:.3g}"


# Per doc (a path from the repository's root): (its words, with {} where the number goes;
# snapshot; path in the JSON; format). A format is a format string, or a function of the
# value at the path for what a format string can't say (KiB from bytes, a split "10 / 6"
# from the equal_hardware dict).
QUOTES = {
    "README.md": [
        # Introduction and Task 1
        ("on a 7B model needs {} GB of model state, a small cluster", "default",
         "memory.ppo_7b_gb", "{:.0f}"),
        ("head dim 128) caches {} bytes", "default", "memory.models.2.kv_bytes_per_token",
         "{:,}"),
        ("57,344 bytes = {} KiB per token", "default", "memory.models.2.kv_bytes_per_token",
         lambda b: f"{b / 1024:g}"),
        ("Targets: {} GB for PPO on 7B", "default", "memory.ppo_7b_gb", "{:.0f}"),
        ("7B, {} GB for GRPO, 112 GB", "default", "memory.grpo_7b_gb", "{:.0f}"),
        # What you should see: the defaults
        ("(the defaults are {} lanes, B = 32", "default", "scheduling.n_lanes", "{}"),
        ("16 lanes, B = {}, lognormal", "default", "scheduling.B", "{}"),
        ("mean 1 and σ = {}, train_time", "default", "scheduling.sigma", "{}"),
        ("train_time {}, batches of 64", "default", "scheduling.train_time", "{}"),
        ("train_time 1.0, batches of {}):", "default", "mismatch.batch_size", "{}"),
        # What you should see: Part 1
        ("needs {} GB of model state", "default", "memory.ppo_7b_gb", "{:.0f}"),
        ("KV cache: {} H100s (80 GB)", "default", "memory.h100s_for_ppo_7b", "{}"),
        ("GRPO halves that to {} GB", "default", "memory.grpo_7b_gb", "{:.0f}"),
        ("40M adapter parameters) needs {} GB", "default", "memory.grpo_lora_7b_gb", "{:.1f}"),
        ("64 responses of 16k tokens take {} GB", "default", "memory.kv_64x16k_gb", "{:.1f}"),
        ("(Qwen2.5-72B with PPO: {} GB", "default", "memory.models.4.ppo_gb", "{:,.0f}"),
        ("Qwen2.5-72B with PPO: 2,618 GB, {} GPUs)", "default",
         "memory.models.4.gpus_for_ppo", "{}"),
        # Part 2, with its lag tail
        ("keeps the lanes busy {} of the time", "default", "scheduling.utilization.0", "{:.0%}"),
        ("(k = 1) gives {}× the throughput", "default", "scheduling.throughput_gain.1",
         "{:.2f}"),
        ("k = 2 adds almost nothing ({}×)", "default", "scheduling.throughput_gain.2", "{:.2f}"),
        ("the lanes are busy {} of the time, so generation", "default",
         "scheduling.utilization.2", "{:.0%}"),
        ("a mean of 0 at k = 0, {} at k = 1", "default", "scheduling.mean_lag.1", "{:.2f}"),
        ("and {} from k = 2 on", "default", "scheduling.mean_lag.2", "{:.2f}"),
        ("at k = 1 the 95th percentile of the lag is {}", "default", "scheduling.lag_p95.1",
         "{}"),
        ("{} of the trained responses have lag 2 or more", "default", "scheduling.lag_counts.1",
         lambda counts: f"{sum(counts[2:]) / sum(counts):.1%}"),  # lags over k = 1
        ("and the oldest has lag {}; from k = 2 on", "default", "scheduling.max_lag.1", "{}"),
        ("from k = 2 on, p95 {} and max", "default", "scheduling.lag_p95.2", "{}"),
        ("p95 2 and max {}.", "default", "scheduling.max_lag.2", "{}"),
        # Part 3
        ("grows linearly with the mismatch ({},", "default", "mismatch.schemes.none.bias.1",
         "{:.3f}"),
        ("with the mismatch (0.037, {},", "default", "mismatch.schemes.none.bias.2", "{:.3f}"),
        ("0.076, {} at 0.1, 0.2, 0.4)", "default", "mismatch.schemes.none.bias.4", "{:.3f}"),
        ("its RMSE climbs to {} at mismatch 1.0", "default", "mismatch.schemes.seq.rmse.10",
         "{:.1f}"),
        ("at large mismatch: {} (`token_tis`)", "default", "mismatch.schemes.token_tis.rmse.6",
         "{:.3f}"),
        ("and {} (`seq_tis`) at 0.6", "default", "mismatch.schemes.seq_tis.rmse.6", "{:.3f}"),
        ("against {} (`token`)", "default", "mismatch.schemes.token.rmse.6", "{:.3f}"),
        ("(`token`), {} (`none`)", "default", "mismatch.schemes.none.rmse.6", "{:.3f}"),
        ("(`none`) and {} (`seq`)", "default", "mismatch.schemes.seq.rmse.6", "{:.3f}"),
        ("bias steps from {} at mismatch 0.9", "default", "masking.schemes.token_mask.bias.9",
         "{:.2f}"),
        ("at mismatch 0.9 to {} at 1.0", "default", "masking.schemes.token_mask.bias.10",
         "{:.2f}"),
        # Things to try
        ("drops from {}× to 3.17×", "default", "scheduling.throughput_gain.1", "{:.2f}"),
        ("drops from 4.08× to {}×", "train_time_3", "scheduling.throughput_gain.1", "{:.2f}"),
        ("and levels off at {}×", "train_time_3", "scheduling.throughput_gain.-1", "{:.2f}"),
        ("with the lanes busy at most {} of the time", "train_time_3",
         "scheduling.utilization.-1", "{:.0%}"),
        ("keeps growing with k ({} at k = 8)", "train_time_3", "scheduling.mean_lag.-1",
         "{:.2f}"),
        ("{} of 7,128 are dropped", "drop_stale", "drop_stale.n_dropped", "{:,}"),
        ("696 of {} are dropped", "drop_stale", "drop_stale.n_started", "{:,}"),
        ("{} of all generation time", "drop_stale", "drop_stale.wasted_frac", "{:.0%}"),
        ("have a mean length of {}", "drop_stale", "drop_stale.mean_length_dropped", "{:.2f}"),
        ("against {} for the trained ones", "drop_stale", "drop_stale.mean_length_trained",
         "{:.2f}"),
        ("max lag of a trained response is {} (= k)", "drop_stale", "drop_stale.max_lag", "{}"),
        ("(= k), against {} keeping them", "drop_stale", "drop_stale.max_lag_keeping_stale",
         "{}"),
        ("gain goes {}× at k = 1", "lanes_64", "scheduling.throughput_gain.1", "{:.2f}"),
        ("{}× at k = 2 (then the trainer", "lanes_64", "scheduling.throughput_gain.2",
         "{:.2f}"),
        ("(mean {}, max 34 at k = 8)", "lanes_64", "scheduling.mean_lag.-1", "{:.2f}"),
        ("max {} at k = 8)", "lanes_64", "scheduling.max_lag.-1", "{}"),
        ("the synchronous lanes are already {} busy", "sigma_0.5", "scheduling.utilization.0",
         "{:.0%}"),
        ("asynchrony gains only {}×", "sigma_0.5", "scheduling.throughput_gain.1", "{:.1f}"),
        ("for C from {} to 10", "c_sweep", "c_sweep.C.0", "{:g}"),
        ("for C from 1 to {} at", "c_sweep", "c_sweep.C.-1", "{:g}"),
        ("to 10 at mismatch {}.", "c_sweep", "c_sweep.mismatch", "{}"),
        ("The RMSE is lowest at C = {}", "c_sweep", "c_sweep.best_C", "{:g}"),
        ("lowest at C = 1.25 ({})", "c_sweep", "c_sweep.rmse.1", "{:.3f}"),
        ("and rises to {} once nothing is truncated", "c_sweep", "c_sweep.rmse.-1", "{:.3f}"),
        ("once nothing is truncated (C ≥ {})", "c_sweep", "c_sweep.C.8", "{:g}"),
        ("`seq`'s RMSE at mismatch 1.0 is {}", "noise_gaussian",
         "mismatch.schemes.seq.rmse.10", "{:.2f}"),
        ("is 1.96 instead of {}", "default", "mismatch.schemes.seq.rmse.10", "{:.2f}"),
        ("stays low under both ({}", "noise_gaussian", "mismatch.schemes.seq_tis.rmse.10",
         "{:.2f}"),
        ("under both (0.14 and {})", "default", "mismatch.schemes.seq_tis.rmse.10", "{:.2f}"),
        ("Task 3 at up to {} tokens", "length_sweep", "length_sweep.levels.-1.T.-1", "{:,}"),
    ],
    "docs/run-output.md": [
        # The timeline picture
        ("Up to the k = 0 run's {}th update", "timeline", "timeline.n_updates", "{}"),
        ("4th update ({} time units)", "timeline", "timeline.window", "{:.1f}"),
        # response 21 at k = 0: the first batch's straggler, whose end starts the first update
        ("lane {}'s response, which ends", "timeline", "timeline.runs.0.responses.21.lane",
         "{}"),
        ("which ends at {}) keep the trainer", "timeline", "timeline.runs.0.responses.21.end",
         "{:.1f}"),
        ("the lanes are busy {} of this window", "timeline", "timeline.runs.0.busy", "{:.0%}"),
        ("the rows are full ({} busy)", "timeline", "timeline.runs.1.busy", "{:.0%}"),
        # The token mask's step
        ("jumps from {} at mismatch 0.9 to 0.26", "default", "masking.schemes.token_mask.bias.9",
         "{:.2f}"),
        ("at mismatch 0.9 to {} at 1.0, and the bias panel", "default",
         "masking.schemes.token_mask.bias.10", "{:.2f}"),
        # The flags' summary lines
        ("PPO {} GB, GRPO 126 GB", "default", "memory.ppo_7b_gb", "{:.0f}"),
        ("k = 1 gives {}x the throughput", "default", "scheduling.throughput_gain.1", "{:.2f}"),
        ("none {}, token 0.179", "default", "mismatch.schemes.none.rmse.6", "{:.3f}"),
        ("token_mask {}, seq_mask", "default", "masking.schemes.token_mask.rmse.6", "{:.3f}"),
    ],
    "docs/real-systems.md": [
        # the GPU model's predictions (docs/gpu-model.md)
        gpu_quote("it gives speedups of {}× for AReaL's 1.5B\nrun", "areal-1.5b", "speedup",
                  "{:.2f}"),
        gpu_quote("run, {}× for its 7B run", "areal-7b", "speedup", "{:.2f}"),
        gpu_quote("7B run and {}× for verl's, against", "verl-7b", "speedup", "{:.2f}"),
        ("2.35× ({} within 25%;", "gpu_model", "gpu_model",
         lambda g: {"0": "none"}.get(within(g, "speedup", 0.75, 1.25),
                                     within(g, "speedup", 0.75, 1.25) + " of the 3")),
        gpu_quote("the 7B at {} of it)", "areal-7b", "ratio.speedup", "{:.3f}"),
        ("and its hours land between {} and", "gpu_model", "gpu_model",
         lambda g: f"{min(hour_ratios(g)):.2f}×"),
        ("× and\n{} of the published ones", "gpu_model", "gpu_model",
         lambda g: f"{max(hour_ratios(g)):.2f}×"),
        # The speedup at equal hardware
        ("Part 2's {} compares", "default", "scheduling.throughput_gain.1", "{:.2f}×"),
        ("(`--gpus`, default {})", "equal_hardware", "equal_hardware.gpus", "{}"),
        ("`--lanes-per-gpu` lanes (default {})", "equal_hardware",
         "equal_hardware.lanes_per_gpu", "{}"),
        ("G × `--train-time` = {}):", "equal_hardware", "equal_hardware.train_work", "{:g}"),
        ("exactly Part 2's k = 0 run: {}.", "equal_hardware", "equal_hardware.sync_throughput",
         "{:.2f}"),
        ("this is exactly Part 2's k = 0 run: {}.", "default", "scheduling.throughput.0",
         "{:.2f}"),
        ("GRPO on the lab's 7B, {} GB from your", "default", "memory.grpo_7b_gb", "{:.0f}"),
        ("`rl_memory_gb`: {} GPUs)", "equal_hardware", "equal_hardware.trainer_gpus_needed",
         "{}"),
        ("so g = {} is excluded", "equal_hardware", "equal_hardware.splits.-1.gen_gpus", "{}"),
        ("the best split is {} training", "equal_hardware", "equal_hardware",
         lambda e: f"{e['best_gen_gpus']} GPUs generating and {e['gpus'] - e['best_gen_gpus']}"),
        ("training: {} responses per time unit", "equal_hardware",
         "equal_hardware.best_throughput", "{:.2f}"),
        ("per time unit, **{}×** the synchronous", "equal_hardware", "equal_hardware.speedup",
         "{:.2f}"),
        ("With `--sigma 0.5` it falls to {}×", "equal_hardware_sigma_0.5",
         "equal_hardware.speedup", "{:.2f}"),
        ("the split loses: {}×", "equal_hardware_sigma_0", "equal_hardware.speedup", "{:.2f}"),
        ("On 8 GPUs (`--gpus 8`) it is {}×", "equal_hardware_gpus_8", "equal_hardware.speedup",
         "{:.2f}"),
        ("on 24, {}×.", "equal_hardware_gpus_24", "equal_hardware.speedup", "{:.2f}"),
        # The published speedups
        ("(k = 1 vs k = 0) | {}× |", "default", "scheduling.throughput_gain.1", "{:.2f}"),
        ("`--equal-hardware` | {}× (1.38×", "equal_hardware", "equal_hardware.speedup",
         "{:.2f}"),
        ("({}× to 3.19× over `--train-work` 128", "equal_hardware_work_128",
         "equal_hardware.speedup", "{:.2f}"),
        ("(1.38× to {}× over `--train-work` 128", "equal_hardware_work_1",
         "equal_hardware.speedup", "{:.2f}"),
        ("equal, {} GPUs | this lab", "equal_hardware", "equal_hardware.gpus", "{}"),
        # How the systems bound staleness
        ("(max lag {} at k = 1 in the default run)", "default", "scheduling.max_lag.1", "{}"),
        ("(max lag {} at k = 1) and pays", "drop_stale", "drop_stale.max_lag", "{}"),
        ("pays with wasted generation ({} of it", "drop_stale", "drop_stale.wasted_frac",
         "{:.0%}"),
        ("{} of them are over 4×", "drop_stale", "drop_stale.long_share_dropped", "{:.0%}"),
        ("{} of the trained ones are", "drop_stale", "drop_stale.long_share_trained", "{:.0%}"),
        # Why k stops mattering
        ("**Why k stops mattering past k = 2.** {} lanes", "default", "scheduling.n_lanes",
         "{}"),
        ("16 lanes finish about {} responses per time unit", "default",
         "scheduling.throughput.2", "{:.0f}"),
        ("and the trainer could take {} (B = 32", "default", "scheduling",
         lambda run: f"{run['B'] / run['train_time']:g}"),
        # From lanes to GPUs
        ("how many responses of {} tokens one 80 GB", "default", "memory.max_tokens", "{:,}"),
        ("The lab's 7B gets {}: (80", "default", "memory.lanes_per_gpu", "{}"),
        ("gets 70: (80 − {}) GB", "default", "memory.models.0.params",
         lambda n: f"{2 * n / 1e9:.0f}"),  # its bf16 weights
        ("(80 − 14) GB / {} GB", "default", "memory.kv_bytes_per_token",
         lambda b: f"{b * 16384 / 1e9:.2f}"),  # one response of --max-tokens 16384
        ("Qwen2.5-1.5B gets {}, Qwen2.5-32B", "default", "memory.models.1.lanes_per_gpu", "{}"),
        ("Qwen2.5-32B only {}, Llama-3.1-8B", "default", "memory.models.3.lanes_per_gpu", "{}"),
        ("Llama-3.1-8B {} (128 KiB", "default", "memory.models.5.lanes_per_gpu", "{}"),
        ("({} KiB of KV cache per token", "default", "memory.models.5.kv_bytes_per_token",
         lambda b: f"{b / 1024:g}"),
        ("against the 7B's {}), and the 70B", "default", "memory.kv_bytes_per_token",
         lambda b: f"{b / 1024:g}"),
        ("its context is {} tokens", "default", "memory.models.8.context", "{:,}"),
    ],
    "docs/long-responses.md": [
        ("with no mismatch (`--length-kl 0`) every scheme then has a relative RMSE of {} at",
         "length_sweep_no_mismatch", "length_sweep.levels.0.schemes",
         lambda schemes: f"{min(min(v['rmse']) for v in schemes.values()):.2f} to "
                         f"{max(max(v['rmse']) for v in schemes.values()):.2f}"),
        ("at every T from 6 to {}, so what", "length_sweep_no_mismatch", "length_sweep.levels.0.T.-1",
         "{}"),
        ("and batches of {}, and grows T", "length_sweep", "length_sweep.batch_size", "{}"),
        ("The sweep runs two levels, `--length-kl {}` (scales", "length_sweep", "length_sweep.levels",
         lambda levels: " ".join(f"{level['kl']:g}" for level in levels)),
        ("(scales {}), each at", "length_sweep", "length_sweep.levels",
         lambda levels: " and ".join(f"{level['mismatch']:.4f}" for level in levels)),
        ('32 batches up to T = {}, then 16', "length_sweep",
         "length_sweep.levels.1.T.2", "{:,}"),
        ('| this toy, KL 0.001 (`mean_abs_log_ratio`) | {} |', "length_sweep",
         "length_sweep.levels.1.mean_abs_log_ratio", "{:.3g}"),
        ("| this toy, KL 0.16 (Part 3's scale) | {} |", "length_sweep",
         "length_sweep.levels.0.mean_abs_log_ratio", "{:.3g}"),
        ("`seq` falls below 6.4 of 64 between T × KL {} at the realistic KL", "length_sweep",
         "length_sweep.levels.1.collapse_exact.seq.ess_share", span),
        ("(between T = {} and", "length_sweep", "length_sweep.levels.1",
         lambda level: f"{level['T'][level['T_kl'].index(level['collapse_exact']['seq']['ess_share']['after'])]:,}"),
        ("and between {} at Part 3's KL, and below 2", "length_sweep",
         "length_sweep.levels.0.collapse_exact.seq.ess_share", span),
        ("and below 2 by T × KL {}. The sampled", "length_sweep", "length_sweep.levels",
         lambda levels: " and ".join(f"{level['collapse_exact']['seq']['ess_floor']['at']:.3g}"
                                     for level in levels[::-1])),
        ("stays above 6.4 longer ({} at T × KL 2.05", "length_sweep",
         "length_sweep.levels.1.schemes.seq.ess.4", "{:.3g}"),
        ("falls below 6.4 between T × KL {} at Part 3's KL", "length_sweep",
         "length_sweep.levels.0.collapse.seq_tis.ess_share", span),
        ("and between {} at the realistic KL, where", "length_sweep",
         "length_sweep.levels.1.collapse.seq_tis.ess_share", span),
        ("leave it unresolved ({})", "length_sweep", "length_sweep.levels.1.collapse.seq_tis.ess_share",
         lambda c: f"{c['value_at']:.3g} ± {c['se_at']:.2g}" if not c["resolved"] else "resolved"),
        ('rejects {} of the responses at T = 128 (T × KL 0.128)', "length_sweep",
         "length_sweep.levels.1.schemes.seq_mask.zero_weight_share.0", "{:.0%}"),
        ("wide: {} of the tokens at T = 1, under 0.5%", "length_sweep",
         "length_sweep.levels.0.schemes.geo_mask.zero_weight_share.0", "{:.0%}"),
        ("(relative RMSE {} against", "length_sweep", "length_sweep.levels.1.schemes.geo_mask.rmse.0",
         "{:.3f}"),
        ("against {} at T = 128 at the realistic KL", "length_sweep",
         "length_sweep.levels.1.schemes.none.rmse.0", "{:.3f}"),
        ("cosine {} against 0.89 at T = 3", "length_sweep",
         "length_sweep.levels.0.schemes.geo_mask.cosine.2", "{:.2f}"),
        ("against {} at T = 3 at Part 3's KL", "length_sweep",
         "length_sweep.levels.0.schemes.none.cosine.2", "{:.2f}"),
        ("`seq`'s cosine dips to {} at T × KL 4.16", "length_sweep",
         "length_sweep.levels.0.schemes.seq.cosine.5", "{:.2f}"),
        ('and is back at\n  {} at 8.16', "length_sweep",
         "length_sweep.levels.0.schemes.seq.cosine.6", "{:.2f}"),
        ('is too optimistic there ({} against 9.38 at T × KL 0.96)', "length_sweep",
         "length_sweep.levels.0.ess_limit.3", "{:.3g}"),
        ('(6.03 against {} at T × KL 0.96)', "length_sweep",
         "length_sweep.levels.0.ess_lognormal.3", "{:.3g}"),
        ('({} against\n  23 at 0.512, at the realistic KL)', "length_sweep",
         "length_sweep.levels.1.schemes.seq.ess.2", "{:.3g}"),
        ('(27.9 against\n  {} at 0.512, at the realistic KL)', "length_sweep",
         "length_sweep.levels.1.ess_lognormal.2", "{:.2g}"),
        ('falls far more slowly ({} at T × KL\n  2.05', "length_sweep",
         "length_sweep.levels.1.schemes.seq.ess.4", "{:.3g}"),
        ('where the prediction is {}), and', "length_sweep",
         "length_sweep.levels.1.ess_lognormal.4", "{:.3g}"),
        ('(T × KL 0.128), {} at T = 256', "length_sweep",
         "length_sweep.levels.1.schemes.seq_mask.zero_weight_share.1", "{:.0%}"),
        ('and {} at T = 1,024 (at KL 0.16', "length_sweep",
         "length_sweep.levels.1.schemes.seq_mask.zero_weight_share.3", "{:.0%}"),
        ('(at KL 0.16 it rejects {} at T = 6, though', "length_sweep",
         "length_sweep.levels.0.schemes.seq_mask.zero_weight_share.3", "{:.0%}"),
        ('still points the right way: cosine {}).', "length_sweep",
         "length_sweep.levels.0.schemes.seq_mask.cosine.3", "{:.2f}"),
        ('so it falls fastest ({} at T = 16,384)', "length_sweep",
         "length_sweep.levels.1.schemes.seq_mask.ess.7", "{:.3g}"),
        ('keep a cosine of at least {} at every T of both levels', "length_sweep",
         "length_sweep.levels", lambda levels: f"{min(min(l['schemes'][s]['cosine']) for l in levels for s in ('token', 'token_tis')) - 0.005:.2f}"),
        ('both levels, {} at T = 16,384 at the realistic KL', "length_sweep",
         "length_sweep.levels.1.schemes.token_tis.cosine.7", "{:.2f}"),
        ('and a mean ESS of\n  at least {} of 64', "length_sweep",
         "length_sweep.levels", lambda levels: lowest_token_ess(levels)),
        ('their mean ESS stays at {} or more', "length_sweep",
         "length_sweep.levels", lambda levels: lowest_token_ess(levels)),
        ('their relative RMSE passes 1 from T × KL {} on', "length_sweep",
         "length_sweep.levels.0", lambda level: first_above(level, 1.0)),
        ("The naive estimate's cosine falls to {}\n  at T = 16,384", "length_sweep",
         "length_sweep.levels.1.schemes.none.cosine.7", "{:.2f}"),
        ("`seq_tis`'s relative RMSE is {} against 0.358 for `token_tis`", "length_sweep",
         "length_sweep.levels.1.schemes.seq_tis.rmse.4", "{:.3f}"),
        ('against {} for `token_tis` at T × KL 2.05', "length_sweep",
         "length_sweep.levels.1.schemes.token_tis.rmse.4", "{:.3f}"),
        ('(T = 2,048) and\n  {} against 0.345 at 4.1', "length_sweep",
         "length_sweep.levels.1.schemes.seq_tis.rmse.5", "{:.3f}"),
        ('0.828 against {} at 4.1', "length_sweep",
         "length_sweep.levels.1.schemes.token_tis.rmse.5", "{:.3f}"),
        ('where the batch ESS is still above {}.', "length_sweep",
         "length_sweep.levels.1.schemes.seq.ess.2", lambda e: f'{10 * math.floor(e / 10):.0f}'),
        ('even though it rejects {} of the responses', "length_sweep",
         "length_sweep.levels.0.schemes.seq_mask.zero_weight_share.3", "{:.0%}"),
        ('masking rejects {} to 9% of tokens', "length_sweep",
         "length_sweep.levels.0.schemes.token_mask.zero_weight_share.0", "{:.0%}"),
        ("({} from T = 26 on)", "length_sweep",
         "length_sweep.levels.0.schemes.token_mask.zero_weight_share.5", "{:.0%}"),
        ('the right way (cosine {} at T = 102', "length_sweep",
         "length_sweep.levels.0.schemes.token_mask.cosine.7", "{:.2f}"),
        ('against {} for `token`).', "length_sweep",
         "length_sweep.levels.0.schemes.token.cosine.7", "{:.2f}"),
        ("at T × KL 8.2 only {} of `seq_tis`'s weights", "length_sweep",
         "length_sweep.levels.1.schemes.seq_tis.zero_weight_share.6", "{:.0%}"),
        ("at the realistic KL (± {}: two batches)", "length_sweep",
         "length_sweep.levels.1.schemes.seq_tis.ess_stderr.6", "{:.2g}"),
        ("(± 2.5: {} batches)", "length_sweep", "length_sweep.levels.1.n_batches.6",
         lambda n: {2: "two", 4: "four"}.get(n, str(n))),
        ('yet its mean\nESS is {} of 64', "length_sweep",
         "length_sweep.levels.1.schemes.seq_tis.ess.6", "{:.0f}"),
        ("at mismatch 0.6 ({}, against 0.116", "default", "masking.schemes.seq_mask.rmse.6", "{:.3f}"),
        ("against {} for `seq_tis` and", "default", "mismatch.schemes.seq_tis.rmse.6", "{:.3f}"),
        ("and {} for `seq`), even", "default", "mismatch.schemes.seq.rmse.6", "{:.3f}"),
        ("masking whole responses whose ratio leaves [{}, 2]", "default", "masking.low", "{:g}"),
        ("whose ratio leaves [0.5, {}]", "default", "masking.high", "{:g}"),
    ],
    "docs/draws.md": [
        ("Its RMSE falls from {} at mismatch 0", "default", "mismatch.schemes.seq_tis.rmse.0",
         "{:.3f}"),
        ("at mismatch 0 to {} at 1.0", "default", "mismatch.schemes.seq_tis.rmse.10", "{:.3f}"),
        ("its variance falls from {}", "default", "mismatch.schemes.seq_tis.variance.0",
         "{:.4f}"),
        ("its variance falls from 0.0137 to {}", "default",
         "mismatch.schemes.seq_tis.variance.10", "{:.4f}"),
        ("while its bias grows only to {}", "default", "mismatch.schemes.seq_tis.bias.10",
         "{:.3f}"),
        ("`python run.py --c-sweep` (mismatch {})", "c_sweep", "c_sweep.mismatch", "{}"),
        ("`token_tis` falls from {} at C = 1", "c_sweep", "c_sweep.bias.0", "{:.3f}"),
        ("to {} from C = 6 on", "c_sweep", "c_sweep.bias.7", "{:.3f}"),
        ("to 0.069 from C = {} on", "c_sweep", "c_sweep.C.7", "{:g}"),
        ("({} at C = 1.5,", "c_sweep", "c_sweep.bias.2", "{:.4f}"),
        ("{} at 2.5,", "c_sweep", "c_sweep.bias.4", "{:.4f}"),
        ("{} at 3.0)", "c_sweep", "c_sweep.bias.5", "{:.4f}"),
    ],
    "docs/gpu-model.md": [
        gpu_quote("less the 200-token prompt (AREAL_V03) | {} tokens", "areal-1.5b", "mean_len",
                  "{:,.0f}"),
        gpu_quote("ASSUMED to carry over to v0.3 | {} tokens", "areal-7b", "mean_len", "{:,.0f}"),
        gpu_quote("at the ASSUMED efficiency 0.40 | {} tokens", "verl-7b", "mean_len", "{:,.0f}"),
        gpu_quote("with the mean that gives σ = {} (median", "areal-1.5b", "sigma", "{:.2f}"),
        gpu_quote("(median {} tokens) for", "areal-1.5b", "median_len", "{:,.0f}"),
        gpu_quote("1.5B, {} for 7B.", "areal-7b", "sigma", "{:.2f}"),
        gpu_quote("given back by the simulation ({} tokens a sequence", "areal-1.5b", "set.0",
                  lambda r: f"{r[1]:,.1f}"),
        gpu_quote("tokens a sequence against {};", "areal-1.5b", "set.0", lambda r: f"{r[2]:,.1f}"),
        gpu_quote("9,275.4; {} s against", "verl-7b", "set.0", lambda r: f"{r[1]:.2f}"),
        ("**Fig. 7, k ≥ 1: {} of 6 within 25%**", "gpu_model", "gpu_model",
         lambda g: str(sum(0.75 <= r[3] <= 1.25 for r in g["areal-1.5b"]["held_out"][4:]))),
        ("({} too high). The shape", "gpu_model", "gpu_model",
         lambda g: "{:.2f}× to {:.2f}×".format(min(r[3] for r in g["areal-1.5b"]["held_out"][4:]),
                                              max(r[3] for r in g["areal-1.5b"]["held_out"][4:]))),
        gpu_quote("5 passes at the ASSUMED 0.40: {}k tokens/s)", "areal-1.5b", "by_k.-1.throughput",
                  lambda v: f"{v / 1e3:.0f}"),
        ("(`--gpu-sweep`: {} s a step with the cap,", "gpu_model", "gpu_sweep.rows.0.async_seconds",
         "{:.1f}"),
        ("s a step with the cap, {} s without)", "gpu_model", "gpu_sweep.rows.7.async_seconds",
         "{:.1f}"),
        ("0.76 of its k = 2 point where the model's is {}.", "gpu_model", "gpu_model",
         lambda g: f"{g['areal-1.5b']['by_k'][0]['throughput'] / g['areal-1.5b']['by_k'][1]['throughput']:.2f}"),
        ("hours: a residual of {} s a step**", "gpu_model", "gpu_model",
         lambda g: f"{41.0 * 3600 / 250 - g['areal-1.5b']['sync']['seconds']:.0f}"),
        gpu_quote("a step** ({} s predicted, 590.4 s", "areal-1.5b", "sync.seconds", "{:.1f}"),
        gpu_quote("predicted step, generation is {} s", "areal-1.5b", "sync.generation_seconds",
                  "{:.0f}"),
        gpu_quote("s and the update {} s.", "areal-1.5b", "sync.train_seconds", "{:.0f}"),
        ("AReaL 7B: hours within 1.5× (met: {})", "gpu_model", "gpu_model",
         lambda g: f"{g['areal-7b']['ratio']['sync']:.2f} and {g['areal-7b']['ratio']['asynchronous']:.2f}"),
        gpu_quote("speedup {}× against 2.27×", "areal-7b", "speedup", "{:.2f}"),
        gpu_quote("2.27×,\n  {} of it", "areal-7b", "ratio.speedup", "{:.3f}"),
        ("- **verl: {} of its 17 held-out step", "gpu_model", "gpu_model",
         lambda g: held_out_within(g, "verl-7b", 2 / 3, 1.5, [" s"])),
        gpu_quote("speedup missed ({}× against 2.35×)", "verl-7b", "speedup", "{:.2f}"),
        gpu_quote("at the set mean of {} tokens", "verl-7b", "mean_len", "{:,.0f}"),
        gpu_quote("1.87× (1.5B) and {}× (7B) faster", "areal-7b", "bound",
                  lambda b: f"{b['sync_hours'] / b['async_hours']:.2f}"),
        gpu_quote("perfect pipelines the asynchronous runs would be\n{}× (1.5B)", "areal-1.5b",
                  "bound", lambda b: f"{b['sync_hours'] / b['async_hours']:.2f}"),
        gpu_quote("no\nfaster than its colocated run ({}×)", "verl-7b", "bound",
                  lambda b: f"{b['sync_hours'] / b['async_hours']:.2f}"),
        ("Without the overhead a synchronous step takes {} s", "gpu_model",
         "gpu_sweep.rows.1.sync_seconds", "{:.1f}"),
        ("instead of {} s, while the asynchronous run", "gpu_model",
         "gpu_sweep.rows.0.sync_seconds", "{:.1f}"),
        ("Part 2's lane model gives {}× at 1 lane per GPU", "equal_hardware", "equal_hardware.speedup",
         "{:.2f}"),
        ("leaves\n  {} slots per engine", "gpu_model", "gpu_sweep.rows.3.slots", "{}"),
        ("cuts the\n  gain of asynchrony to {}×.", "gpu_model", "gpu_sweep.rows.2.speedup", "{:.2f}"),
        ("the same responses give {}× instead of", "gpu_model", "gpu_sweep.rows.4.speedup", "{:.2f}"),
        ("× instead of {}×, with lags", "gpu_model", "gpu_sweep.rows.0.speedup", "{:.2f}"),
        ("lags of up to\n  {} versions instead of", "gpu_model", "gpu_sweep.rows.4.max_lag", "{}"),
        ("raises the\n  speedup to {}×, halving", "gpu_model", "gpu_sweep.rows.5.speedup", "{:.2f}"),
        ("halving it lowers it to {}×.", "gpu_model", "gpu_sweep.rows.6.speedup", "{:.2f}"),
        ("at k = 1 from {} to", "gpu_model", "gpu_sweep.lanes.rows.0.max_lag.1", "{}"),
        ("from 12 to {}.", "gpu_model", "gpu_sweep.lanes.rows.2.max_lag.1", "{}"),
        gpu_quote("the head lag averages {} versions per group", "areal-1.5b",
                  "asynchronous.mean_lag", "{:.2f}"),
        gpu_quote("versions per group and {} per token", "areal-1.5b",
                  "asynchronous.head_token_lag", "{:.2f}"),
        gpu_quote("lags by {} on average", "areal-1.5b", "asynchronous.token_lag", "{:.2f}"),
        gpu_quote("an update ends: head lag\n{} per group", "verl-7b", "asynchronous.mean_lag",
                  "{:.2f}"),
        gpu_quote("per group and {} per token, token lag", "verl-7b",
                  "asynchronous.head_token_lag", "{:.2f}"),
        gpu_quote("per token, token lag {}.", "verl-7b", "asynchronous.token_lag", "{:.2f}"),
        gpu_quote("printed for comparison ({} for areal-1.5b)", "areal-1.5b", "sync.tail_share",
                  "{:.0%}"),
    ],
    "docs/staleness.md": [
        # the learning curves (--learning-curves) and the step grid (--step-grid)
        ("the learning curves simulate {} updates (15.99", "learning_curves",
         "learning_curves.horizon", "{}"),
        ("simulate 300 updates ({} at k = 1, 16 lanes)", "learning_curves", "learning_curves",
         lambda c: lc_setting_value(c, "n_lanes", 1, "throughput", "{:.2f}")),
        ("the one-step tables below 200 ({}).", "staleness", "staleness.rows.1.throughput",
         "{:.2f}"),
        ("k = 2, 4 and 8 give one and the same trace (throughput {}, mean lag", "learning_curves",
         "learning_curves", lambda c: lc_setting_value(c, "n_lanes", 2, "throughput", "{:.2f}")),
        ("(throughput 16.12, mean lag {}), and k = 1", "learning_curves", "learning_curves",
         lambda c: lc_setting_value(c, "n_lanes", 2, "mean_lag", "{:.2f}")),
        ("k = 1 has {} times the throughput of k = 0", "learning_curves", "learning_curves",
         lambda c: f"{float(lc_setting_value(c, 'n_lanes', 1, 'throughput', '{}')) / float(lc_setting_value(c, 'n_lanes', 0, 'throughput', '{}')):.1f}"),
        ("the throughput of k = 0 ({} against", "learning_curves", "learning_curves",
         lambda c: lc_setting_value(c, "n_lanes", 1, "throughput", "{:.2f}")),
        ("(15.99 against {}).", "learning_curves", "learning_curves",
         lambda c: lc_setting_value(c, "n_lanes", 0, "throughput", "{:.2f}")),
        ("k = 2, 4 and 8 run at one throughput ({}) with mean lags", "learning_curves",
         "learning_curves", lambda c: lc_setting_value(c, "trainer_lanes", 2, "throughput",
                                                       "{:.2f}")),
        ("with mean lags {}. The difference", "learning_curves", "learning_curves",
         lambda c: ", ".join(lc_setting_value(c, "trainer_lanes", k, "mean_lag", "{:.2f}")
                             for k in (2, 4)) + " and "
         + lc_setting_value(c, "trainer_lanes", 8, "mean_lag", "{:.2f}")),
        ("moves the policy by exactly {} nats per token (KL", "learning_curves",
         "learning_curves.equal_kl", "{:g}"),
        ("the one-step table's k = 0 row, {})", "staleness", "staleness.rows.0.schemes.none",
         lambda v: f"{v['update_kl']:.4f} ± {v['update_kl_se']:.4f}"),
        ("the common step (1×, η = {} for every update", "learning_curves",
         "learning_curves.step", "{:.3f}"),
        ("**Asynchrony buys a factor of {}**", "learning_curves", "learning_curves",
         lc_async_factor),
        ("J ≥ 0.9 in {} time units uncorrected", *lc("generation_bound", 1, "none", 0.0, "equal_kl")),
        ("uncorrected, {} with `token_tis` and", *lc("generation_bound", 1, "token_tis", 0.0, "equal_kl")),
        ("with `token_tis` and {} with `seq_tis`, against", *lc("generation_bound", 1, "seq_tis", 0.0, "equal_kl")),
        ("against {} synchronously (the 16-lane", *lc("generation_bound", 0, "none", 0.0, "equal_kl")),
        ("costs {} time units uncorrected**", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "per_version", "none")),
        ("paired over the seeds: {} at k = 2,", *lc("trainer_bound", 2, "none", 0.0, "equal_kl",
                                                   fmt=lambda r: f"{r['mean']:.2f}")),
        ("28.36 at k = 2, {} at k = 8)", *lc("trainer_bound", 8, "none", 0.0, "equal_kl",
                                             fmt=lambda r: f"{r['mean']:.2f}")),
        ("**{} with `seq_tis` and", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "per_version", "seq_tis")),
        ("with `seq_tis` and {} with `token_tis`**", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "per_version", "token_tis")),
        ("with `token_tis`** ({} to", *lc("trainer_bound", 2, "token_tis", 0.0, "equal_kl",
                                         fmt=lambda r: f"{r['mean']:.2f}")),
        ("(10.79 to {}).", *lc("trainer_bound", 8, "token_tis", 0.0, "equal_kl",
                               fmt=lambda r: f"{r['mean']:.2f}")),
        ("**`token_tis` buys back {} of it**", "learning_curves", "learning_curves",
         lambda c: lc_recovered_share(c, "token_tis")),
        ("of it** ({} time units per version", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "recovered", "token_tis")),
        ("per version of the uncorrected {}), `seq_tis`", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "per_version", "none").split(" ")[0]),
        ("uncorrected 5.73), `seq_tis` {} (", "learning_curves", "learning_curves",
         lambda c: lc_recovered_share(c, "seq_tis")),
        ("`seq_tis` 51% ({}).", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "recovered", "seq_tis")),
        ("k = 1 it saves {} uncorrected and", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "drop", "trainer_lanes", "none")),
        ("uncorrected and {} with `seq_tis`, and costs", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "drop", "trainer_lanes", "seq_tis")),
        ("and costs `token_tis` {}; at 16 lanes", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "drop", "trainer_lanes", "token_tis")),
        ("at 16 lanes it costs `token_tis` {} and", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "drop", "n_lanes", "token_tis")),
        ("(one version costs it {}; asynchrony", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.6, "per_version", "token_tis")),
        ("asynchrony gives {} at k = 1 against", *lc("generation_bound", 1, "token_tis", 0.6, "equal_kl")),
        ("at k = 1 against {}), and the other", *lc("generation_bound", 0, "token_tis", 0.6, "equal_kl")),
        ("stuck, at a J of {} on average", "learning_curves", "learning_curves",
         lambda c: lc_range(c["trainer_bound"] + c["generation_bound"], lambda r: (
             r["scheme"], r["mismatch"], r["step"]) == ("none", 0.6, "equal_kl"), "stalled_J", "{:.2f}")),
        ("on average ({} of the 200, in every cell", "learning_curves", "learning_curves",
         lambda c: lc_range([dict(r, short=r["seeds"] - r["reached"]) for r in
                             c["trainer_bound"] + c["generation_bound"]], lambda r: (
             r["scheme"], r["mismatch"], r["step"]) == ("none", 0.6, "equal_kl"), "short", "{}")),
        ("larger k ({} of 200 arrive at k = 8)", *lc("trainer_bound", 8, "seq_tis", 0.6, "equal_kl",
                                                       fmt=lambda r: str(r["reached"]))),
        ("one version costs {} uncorrected, ", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "1x", 0.0, "per_version", "none")),
        ("uncorrected, {} with `seq_tis` (which", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "1x", 0.0, "per_version", "seq_tis")),
        ("buys back nothing: {}) and", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "1x", 0.0, "recovered", "seq_tis")),
        ("and {} with `token_tis`. At one η", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "1x", 0.0, "per_version", "token_tis")),
        ("corrected ones: {} nats per token on", "learning_curves", "learning_curves.trainer_bound",
         lambda rows: lc_range(rows, lambda r: (r["scheme"], r["mismatch"], r["step"], r["drop_stale"])
                               == ("none", 0.0, "1x", False) and r["k"] > 0, "kl_per_update", "{:.2f}")),
        ("against {} for `token_tis` (the KL", "learning_curves", "learning_curves.trainer_bound",
         lambda rows: lc_range(rows, lambda r: (r["scheme"], r["mismatch"], r["step"], r["drop_stale"])
                               == ("token_tis", 0.0, "1x", False) and r["k"] > 0, "kl_per_update", "{:.3f}")),
        ("(the one-step table: {} against", "staleness", "staleness.rows.1.schemes.none.update_kl",
         "{:.3f}"),
        ("0.014 against {} at k = 1)", "staleness", "staleness.rows.1.schemes.token_tis.update_kl",
         "{:.3f}"),
        ("the uncorrected scheme's best step is {} the common one", "step_grid",
         "step_grid.trainer_bound", lambda rows: lc_range(
             rows, lambda r: r["scheme"] == "none" and r["k"] > 0 and not r["drop_stale"], "scale",
             "{:g}×")),
        ("(2.60 ± 0.24 against {} at k = 8 without", *lc("trainer_bound", 8, "token_tis", 0.0, None,
                                                        snapshot="step_grid")),
        ("({} against 4.58", *lc("trainer_bound", 8, "none", 0.0, None, snapshot="step_grid")),
        ("without mismatch, {} against", *lc("trainer_bound", 8, "none", 0.6, None, snapshot="step_grid")),
        ("2.58 ± 0.17 against {} with it)", *lc("trainer_bound", 8, "token_tis", 0.6, None,
                                                  snapshot="step_grid")),
        ("(in a check at {}×, 64 lanes", "step_grid", "step_grid.scales.-1", "{:g}"),
        # the learning curves' set-up
        ("runs once (σ = {}, 300", "learning_curves", "learning_curves.sigma", "{}"),
        ("(σ = 1.25, {}   updates)", "learning_curves", "learning_curves.horizon", "{}"),
        ("Version 0 is `THETA` (J = {})", "learning_curves", "learning_curves.J_start", "{:.3f}"),
        ("KL(π_θ ‖ π_θ+ηĝ) = {} nats per token", "learning_curves", "learning_curves.equal_kl",
         "{:g}"),
        ("1×: η = {} for every update, the step", "learning_curves", "learning_curves.step",
         "{:.3f}"),
        ("`THETA` by {} nats per token along the exact gradient", "learning_curves",
         "learning_curves.step_kl", "{:g}"),
        ("**The target**, fixed before running: J ≥ {}, where", "learning_curves",
         "learning_curves.target", "{:g}"),
        ("or for the {} updates simulated", "learning_curves", "learning_curves.horizon", "{}"),
        ("- **Seeds.** {} seeds vary only", "learning_curves", "learning_curves.n_seeds", "{}"),
        ("a larger one on both sides, here up to {}; 50", "step_grid", "step_grid.scales.-1", "{:g}"),
        ("up to 256; {} seeds, the first", "step_grid", "step_grid.n_seeds", "{}"),
        ("the first 50 of the 200, up to {} updates", "step_grid", "step_grid.horizon", "{}"),
        ("(`--step-grid`, {} seeds) the headline", "step_grid", "step_grid.n_seeds", "{}"),
        # the one-step section's words on dropping, and AReaL's
        ("dropping stale comes first for the uncorrected scheme ({}× against", "staleness",
         "staleness.rows", lambda rows: exact_speedup(rows, 5, "none")),
        ("against {}× keeping them)", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "none")),
        ("corrected ones ({}× and", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 5, "token_tis")),
        ("3.42× and {}× against", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 5, "seq_tis")),
        ("against {}× and 3.74×)", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "token_tis")),
        ("3.63× and {}×). The", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "seq_tis")),
        ("cost of dropping   ({} time units)", "learning_curves", "learning_curves",
         lambda c: lc_cost_value(c, "equal_kl", 0.0, "drop", "n_lanes", "token_tis")),
        ("grows steadily with k ({} at k = 2 to", *lc("trainer_bound", 2, "none", 0.0, "equal_kl")),
        ("at k = 2 to {} at k = 8 at equal", *lc("trainer_bound", 8, "none", 0.0, "equal_kl")),
        ("`token_tis`'s barely ({} to", *lc("trainer_bound", 2, "token_tis", 0.0, "equal_kl")),
        ("to {}), the same direction", *lc("trainer_bound", 8, "token_tis", 0.0, "equal_kl")),
        ("reach J ≥ 0.9 in {} of the synchronous time", "learning_curves", "learning_curves",
         lc_shares),
        # one update
        ("The default is {} nats per token", "staleness", "staleness.kl", "{:g}"),
        ("That gives η = {}.", "staleness", "staleness.step", "{:.3f}"),
        ("are then {} nats per token from v", "staleness", "staleness.lag_kl",
         lambda kl: ", ".join(f"{x:.3f}" for x in kl[1:4]) + f" and {kl[4]:.3f}"),
        ("moves the policy by {} nats per token on average", "staleness",
         "staleness.rows.0.schemes.none",
         lambda v: f"{v['update_kl']:.4f} ± {v['update_kl_se']:.4f}"),
        ("(+{} of", "staleness", "staleness.rows.0.schemes.none.noise_term", "{:.4f}"),
        ("of {} at k = 0)", "staleness", "staleness.rows.0.schemes.none.gain_per_update",
         "{:.4f}"),
        ("Monte Carlo over {} batches per cell", "staleness", "staleness.n_batches", "{:,}"),
        ("the second-order gain is {} above the exact one", "staleness", "staleness.rows",
         overstatement),
        ("an uncorrected update gains {} of an on-policy one", "staleness", "staleness.rows",
         lambda rows: exact_share(rows, 1, "none")),
        ("(exactly; its bias is {}, its cosine", "staleness", "staleness.rows.1.schemes.none.bias",
         "{:.3f}"),
        ("its cosine {}), but k = 1", "staleness", "staleness.rows.1.schemes.none.cosine",
         "{:.3f}"),
        ("but k = 1 makes {}× as many updates", "default", "scheduling.throughput_gain.1",
         "{:.2f}"),
        ("so it gains {}× the synchronous run's per time unit", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "none")),
        ("Corrected, {}× (`token_tis`)", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "token_tis")),
        ("(`token_tis`) and {}× (`seq_tis`)", "staleness", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "seq_tis")),
        ("RMSE than on-policy ones ({} at k = 1", "staleness", "staleness.rows.1.schemes.none.rmse",
         "{:.3f}"),
        ("at k = 1 against {}): older", "staleness", "staleness.rows.0.schemes.none.rmse", "{:.3f}"),
        ("still costs them {} of each update", "staleness", "staleness.rows",
         lambda rows: f"{1 - exact_ratio(rows, 1, 'none'):.0%}"),
        ("With `--staleness-kl {}` (ten", "staleness_kl_0.1", "staleness.kl", "{:g}"),
        ("per update, η = {}) the second-order", "staleness_kl_0.1", "staleness.step", "{:.2f}"),
        ("gain of a synchronous update is {}, the exact", "staleness_kl_0.1",
         "staleness.rows.0.schemes.none.gain_per_update", "{:.3f}"),
        ("the exact one {}:", "staleness_kl_0.1", "staleness.rows.0.schemes.none",
         lambda v: f"{v['exact_gain']:.3f} ± {v['exact_gain_se']:.3f}"),
        ("{} of the 18 cells are marked *", "staleness_kl_0.1", "staleness.rows",
         lambda rows: str(sum(v["second_order_off"] for row in rows
                              for v in row["schemes"].values()))),
        ("the on-policy one ({} nats per token, against", "staleness_kl_0.1",
         "staleness.rows.0.schemes.none.update_kl", "{:.3f}"),
        ("against {} for an uncorrected update at k = 1", "staleness_kl_0.1",
         "staleness.rows.1.schemes.none.update_kl", "{:.3f}"),
        ("it wins everywhere: {}× at k = 1", "staleness_kl_0.1", "staleness.rows",
         lambda rows: exact_speedup(rows, 1, "none")),
        ("at k = 1 and {}× from k = 2 on", "staleness_kl_0.1", "staleness.rows",
         lambda rows: exact_speedup(rows, 2, "none")),
        ("(`--staleness-mismatch {}`) the uncorrected", "staleness_mismatch_0.6",
         "staleness.mismatch", "{}"),
        ("points worse (cosine {} at k = 0", "staleness_mismatch_0.6",
         "staleness.rows.0.schemes.none.cosine", "{:.3f}"),
        ("against {} for `token_tis` and", "staleness_mismatch_0.6",
         "staleness.rows.0.schemes.token_tis.cosine", "{:.3f}"),
        ("and {} for `seq_tis`) yet", "staleness_mismatch_0.6",
         "staleness.rows.0.schemes.seq_tis.cosine", "{:.3f}"),
        ("one-step gain ({} at k = 0 against", "staleness_mismatch_0.6",
         "staleness.rows.0.schemes.none.exact_gain", "{:.4f}"),
        ("at k = 0 against {}):", "staleness_mismatch_0.6", "staleness.rows.0.schemes",
         lambda v: f"{v['token_tis']['exact_gain']:.4f} and {v['seq_tis']['exact_gain']:.4f}"),
        ("the lab's `token_tis` keeps {} of each update against", "staleness", "staleness.rows",
         lambda rows: exact_share(rows, 4, "token_tis")),
        ("of each update against {} uncorrected)", "staleness", "staleness.rows",
         lambda rows: exact_share(rows, 4, "none")),
    ],
}

# Table rows: (the row, with {} for each number; one (snapshot, path, format) per {})
WORKS = [1, 4, 8, 16, 32, 64, 128]  # the --train-work columns of the equal-hardware table
LENGTH_COSINES = ["none", "token_tis", "seq_tis", "seq_mask", "geo_mask"]
COLLAPSE_ROWS = {"seq": "`seq`", "seq_tis": "`seq_tis`",
                 "seq_mask": "sequence mask [0.5, 2]", "geo_mask": "geometric mask [0.5, 2]"}


def length_row(level, i):
    """Row i of level `level` of the table of docs/long-responses.md."""
    path = f"length_sweep.levels.{level}"
    cells = [("length_sweep", f"{path}.kl", "{:g}"), ("length_sweep", f"{path}.T.{i}", "{:,}"),
             ("length_sweep", f"{path}.T_kl.{i}", "{:.3g}")]
    cells += [("length_sweep", f"{path}.schemes.{s}.cosine.{i}", "{:.2f}") for s in LENGTH_COSINES]
    cells += [("length_sweep", f"{path}.schemes.{s}.zero_weight_share.{i}", zero_share)
              for s in ("seq_tis", "seq_mask")]
    cells += [("length_sweep", f"{path}.schemes.{s}.ess.{i}", "{:.3g}")
              for s in ("seq", "seq_tis", "seq_mask")]
    cells += [("length_sweep", f"{path}.{key}.{i}", "{:.3g}") for key in ("ess_lognormal",
                                                                          "ess_limit")]
    return ("| {} | {} | {} | {} / {} / {} / {} / {} | {} / {} | {} / {} / {} | {} / {} |",
            cells)


def length_rmse_row(level, i):
    """Row i of level `level` of docs/long-responses.md's second table: relative RMSE (none,
    token_tis, seq_tis, geo mask), cosine (seq, token, token mask), weights below 1e-6 (token
    mask, seq mask, geo mask), mean ESS (token, token_tis)."""
    path = f"length_sweep.levels.{level}"
    cells = [("length_sweep", f"{path}.kl", "{:g}"), ("length_sweep", f"{path}.T.{i}", "{:,}")]
    cells += [("length_sweep", f"{path}.schemes.{s}.rmse.{i}", "{:.3f}")
              for s in ("none", "token_tis", "seq_tis", "geo_mask")]
    cells += [("length_sweep", f"{path}.schemes.{s}.cosine.{i}", "{:.2f}")
              for s in ("seq", "token", "token_mask")]
    cells += [("length_sweep", f"{path}.schemes.{s}.zero_weight_share.{i}", zero_share)
              for s in ("token_mask", "seq_mask", "geo_mask")]
    cells += [("length_sweep", f"{path}.schemes.{s}.ess.{i}", "{:.3g}") for s in ("token", "token_tis")]
    return "| {} | {} | {} / {} / {} / {} | {} / {} / {} | {} / {} / {} | {} / {} |", cells


def collapse_row(scheme, level):
    """A row of the collapse table: the scheme, the level's KL and its three crossings; seq's
    ESS crossings from the exact large-batch ESS, the others' with their ends' mean ESS."""
    path = f"length_sweep.levels.{level}"
    exact = scheme == "seq"
    ess = (f"{path}.collapse_exact.seq" if exact else f"{path}.collapse.{scheme}")
    return (f"| {COLLAPSE_ROWS[scheme]} | {{}} | {{}} | {{}} | {{}} |",
            [("length_sweep", f"{path}.kl", "{:g}")]
            + [("length_sweep", f"{ess}.{key}", collapse_cell) for key in ("ess_share", "ess_floor")]
            + [("length_sweep", f"{path}.collapse.{scheme}.cosine", collapse_cell)])


def collapse_cell(c):
    """A crossing as the table says it: "2.05 to 4.1", "≤ 0.16 (the first T)", "none up to
    16.4"; a sampled ESS crossing with the mean ESS ± SE at its ends, "(unresolved)" if an
    end lies within 2 SE of the level."""
    if c["at"] is None:
        return f"none up to {c['after']:.3g}"
    text = (f"≤ {c['at']:.3g} (the first T)" if c["after"] is None
            else f"{c['after']:.3g} to {c['at']:.3g}")
    if "resolved" in c and c["after"] is not None:
        text += (f" ({c['value_after']:.3g} ± {c['se_after']:.2g} to {c['value_at']:.3g} ± "
                 f"{c['se_at']:.2g}" + ("" if c["resolved"] else ", unresolved") + ")")
    return text


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
    return "0" if share == 0 else f"{share:.0%}"


def equal_hardware_snapshot(work):
    return "equal_hardware" if work == 16 else f"equal_hardware_work_{work}"


# Per doc: its table rows that quote a run
TABLE_ROWS = {
    "docs/long-responses.md": [
        # the two levels of the default run: 8 lengths each (lab.experiments.length_grid)
        *[length_row(level, i) for level in (0, 1) for i in range(8)],
        *[collapse_row(scheme, level) for scheme in COLLAPSE_ROWS for level in (0, 1)],
        *[length_rmse_row(level, i) for level in (0, 1) for i in range(8)],
    ],
    "docs/gpu-model.md": [
        *[compared_row(name, i) for name, n in COMPARED.items() for i in range(n)],
        *[walk_row(name, i, label) for name, labels in WALK_LABELS.items()
          for i, label in enumerate(labels)],
        *[gpu_sweep_row(i, label) for i, label in enumerate(
            ("as walked down", "no per-step overhead", "S = 16", "S reserved at the cap",
             "groups of 1", "cap × 2", "cap / 2", "no concurrency cap"))],
        *[lane_row(i, label) for i, label in enumerate(
            ("one by one", "groups of 8 (B = 4 groups)", "one by one, cap at 4× the mean"))],
        *[("| " + label + " |" + " {} |" * 6,
           [("gpu_model", "gpu_sweep.memgap", lambda rows, i=i, key=key, fmt=fmt:
             fmt.format(rows[i][key])) for i in range(6)])
          for key, label, fmt in (("step_ms", "step, ms (measured)", "{:.2f}"),
                                  ("bytes_gb", "read a step, GB", "{:.2f}"),
                                  ("delivered_tb_s", "delivered, TB/s", "{:.2f}"),
                                  ("share", "DRAM read share (MEMGAP's chart)", "{:.1%}"),
                                  ("implied_peak_tb_s", "implied peak, TB/s", "{:.2f}"))],
    ],
    "docs/staleness.md": [
        *[lc_table_row(setup, m, k, drop) for setup in ("generation_bound", "trainer_bound")
          for m in (0.0, 0.6) for k, drop in LC_SETTINGS],
        *[grid_table_row(m, k, drop) for m in (0.0, 0.6) for k, drop in LC_SETTINGS],
        *[version_row(step, m) for step in ("equal_kl", "1x") for m in (0.0, 0.6)],
        *[async_drop_row(step, m) for step in ("equal_kl", "1x") for m in (0.0, 0.6)],
        *[staleness_row(i) for i in range(6)],
        *[gain_row("staleness", i) for i in (0, 1, 2, 5)],
        *[time_row("staleness", i) for i in (0, 1, 2, 5)],
        *[kl_row(i) for i in (1, 2, 5)],
        ("| lab, exact gain per update vs k = 0, none |" + " {} |" * 5,
         [("staleness", "staleness.rows", lambda rows, i=i: exact_share(rows, i, "none"))
          for i in range(5)]),
        ("| lab, exact gain per update vs k = 0, `token_tis` |" + " {} |" * 5,
         [("staleness", "staleness.rows", lambda rows, i=i: exact_share(rows, i, "token_tis"))
          for i in range(5)]),
    ],
    "docs/real-systems.md": [
        ("| this lab, GPU model, each run's own split, walked down from the bound | {}× "
         "(areal-1.5b), {}× (areal-7b), {}× (verl-7b); as perfect pipelines (the bound) {}×, "
         "{}×, {}× |", [gpu(name, "speedup", "{:.2f}") for name in ("areal-1.5b", "areal-7b",
                                                                   "verl-7b")]
         + [gpu(name, "bound", lambda b: f"{b['sync_hours'] / b['async_hours']:.2f}")
            for name in ("areal-1.5b", "areal-7b", "verl-7b")]),
        ("| `--train-work` |" + " {} |" * len(WORKS),
         [(equal_hardware_snapshot(w), "equal_hardware.train_work", "{:g}") for w in WORKS]),
        ("| best split (generate / train) |" + " {} |" * len(WORKS),
         [(equal_hardware_snapshot(w), "equal_hardware",
           lambda e: f"{e['best_gen_gpus']} / {e['gpus'] - e['best_gen_gpus']}") for w in WORKS]),
        ("| speedup at equal hardware |" + " {}× |" * len(WORKS),
         [(equal_hardware_snapshot(w), "equal_hardware.speedup", "{:.2f}") for w in WORKS]),
    ],
}


def value_at(results, path):
    """results["a"]["b"][2] for path "a.b.2" (negative indexes count from the end)."""
    for key in path.split("."):
        results = results[int(key)] if re.fullmatch(r"-?\d+", key) else results[key]
    return results


def fresh_run(name, tmp):
    out = Path(tmp, f"{name}.png")
    flags = RUNS[name]
    subprocess.run([sys.executable, "run.py", *flags, "--out", str(out)], cwd=ROOT, check=True,
                   env=dict(os.environ, RL_SOLUTIONS="1"), stdout=subprocess.DEVNULL)
    return json.loads(out.with_suffix(".json").read_text())


def differences(fresh, snapshot, path="", found=None):
    """The places where `fresh` differs from `snapshot` beyond the tolerance."""
    found = [] if found is None else found
    if isinstance(snapshot, dict) and isinstance(fresh, dict):
        if fresh.keys() != snapshot.keys():
            found.append(f"{path or 'top'}: keys {sorted(fresh)} != {sorted(snapshot)}")
        for key in snapshot.keys() & fresh.keys():
            differences(fresh[key], snapshot[key], f"{path}.{key}".lstrip("."), found)
    elif isinstance(snapshot, list) and isinstance(fresh, list) and len(fresh) == len(snapshot):
        for i, (a, b) in enumerate(zip(fresh, snapshot)):
            differences(a, b, f"{path}.{i}", found)
    elif (isinstance(snapshot, (int, float)) and isinstance(fresh, (int, float))
          and not isinstance(snapshot, bool)):
        if not math.isclose(fresh, snapshot, rel_tol=RTOL, abs_tol=ATOL):
            found.append(f"{path}: {fresh!r} now, {snapshot!r} in the snapshot")
    elif fresh != snapshot:
        found.append(f"{path}: {fresh!r} now, {snapshot!r} in the snapshot")
    return found


def flat(text):
    return " ".join(text.split())


def docs():
    """Every doc whose numbers are checked: README.md and docs/*.md, as paths from ROOT."""
    return ["README.md"] + sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))


def checks(doc):
    """The QUOTES and TABLE_ROWS of `doc` alike, as (words, [(snapshot, path, format), ...])."""
    return ([(words, [(name, path, fmt)]) for words, name, path, fmt in QUOTES.get(doc, [])]
            + TABLE_ROWS.get(doc, []))


def quoted(words, cells, snapshots):
    """`words` with the snapshots' numbers, formatted, in place of the {}s."""
    values = [value_at(snapshots[name], path) for name, path, _ in cells]
    return flat(words.format(*[fmt(value) if callable(fmt) else fmt.format(value)
                               for value, (_, _, fmt) in zip(values, cells)]))


def quote_problems(doc, text, snapshots, only=None):
    """The checks of `doc` that its text `text` does not hold with the snapshots' numbers
    (only those whose quote is in `only`, if given), and how many numbers were checked."""
    text, problems, n_numbers = flat(text), [], 0
    for words, cells in checks(doc):
        expected = quoted(words, cells, snapshots)
        if only is None or expected in only:
            n_numbers += len(cells)
            if expected not in text:
                where = ", ".join(f"{name} {path}" for name, path, _ in cells)
                problems.append(f"{doc} should say {expected!r} (snapshot {where})")
    return problems, n_numbers


# The doc with the table of tools/check_draws.py, and its row for each claim there
DRAWS_DOC = "docs/draws.md"
DRAW_CLAIMS = {
    "naive bias doubles with the mismatch":
        "naive bias about doubles when the mismatch doubles (ratio 1.8–2.3)",
    "sequence IS variance explodes, naive does not":
        "`seq` variance explodes, the naive one does not",
    "truncation has the lowest RMSE at mismatch 0.6":
        "truncation has the lowest RMSE at mismatch 0.6",
    "sequence TIS beats token TIS at mismatch 0.6": "`seq_tis` beats `token_tis` at mismatch 0.6",
    "best C of token TIS strictly inside 1..10": "best C of `token_tis` strictly inside 1..10",
}


def draw_lines():
    """What DRAWS_DOC must say, from the counts tools/check_draws.py computes now (about 2 s)."""
    sys.path.insert(0, str(ROOT))
    from tools import check_draws
    found = check_draws.draws()
    aside = [(seed, ratio) for seed, _, ratio, set_aside, _ in found if set_aside]
    lines = [f"set aside ({', '.join(f'seed {s}: {r:.2f}×' for s, r in aside)})",
             f"Of the other {len(found) - len(aside)} draws"]
    for claim, results in check_draws.per_claim(found).items():
        failing = ", ".join(str(seed) for seed, holds in results if not holds) or "none"
        lines.append(f"| {DRAW_CLAIMS[claim]} | {sum(h for _, h in results)}/{len(results)} "
                     f"| {failing} |")
    return lines


def draws_problems(text, lines):
    """The lines of draw_lines() that the text of DRAWS_DOC, `text`, does not hold."""
    return [f"{DRAWS_DOC} should say {line!r} (tools/check_draws.py)" for line in lines
            if line not in flat(text)]


def check_docs(root, snapshots, render=None):
    """Every doc's quotes and the draws table, checked in the copy at `root`; with `render`
    (a release's students' copy), only the docs and quotes that `render` keeps. Prints a
    line per doc and returns the problems."""
    problems, lines = [], draw_lines()
    for doc in docs():
        text = (root / doc).read_text() if (root / doc).exists() else None
        only = None
        if render is not None:
            made = render(doc)
            if made is None:
                if text is not None:
                    problems.append(f"{root / doc} is instructor-only but is in the copy")
                continue
            if text != made:
                problems.append(f"{root / doc} is not what tools/release.py makes now")
                continue
            only = {quoted(words, cells, snapshots) for words, cells in checks(doc)
                    if quoted(words, cells, snapshots) in flat(made)}
        found, n_numbers = quote_problems(doc, text, snapshots, only)
        n_checks = sum(only is None or quoted(words, cells, snapshots) in only
                       for words, cells in checks(doc))
        print(f"{root / doc}: {len(found)} of {n_checks} quotes differ ({n_numbers} numbers checked)")
        problems += found
        if doc == DRAWS_DOC:
            found = draws_problems(text, lines)
            print(f"{root / doc}: {len(found)} of {len(lines)} lines of tools/check_draws.py differ")
            problems += found
    unknown = (set(QUOTES) | set(TABLE_ROWS)) - set(docs())
    problems += [f"QUOTES or TABLE_ROWS name {doc}, which is not a doc" for doc in sorted(unknown)]
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots")
    parser.add_argument("--student-copy", type=Path, metavar="DIR",
                        help="also check the docs of this students' copy (OUT/student)")
    args = parser.parse_args(argv)
    problems = []
    snapshots = {}
    with tempfile.TemporaryDirectory() as tmp:
        # the runs are independent processes: run as many at once as there are cores
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            runs = dict(zip(RUNS, pool.map(lambda name: fresh_run(name, tmp), RUNS)))
        for name, flags in RUNS.items():
            fresh, path = runs[name], SNAPSHOTS / f"{name}.json"
            if args.update or not path.exists():
                SNAPSHOTS.mkdir(exist_ok=True)
                path.write_text(json.dumps(fresh, indent=1) + "\n")
            snapshots[name] = json.loads(path.read_text())
            found = differences(fresh, snapshots[name])
            print(f"run.py {' '.join(flags) or '(default flags)'}: "
                  f"{'matches' if not found else 'DIFFERS from'} tools/snapshots/{name}.json")
            problems += [f"{name}: {problem}" for problem in found]
    problems += check_docs(ROOT, snapshots)
    if args.student_copy:
        sys.path.insert(0, str(ROOT))
        from tools.release import student_doc
        problems += check_docs(args.student_copy, snapshots, render=student_doc)
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
