"""Run Lab 20's three experiments: print the results, save rl_systems.png and rl_systems.json.

    python run.py                  # your code; tasks not done yet become placeholders
    RL_SOLUTIONS=1 python run.py   # the reference solutions (instructors only)
    python run.py --solutions      # the same, in any shell (instructors only)
    python run.py --help           # the "things to try", as flags

Same flags, same numbers: every run is deterministic. This is a script: the
experiments it runs live in lab/experiments.py, the figure in lab/figure.py.
"""
import argparse
import json
import math
import re
import sys
import textwrap
from pathlib import Path

import lab
import toy
from lab import SCHEMES, harness, staleness
from lab.experiments import (C_SWEEP, LARGE_MISMATCH, LENGTH_BUDGETS,
                             LENGTH_KLS, LONG, MAX_TOKENS, c_sweep,
                             drop_stale_analysis, equal_hardware, learning_curves, length_sweep,
                             masked_sweep, memory_table, mismatch_sweep, scheduling_sweep,
                             staleness_sweep, step_grid, timeline)
from lab.gpu_model import gpu_comparison, gpu_sweep
from lab.gpu_presets import KV_READ, PRESETS
from lab.staleness import TARGET_KL
from lab.input_checks import ContractError
from lab.model_shapes import GPU_GB
from scheduler_core import MAX_RESPONSES, MAX_SIGMA, SchedulerError

# ---------------------------------------------------------------- printing

WIDTH = 100  # the longest line run.py prints


def say(text):
    """Print prose, each of its lines wrapped at WIDTH characters, the wrapped part two spaces
    further in than the line. (The tables are laid out to fit.)"""
    for line in text.split("\n"):
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        print(textwrap.fill(line, WIDTH, subsequent_indent=indent, break_long_words=False,
                            break_on_hyphens=False))

def print_memory(m):
    print("Part 1: model state (weights, gradients, optimizer), GB = 10^9 bytes; LoRA rank 16")
    print(f"  {'model':<23}{'params':>8}{'KV/token':>10}{'PPO':>9}{'GRPO':>9}"
          f"{'GRPO+LoRA':>11}{'PPO GPUs':>10}{'lanes/GPU':>14}")
    for r in m["models"]:
        print(f"  {r['model']:<23}{r['params'] / 1e9:>7.2f}B{r['kv_bytes_per_token'] / 1024:>6.0f} KiB"
              f"{r['ppo_gb']:>9.1f}{r['grpo_gb']:>9.1f}{r['grpo_lora_gb']:>11.1f}"
              f"{r['gpus_for_ppo']:>10}{lanes_text(r, m['max_tokens']):>14}")
    print(f"  KV cache on top: 64 responses x 16k tokens on the 7B = {m['kv_64x16k_gb']:.1f} GB")
    print(f"  PPO GPUs: {GPU_GB} GB GPUs that hold PPO's model state. lanes/GPU: responses of "
          f"{m['max_tokens']:,} tokens\n  that one {GPU_GB} GB GPU generates at once, KV cache "
          "beside the bf16 weights (activations and\n  engine overhead ignored): "
          f"{m['lanes_per_gpu']} for the lab's 7B. A lane of Part 2 is one such slot.")
    for r in m["models"]:
        if r["context"] < m["max_tokens"]:
            print(f"  * {r['model']}: its context is {r['context']:,} tokens, shorter than "
                  f"{m['max_tokens']:,}")


def lanes_text(row, max_tokens):
    """A lanes/GPU cell: the number, "does not fit", and * if the context is too short."""
    text = "does not fit" if row["lanes_per_gpu"] == 0 else str(row["lanes_per_gpu"])
    return text + ("*" if row["context"] < max_tokens else " ")


def print_scheduling(s):
    print(f"Part 2: {s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, "
          f"train_time = {s['train_time']}, {s['n_steps']} steps")
    print(f"  {'k':>3}{'throughput':>12}{'gain':>8}{'lanes busy':>12}{'mean lag':>10}"
          f"{'p95 lag':>9}{'max lag':>9}")
    for i, k in enumerate(s["k"]):
        print(f"  {k:>3}{s['throughput'][i]:>12.2f}{s['throughput_gain'][i]:>7.2f}x"
              f"{s['utilization'][i]:>12.0%}{s['mean_lag'][i]:>10.2f}"
              f"{s['lag_p95'][i]:>9}{s['max_lag'][i]:>9}")
    print("  k bounds how far generation runs ahead, not how old a trained response can be "
          "(see --drop-stale)")


def print_drop_stale(d):
    print(f"Drop stale (k = {d['k']}): {d['n_dropped']} of {d['n_started']} responses dropped, "
          f"{d['wasted_frac']:.1%} of generation time wasted")
    print(f"  mean length: dropped {d['mean_length_dropped']:.2f}, trained "
          f"{d['mean_length_trained']:.2f} (the mean of all lengths is 1)")
    print(f"  longer than {LONG}x the mean: {100 * d['long_share_dropped']:.2g}% of dropped, "
          f"{100 * d['long_share_trained']:.2g}% of trained")
    print(f"  throughput {d['throughput']:.2f} vs {d['throughput_keeping_stale']:.2f} keeping "
          "them; dropping is a filter against long responses")
    print(f"  max lag of trained responses: {d['max_lag']} (<= k = {d['k']}), against "
          f"{d['max_lag_keeping_stale']} keeping them")


def print_equal_hardware(e):
    G = e["gpus"]
    say(f"Equal hardware: {G} GPUs, {e['lanes_per_gpu']} lane(s) per generating GPU, one update "
          f"= {e['train_work']:g} GPU-time units, B = {e['B']}, {e['n_steps']} steps")
    print(f"  synchronous, colocated (all {G} generate, then all {G} train): "
          f"throughput {e['sync_throughput']:.2f}")
    print(f"  asynchronous at k = {e['k']}, g GPUs generate and {G} - g train; the best splits:")
    print(f"  {'g':>5}{'train GPUs':>12}{'throughput':>12}")
    for s in sorted(e["splits"], key=lambda s: -s["throughput"])[:5]:
        note = "" if s["feasible"] else "   excluded: the trainers cannot hold the model"
        print(f"  {s['gen_gpus']:>5}{G - s['gen_gpus']:>12}{s['throughput']:>12.2f}{note}")
    print(f"  {e['trainer_gpus_why']}")
    if e["best_gen_gpus"] is None:
        print("  no split is feasible")
    else:
        print(f"  best: {e['best_gen_gpus']} generate, {G - e['best_gen_gpus']} train: "
              f"throughput {e['best_throughput']:.2f} = {e['speedup']:.2f}x the synchronous run "
              "on the same GPUs")


def print_timeline(t):
    busy = ", ".join(f"{r['busy']:.0%} at k = {r['k']}" for r in t["runs"])
    say(f"Timeline: 0 to {t['window']:.1f} time units (the k = 0 run's first "
          f"{t['n_updates']} updates), lanes busy {busy}")


def print_gpu_model(g):
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
    print("  where each value comes from (lab/gpu_presets.py names the sources):")
    for what, source in g["notes"]:
        say(f"    {what}: {source}")


def print_gpu_sweep(w):
    say(f"GPU sweep, {w['preset']} at its split ({w['gen_gpus']} of {w['gpus']} GPUs generate): "
          f"seconds per step, synchronous (k = 0) against k = {w['k']}")
    print(f"  {'':<26}{'S':>6}{'group':>7}{'cap':>8}{'sync s':>9}{'async s':>9}{'speedup':>9}"
          f"{'max lag':>9}{'token lag':>11}")
    for r in w["rows"]:
        print(f"  {r['variant']:<26}{r['slots']:>6}{r['group_size']:>7}{r['max_len']:>8}"
              f"{r['sync_seconds']:>9.1f}{r['async_seconds']:>9.1f}{r['speedup']:>8.2f}x"
              f"{r['max_lag']:>9}{r['token_lag']:>11.2f}")
    lanes = w["lanes"]
    say(f"  Part 2's lanes on the GPU model ({lanes['n_lanes']} lanes, B = {lanes['B']}, "
          f"sigma = {lanes['sigma']}): gain over k = 0 and max lag at k = 0, 1, 2")
    for r in lanes["rows"]:
        print(f"  {r['variant']:<26}" + "".join(f"{g:>7.2f}x" for g in r["gain"])
              + "   max lag " + ", ".join(map(str, r["max_lag"])))
    say("  The decode step against a measurement (MEMGAP: vLLM, OPT-1.3B on an H100, 161 + 338 "
        "tokens): mean DRAM read share of peak, by batch")
    print(f"  {'batch':<26}" + "".join(f"{r['batch']:>7}" for r in w["dram"]))
    for key, label in (("measured", "measured"), ("model", f"model, KV at {KV_READ:.2f}"),
                       ("full", "model, KV at 1.00")):
        print(f"  {label:<26}" + "".join(f"{r[key]:>7.1%}" for r in w["dram"]))


def print_mismatch(m):
    print(f"Part 3: RMSE of the gradient estimate (batch of {m['batch_size']}, C = {m['C']}, "
          f"{m['noise']} noise)")
    print(f"  {'mismatch':>8}" + "".join(f"{s:>11}" for s in SCHEMES))
    for i, x in enumerate(m["mismatch"]):
        print(f"  {x:>8.1f}" + "".join(f"{m['schemes'][s]['rmse'][i]:>11.4f}" for s in SCHEMES))


def print_masking(m):
    print(f"Part 3 with masking (Task 3c): RMSE, band [{m['low']}, {m['high']}], same settings")
    print(f"  {'mismatch':>8}" + "".join(f"{s:>11}" for s in m["schemes"]))
    for i, x in enumerate(m["mismatch"]):
        print(f"  {x:>8.1f}" + "".join(f"{v['rmse'][i]:>11.4f}" for v in m["schemes"].values()))


def print_length_sweep(s):
    print(f"Length sweep: batch of {s['batch_size']}, C = {s['C']}, {s['noise']} noise; reward: "
          "count of token 0, centred")
    if s["masked_skipped"]:
        print(f"  masked schemes skipped, {s['masked_skipped']}.")
    for level in s["levels"]:
        print_length_level(level, s)


# The length sweep's schemes in two groups of four, one table each (lines <= 100 characters)
LENGTH_GROUPS = (("none", "token", "token_tis", "token_mask"),
                 ("seq", "seq_tis", "seq_mask", "geo_mask"))


def print_length_level(level, s):
    print(f"  KL(pi_infer || pi_train) = {level['kl']:g} nats/token (mismatch scale "
          f"{level['mismatch']:.4f}); mean |log-ratio| {level['mean_abs_log_ratio']:.3g}/token")
    batches = sorted(set(level["n_batches"]), reverse=True)
    print(f"    T <= 6 exact (the ESS sampled), longer T Monte Carlo, seed {toy.LENGTH_SEED}: "
          f"{' / '.join(map(str, batches))} batches as T grows")
    for key, title in (("rmse", "relative RMSE, RMSE / ||true gradient|| (always 0 scores 1.0)"),
                       ("rmse_stderr", "its standard error (0 where exact)"),
                       ("cosine", "cosine of the mean estimate with the true gradient"),
                       ("zero_weight_share", "share of token weights below 1e-6"),
                       ("ess", "mean ESS of a batch's weights, (sum w)^2 / (T sum w^2), "
                               f"of {s['batch_size']}")):
        print(f"    {title}")
        for group in LENGTH_GROUPS:
            print_length_table(level, key, [n for n in group if n in level["schemes"]])
    print("    where each scheme collapses, as T x KL: from the last T where it held to the "
          "first where not\n    (? = not resolved: an end's sampled mean ESS is within 2 SE of "
          "the level; the ends below)")
    print(f"    {'scheme':<12}{'mean ESS < ' + format(s['ess_share'] * s['batch_size'], 'g'):>18}"
          f"{'mean ESS < ' + format(s['ess_floor'], 'g'):>18}"
          f"{'cosine < ' + format(s['collapse_cosine'], 'g'):>18}")
    for scheme, c in level["collapse"].items():
        print(f"    {scheme:<12}" + "".join(f"{collapse_text(c[key]):>18}"
                                            for key in ("ess_share", "ess_floor", "cosine")))
    for scheme, c in level["collapse"].items():
        for key, label in (("ess_share", "10% of the batch"), ("ess_floor", format(s["ess_floor"], "g"))):
            ends = [f"{c[key][f'value_{end}']:.3g} +- {c[key][f'se_{end}']:.2g} at "
                    f"{c[key][end]:.3g}" for end in ("after", "at") if c[key][end] is not None]
            if c[key]["at"] is not None and not c[key]["resolved"]:
                print(f"    {scheme} below {label}? mean ESS " + ", then ".join(ends))
    for scheme, c in level.get("collapse_exact", {}).items():
        print(f"    {scheme} by its exact large-batch ESS: < "
              f"{format(s['ess_share'] * s['batch_size'], 'g')} {collapse_text(c['ess_share'])}, "
              f"< {format(s['ess_floor'], 'g')} {collapse_text(c['ess_floor'])}")


def print_length_table(level, key, schemes):
    """One metric of a level for up to four schemes, against T; the ESS of the sequence
    schemes with its two predictions for sequence IS (lognormal, exact large-batch)."""
    stderr = {"rmse": "rmse_stderr", "ess": "ess_stderr"}.get(key)
    width = 14 if stderr else 11
    extra = key == "ess" and "seq" in schemes
    print(f"    {'T':>6}{'T x KL':>8}" + "".join(f"{name:>{width}}" for name in schemes)
          + (f"{'lognormal':>11}{'seq exact':>11}" if extra else ""))
    for i, T in enumerate(level["T"]):
        stats = [level["schemes"][name] for name in schemes]
        cells = [f"{v[key][i]:.3g}" + (f"+-{v[stderr][i]:.2g}" if stderr else "") for v in stats]
        line = f"    {T:>6}{level['T_kl'][i]:>8.3g}" + "".join(f"{c:>{width}}" for c in cells)
        if extra:
            line += f"{level['ess_lognormal'][i]:>11.3g}{level['ess_limit'][i]:>11.3g}"
        print(line)


def collapse_text(c):
    """"0.96 to 1.92", "<= 0.16" (already at the first T) or "none to 16.4"; "?" after a
    crossing that the sampling noise does not resolve."""
    if c["at"] is None:
        return f"none to {c['after']:.3g}"
    text = f"{c['after']:.3g} to {c['at']:.3g}" if c["after"] is not None else f"<= {c['at']:.3g}"
    return text + (" ?" if not c.get("resolved", True) else "")


def print_staleness(s):
    say(f"Staleness: what each k's lag costs the gradient ({s['n_lanes']} lanes, B = {s['B']}, "
          f"sigma = {s['sigma']}, {s['n_steps']} steps; engine mismatch {s['mismatch']}, "
          f"C = {s['C']})")
    say(f"  the policy moves: one update = step {s['step']:.4g} along the exact gradient, "
          f"{s['kl']:g} nats per token (KL(pi_v-1 || pi_v) / T);\n  a response at lag l was "
          f"sampled by version v - l, KL(pi_v-l || pi_v) / T = "
          + ", ".join(f"{kl:.3f}" for kl in s["lag_kl"][1:5]) + " ... at l = 1 .. 4")
    names = {n: n for n in s["schemes"]}  # the code's names, as in the figures
    print(f"  {'':38}" + "".join(f"{names[n]:>20}" for n in s["schemes"]))
    print(f"  {'k':>8}{'throughput':>11}{'mean lag':>9}{'p95':>5}{'max':>5}"
          + "".join(f"{'RMSE':>14}{'cos':>6}" for n in s["schemes"]))
    for row in s["rows"]:
        print(f"  {row_name(row):>8}{row['throughput']:>11.2f}{row['mean_lag']:>9.2f}"
              f"{row['lag_p95']:>5}{row['max_lag']:>5}"
              + "".join(f"{v['rmse']:>14.4f}{v['cosine']:>6.3f}" for v in row["schemes"].values()))
    print("  expected gain of J per update: second order (exact formula) | exact J after a real "
          "sampled step,")
    print(f"  Monte Carlo over {staleness.ONE_STEP_BATCHES:,} batches (+- SE); * = the two differ "
          "by over 10%; noise = eta^2/2 tr(H Cov)")
    print(f"  {'k':>8}" + "".join(f"{names[n] + ': 2nd | exact':>30}" for n in s["schemes"]))
    for row in s["rows"]:
        print(f"  {row_name(row):>8}" + "".join(
            f"{v['gain_per_update']:>10.4f} |{v['exact_gain']:>8.4f} +-{v['exact_gain_se']:.4f}"
            + ("*" if v["second_order_off"] else " ") for v in row["schemes"].values()))
    print(f"  {'k':>8}" + "".join(f"{names[n] + ': noise, KL moved':>30}" for n in s["schemes"]))
    for row in s["rows"]:
        print(f"  {row_name(row):>8}" + "".join(
            f"{v['noise_term']:>+12.4f}{v['update_kl']:>9.4f} +-{v['update_kl_se']:.4f}"
            for v in row["schemes"].values()))
    print(f"  (KL moved: KL(pi_v || pi_v+1) / T of a real noisy update; the versions above are "
          f"{s['kl']:g} apart)")
    print("  exact gain of J per time unit (gain per update x throughput / B), and / k = 0's")
    print(f"  {'k':>8}" + "".join(f"{names[n]:>22}" for n in s["schemes"]))
    sync = s["rows"][0]["schemes"]
    for row in s["rows"]:
        print(f"  {row_name(row):>8}" + "".join(
            f"{v['exact_gain_per_time']:>11.5f} "
            f"({v['exact_gain_per_time'] / sync[n]['exact_gain_per_time']:.2f}x)"
            for n, v in row["schemes"].items()))
    print("  best (exact gain per time unit): " + ", ".join(
        f"{names[n]} at k = {row_name(s['rows'][i])}" for n, i in s["best"].items()))


def print_learning_curves(c):
    say(f"Learning curves: the toy trained until J >= {c['target']:g} (J(THETA) = "
        f"{c['J_start']:.3f}) on each k's simulate trace (B = {c['B']}, sigma = {c['sigma']}, "
        f"{c['n_seeds']} seeds, up to {c['horizon']} updates)")
    print(f"  a time unit is the mean response's generation time (one update trains in "
          f"{c['train_time']:g});\n  throughput = responses trained per time unit. Steps: "
          f"equal_kl (the headline, fixed before running) = each update's\n  step set so that "
          f"it moves the policy by {c['equal_kl']:g} nats/token; 1x = eta {c['step']:.4g} for "
          f"every update\n  (one exact-gradient step of {c['step_kl']:g} nats/token at THETA)."
          f" Time to the target, mean +- SE; (n) = seeds that\n  reached it, if not all (the "
          f"others count at their last update: a lower bound); KL = mean per update")
    for name, rows in (("generation-bound", c["generation_bound"]),
                       ("trainer-bound", c["trainer_bound"])):
        for mismatch in c["mismatches"]:
            print_learning_table(c, [r for r in rows if r["mismatch"] == mismatch],
                                 f"{rows[0]['lanes']} lanes ({name}), engine mismatch {mismatch:g}")
    say("  paired differences over the same seeds (time units; * = beyond 2 SE):")
    for d in c["costs"]:
        where = f"  mismatch {d['mismatch']:g}, step {d['step']}:"
        print(f"{where:<30}one more version at {c['trainer_lanes']} lanes (k = 2 -> 8, / 6): "
              + paired_cells(d["per_version"]))
        print(f"{'':<30}recovered of none's: " + paired_cells(d["recovered"]))
        print(f"{'':<30}k = 1 - k = 0 at {c['n_lanes']} lanes: " + paired_cells(d["asynchrony"]))
        for lanes, drop in d["drop"].items():
            print(f"{'':<30}dropping - keeping at k = 1, {lanes} lanes: " + paired_cells(drop))


def print_learning_table(c, rows, title):
    """One set-up at one mismatch: a line per setting and step, a column per scheme."""
    print(f"  {title}:")
    print(f"  {'k':>8}{'throughput':>11}{'lag':>6}{'step':>10}"
          + "".join(f"{n:>22}" for n in c["schemes"]) + "   KL per update")
    for row in rows[::len(c["schemes"]) * 2]:  # each setting: its schemes, two steps each
        for step in ("equal_kl", "1x"):
            mine = [r for r in rows if (r["k"], r["drop_stale"], r["step"]) ==
                    (row["k"], row["drop_stale"], step)]
            setting = next(s for s in c["settings"] if (s["lanes"], s["k"], s["drop_stale"]) ==
                           (row["lanes"], row["k"], row["drop_stale"]))
            first = (f"{row_name(row):>8}{setting['throughput']:>11.2f}"
                     f"{setting['mean_lag']:>6.2f}" if step == "equal_kl" else " " * 25)
            print(f"  {first}{step:>10}" + "".join(f"{time_cell(r):>22}" for r in mine)
                  + "   " + " / ".join(f"{r['kl_per_update']:.4f}" for r in mine))


def time_cell(r):
    """ "12.34 +- 0.56", and " (197)" if not every seed reached the target."""
    return (f"{r['mean']:.2f} +- {r['se']:.2f}"
            + (f" ({r['reached']})" if r["reached"] < r["seeds"] else ""))


def paired_cells(d):
    """ "none 5.85 +- 0.16*, token_tis 0.35 +- 0.05*" from {scheme: paired difference}."""
    return ", ".join(f"{s} {v['mean']:+.2f} +- {v['se']:.2f}" + ("*" if v["significant"] else "")
                     for s, v in d.items())


def print_step_grid(g):
    say(f"Step grid: each cell at eta = scale x {g['step']:.4g} for every update, scales "
        f"{', '.join(f'{s:g}' for s in g['scales'])} (grown until every cell's least time has "
        f"a larger one on both sides);\n  time to J >= {g['target']:g}, mean +- SE over "
        f"{g['n_seeds']} seeds (up to {g['horizon']} updates); best scale of each cell in "
        f"brackets")
    for name, rows in (("generation-bound", g["generation_bound"]),
                       ("trainer-bound", g["trainer_bound"])):
        for mismatch in g["mismatches"]:
            mine = [r for r in rows if r["mismatch"] == mismatch]
            if not mine:  # a set-up the grid did not run
                continue
            print(f"  {mine[0]['lanes']} lanes ({name}), engine mismatch {mismatch:g}:")
            print(f"  {'k':>8}" + "".join(f"{n:>28}" for n in g["schemes"]))
            for i in range(0, len(mine), len(g["schemes"])):
                cells = [f"{time_cell(r)} [{r['scale']:g}x]" for r in mine[i:i + len(g['schemes'])]]
                print(f"  {row_name(mine[i]):>8}" + "".join(f"{cell:>28}" for cell in cells))


def row_name(row):
    """A staleness row's k as printed: "1" or "1 drop" (k = 1 dropping stale responses)."""
    return f"{row['k']}" + (" drop" if row["drop_stale"] else "")


def print_c_sweep(c):
    print(f"C sweep: token_tis at mismatch {c['mismatch']}, batch of {c['batch_size']}")
    print(f"  {'C':>6}{'bias':>9}{'RMSE':>9}")
    for C, bias, rmse in zip(c["C"], c["bias"], c["rmse"]):
        print(f"  {C:>6}{bias:>9.4f}{rmse:>9.4f}" + ("   <- best" if C == c["best_C"] else ""))


def short_memory(m):
    """Part 1 in a line (run.py with an experiment flag), as are the three below."""
    return (f"Part 1: model state of the lab's 7B: PPO {m['ppo_7b_gb']:.0f} GB, GRPO "
            f"{m['grpo_7b_gb']:.0f} GB, GRPO + LoRA {m['grpo_lora_7b_gb']:.1f} GB")


def short_scheduling(s):
    k1 = s["k"].index(1) if 1 in s["k"] else -1
    return (f"Part 2: k = {s['k'][k1]} gives {s['throughput_gain'][k1]:.2f}x the throughput of "
            f"k = 0 (lanes busy {s['utilization'][0]:.0%} -> {s['utilization'][k1]:.0%}); "
            f"mean lag {s['mean_lag'][k1]:.2f}, max {s['max_lag'][k1]}")


def short_mismatch(m):
    at = m["mismatch"].index(LARGE_MISMATCH)
    return (f"Part 3 (RMSE at mismatch {LARGE_MISMATCH}): " + ", ".join(
        f"{scheme} {m['schemes'][scheme]['rmse'][at]:.3f}" for scheme in SCHEMES))


def short_masking(m):
    at = m["mismatch"].index(LARGE_MISMATCH)
    return (f"Masking (Task 3c, RMSE at mismatch {LARGE_MISMATCH}): " + ", ".join(
        f"{scheme} {stats['rmse'][at]:.3f}" for scheme, stats in m["schemes"].items()))


# How each part prints: in full (`python run.py`), or in a line (after a flag's own section).
FULL = dict(memory=print_memory, scheduling=print_scheduling, mismatch=print_mismatch,
            masking=print_masking)
SHORT = dict(memory=short_memory, scheduling=short_scheduling, mismatch=short_mismatch,
             masking=short_masking)


# ---------------------------------------------------------------- the command line

def bounded(kind, low, high=math.inf):
    """An argparse type: a `kind` (int or float) from low to high, else a clear error."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high or value == math.inf:
            upper = f" and <= {high}" if high < math.inf else ""
            raise argparse.ArgumentTypeError(
                f"must be {'a whole number' if kind is int else 'a finite number'} >= {low}"
                f"{upper}, got {text!r}")
        return value
    return parse


class DefaultsOnce(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows a flag's default once: not for switches (off unless given), not for
    a default of None, and not where the help text already says it."""
    def _get_help_string(self, action):
        if action.default is None or action.default is False or "(default" in action.help:
            return action.help
        return super()._get_help_string(action)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=DefaultsOnce)
    p.add_argument("--lanes", type=bounded(int, 1, MAX_RESPONSES), default=16, help="generation lanes")
    p.add_argument("-B", "--batch", type=bounded(int, 1), default=32,
                   help="B, responses per training batch")
    p.add_argument("--steps", type=bounded(int, 1), default=200,
                   help="training steps per simulated run")
    p.add_argument("--train-time", type=bounded(float, 0), default=1.0,
                   help="time units per update; try 3.0, where the trainer is the bottleneck")
    p.add_argument("--sigma", type=bounded(float, 0, MAX_SIGMA), default=1.25,
                   help="lognormal shape of response lengths; larger = heavier tail")
    p.add_argument("--drop-stale", action="store_true",
                   help="also run k = 1 dropping stale responses: how many, how long they were "
                        "(a PNG of its own)")
    p.add_argument("--noise", choices=toy.NOISES, default="student_t",
                   help="shape of the inference engine's logit perturbation")
    p.add_argument("--C", type=bounded(float, 1), default=2.0,
                   help="truncation level of token_tis and seq_tis")
    p.add_argument("--batch-size", type=bounded(int, 1, toy.MAX_BATCH_SIZE), default=64,
                   help="responses per gradient estimate in Part 3")
    p.add_argument("--c-sweep", action="store_true",
                   help=f"sweep C over {C_SWEEP[0]:g}..{C_SWEEP[-1]:g} for token_tis at "
                        f"mismatch {LARGE_MISMATCH} (a PNG of its own)")
    p.add_argument("--length-sweep", action="store_true",
                   help=f"measure every scheme (error, cosine, ESS of its weights) at the "
                        f"response lengths T with T x KL = {LENGTH_BUDGETS[0]:g} .. "
                        f"{LENGTH_BUDGETS[-1]:g} (a per-token reward), at each KL of --length-kl")
    p.add_argument("--length-kl", type=bounded(float, 0, toy.MAX_KL), nargs="+",
                   default=list(LENGTH_KLS),
                   help="per-token KL(pi_infer || pi_train) of each level of the length sweep "
                        "(nats; the mismatch scale that gives it is found exactly)")
    p.add_argument("--staleness", action="store_true",
                   help="also price Part 2's lag with Part 3's tools: the error of the gradient "
                        "and the gain per time unit at each k (a PNG of its own)")
    p.add_argument("--staleness-kl", type=bounded(float, 1e-6, 1.0), default=TARGET_KL,
                   help="nats per token that one update moves the policy, for --staleness")
    p.add_argument("--staleness-mismatch", type=bounded(float, 0, toy.MAX_MISMATCH), default=0.0,
                   help="Part 3's engine mismatch on top of the lag, for --staleness")
    p.add_argument("--learning-curves", action="store_true",
                   help="also train the toy on each k's simulate trace, at 16 and 64 lanes, "
                        "and time how soon J reaches 0.9, at equal movement per update and at "
                        "one common step (a PNG of its own)")
    p.add_argument("--step-grid", action="store_true",
                   help="the learning curves' step sensitivity: every cell at a grid of "
                        "common steps, each at its best (fewer seeds)")
    p.add_argument("--max-tokens", type=bounded(int, 1, 1_048_576), default=MAX_TOKENS,
                   help="tokens per response when Part 1 counts the lanes of one GPU")
    p.add_argument("--equal-hardware", action="store_true",
                   help="also compare sync and async RL on the same GPUs (with --gpus, "
                        "--lanes-per-gpu, --train-work)")
    p.add_argument("--gpus", type=bounded(int, 2, 24), default=16,
                   help="GPUs shared by generation and training, for --equal-hardware")
    p.add_argument("--lanes-per-gpu", type=bounded(int, 1, 128), default=1,
                   help="lanes (concurrent responses) per generating GPU, for --equal-hardware")
    p.add_argument("--train-work", type=bounded(float, 0, 1000), default=None,
                   help="GPU-time units one update costs, for --equal-hardware "
                        "(default: --gpus x --train-time)")
    p.add_argument("--preset", choices=[*PRESETS, "all"], default=None,
                   help="predict a published run's hours on the GPU model (docs/gpu-model.md); "
                        "all: the three presets")
    p.add_argument("--gpu-sweep", action="store_true",
                   help="how the GPU model's speedup depends on S, group size and the length "
                        "cap (a PNG of its own)")
    p.add_argument("--timeline", action="store_true",
                   help="also draw the lanes over time at k = 0 and k = 1 (a second PNG)")
    if lab.SOLUTIONS_DIR.is_dir():  # a students' copy has no reference to switch to
        p.add_argument("--solutions", action="store_true",
                       help="run the reference solutions (the same as RL_SOLUTIONS=1)")
    p.add_argument("--out", type=png_path, default="rl_systems.png",
                   help="where to save the figure; the numbers go next to it as .json")
    return p


def parse_args(argv=None):
    p = parser()
    args = p.parse_args(argv)
    if args.batch * args.steps > MAX_RESPONSES:  # every trained response is kept in memory
        p.error(f"argument -B/--batch times --steps must be at most {MAX_RESPONSES}, "
                f"got {args.batch} x {args.steps} = {args.batch * args.steps}")
    return args


def png_path(text):
    """An argparse type: a .png file that can be written, in a folder that exists, with
    room for its .json beside it (checked now, before any computation)."""
    path = Path(text)
    if path.suffix != ".png":
        raise argparse.ArgumentTypeError(f"must be a .png file, got {text!r}")
    problem = harness.cannot_write(path) or harness.cannot_write(path.with_suffix(".json"))
    if problem:
        raise argparse.ArgumentTypeError(f"cannot save {text!r}: {problem}")
    return path


session = {}     # main() fills it: the watchdog, the results so far and their file, the
                 # flags; the part running sets "limit"; Ctrl-C sets "stopped", after which
                 # the parts left are not run


def part_limit(key, args):
    """Seconds part `key` may run: 5 times its reference time (lab.PART_SECONDS, at the
    default flags) times the extra work the flags ask for, and at least harness.TIME_LIMIT."""
    def more(flag):  # how many times the default's work the flag asks for (at least 1)
        return max(1.0, getattr(args, flag) / parser().get_default(flag))

    work = 1.0
    if key in ("scheduling", "drop_stale", "equal_hardware", "timeline", "staleness",
               "learning_curves", "step_grid"):
        work = more("batch") * more("steps")  # simulations of B * steps responses
        if key == "equal_hardware":  # a simulation per split of the GPUs, of more lanes
            work *= more("gpus") * args.lanes_per_gpu
    elif key == "length_sweep":  # sampled batches of batch_size responses
        work = more("batch_size")
    return max(harness.TIME_LIMIT, 5 * lab.PART_SECONDS[key] * work)


def attempt(key, experiment, show, unavailable, note=print):
    """Run the part `key` of lab.PARTS under its time limit and `show` its result. If its
    task is not done yet, or fails, say so through `note` (print, or keep the line for
    later), record it in `unavailable` (the figure draws a placeholder) and return None.
    Ctrl-C stops this part and skips the rest; main() still saves."""
    part, task = lab.PARTS[key]
    if session.get("stopped"):
        unavailable[part] = "not run: the run was interrupted"
        return None
    file = lab.file_of(next(t for t in lab.TASKS if t.startswith(task)))
    session["limit"] = part_limit(key, session["args"])
    try:
        with harness.time_limit(f"{part} (Task {task}, {file})", session.get("watchdog"),
                                session["limit"]):
            result = experiment()
    except NotImplementedError as todo:
        if not str(todo):
            return failed(part, task, todo, unavailable, note)
        note(f"{part}: skipped, {todo}.")
        named = re.match(r"Task (\d[a-z]?)", str(todo))  # a part may need two tasks
        unavailable[part] = f"Task {named[1] if named else task} not implemented yet"
        return None
    except KeyboardInterrupt:
        note(f"{part}: interrupted (Ctrl-C); saving the parts done so far.")
        session["stopped"] = part
        unavailable[part] = "not run: the run was interrupted"
        return None
    except BaseException as error:  # noqa: BLE001 (a bug in a task, a time limit, an exit)
        return failed(part, task, error, unavailable, note)
    show(result)
    return result


def failed(part, task, error, unavailable, note=print):
    """Report a part that failed: in a task file (or its checks), or in given code."""
    if isinstance(error, harness.TimeLimitExceeded):
        note(f"{part}: stopped after {session['limit']:.3g} s, its time limit: {error}"
              f"{harness.where(error)}\n"
              f"  run `python -m pytest -q -k task{task}` to find out why.")
        unavailable[part] = f"Task {task} ran too long: see its tests"
    elif harness.raised_in_given_code(error) and not isinstance(
            error, (SchedulerError, ContractError, lab.TaskFileError)):
        frame = harness.lab_frames(error)[-1]
        note(f"{part}: failed in given code, not in your file: {type(error).__name__}: {error}"
              f"\n  at {Path(frame.filename).relative_to(harness.ROOT)}, line {frame.lineno}. "
              f"If the tests of Task {task} pass, this is a bug in the lab: please report it.")
        unavailable[part] = f"{part} failed in given code"
    else:
        note(f"{part}: failed with {harness.describe(error)}\n"
              f"  run `python -m pytest -q -k task{task}` to find out why.")
        unavailable[part] = f"Task {task} failed: see its tests"
    return None


def stuck(label, seconds):
    """The backstop (from the watchdog thread): a part ignored its limit. Save the rest."""
    print(f"\n{label} ignored its {session['limit']:.3g} s time limit and was still running "
          f"after {seconds:.0f} s (does it catch every exception, or turn off signals?); stopping.")
    part = label.split(" (")[0]
    session["results"]["unavailable"][part] = f"{part} ran too long"
    save(session["results"], session["out"])


def save(results, out):
    """Save the figure, then the JSON naming it, each through a temporary file; the parts
    that did not run are drawn as placeholders."""
    for key, (part, _) in lab.PARTS.items():
        if key not in results and part in results["unavailable"]:
            results[key] = None
    for key in ("memory", "scheduling", "mismatch"):  # the figure's panels need these
        if key not in results:
            results[key] = None
            results["unavailable"].setdefault(lab.PARTS[key][0], "not run")
    from lab import figure  # matplotlib loads only here, so `python run.py --help` stays fast
    drawings = {out: figure.draw}
    # the optional figures go beside the main one: rl_systems_timeline.png, ...
    from lab import gpu_figure, learning_figure
    for key, draw_extra in (("drop_stale", figure.draw_drop_stale),
                            ("equal_hardware", figure.draw_equal_hardware),
                            ("timeline", figure.draw_timeline),
                            ("c_sweep", figure.draw_c_sweep),
                            ("gpu_sweep", figure.draw_gpu_sweep),
                            ("staleness", figure.draw_staleness),
                            ("learning_curves", learning_figure.draw),
                            ("step_grid", learning_figure.draw_step_grid),
                            ("length_sweep", figure.draw_length_sweep),
                            ("gpu_model", gpu_figure.draw)):
        if key in results:
            drawings[out.with_name(f"{out.stem}_{key}.png")] = draw_extra
    for path, draw in drawings.items():
        harness.write_atomically(path, write=lambda tmp, draw=draw: draw(results, tmp))
    results["images"] = [path.name for path in drawings]
    # numpy numbers (a student's np.int64, say) are written as plain numbers
    text = json.dumps(results, indent=1, default=lambda number: number.item())
    harness.write_atomically(out.with_suffix(".json"), text)
    say(f"\nSaved {', '.join(map(str, drawings))} and {out.with_suffix('.json')}")


def main(argv=None):
    args = parse_args(argv)
    if getattr(args, "solutions", False):
        lab.choose_reference()
    try:
        code = lab.code_under_test()
    except ValueError as error:
        sys.exit(f"run.py: {error}")
    print(f"Running {code}\n")
    results = dict(code=code, unavailable={})
    session.update(results=results, out=args.out, args=args,
                   watchdog=harness.Watchdog(abort=stuck))
    flags = flag_sections(args)
    if not flags:  # the three parts in full
        run_parts(args, results, short=False)
    else:  # the flags' own sections first, then the three parts in a line each
        lines = []  # the parts run first (--staleness needs Part 2), their lines kept for later
        run_parts(args, results, short=True, note=lines.append)
        for section in flags:
            section(args, results)
            print()
        print("Parts 1-3 in short (`python run.py` without flags prints their tables):")
        for line in lines:
            print(line)
    save(results, args.out)
    if session.get("stopped"):
        sys.exit(130)  # interrupted: the files hold the parts done, the exit status says so


def run_parts(args, results, short, note=print):
    """Parts 1-3 (and Task 3c's masking), each printed in full or, if `short`, a line per
    part given to `note` (its result in short, or why it did not run)."""
    skipped = results["unavailable"]
    sched = scheduling_settings(args)
    parts = (("memory", lambda: memory_table(lab.load("memory"), args.max_tokens)),
             ("scheduling", lambda: scheduling_sweep(lab.load("scheduler"), **sched)),
             ("mismatch", lambda: mismatch_sweep(lab.load("tis"), args.C, args.batch_size,
                                                 args.noise)),
             ("masking", lambda: masked_sweep(lab.load("tis"), args.batch_size, args.noise)))
    for i, (key, experiment) in enumerate(parts):
        if i in (1, 2) and not short:
            print()
        show = (lambda result, key=key: note(SHORT[key](result))) if short else FULL[key]
        results[key] = attempt(key, experiment, show, skipped, note)


def scheduling_settings(args):
    return dict(n_lanes=args.lanes, B=args.batch, n_steps=args.steps,
                train_time=args.train_time, sigma=args.sigma)


# ---------------------------------------------------------------- the flags' sections, in order

def flag_sections(args):
    """The sections the flags ask for, in the order they print: each a function of
    (args, results) that runs its experiment into results and prints it."""
    asked = ((args.drop_stale, drop_stale_section), (args.equal_hardware, equal_hardware_section),
             (args.timeline, timeline_section), (args.preset, gpu_model_section),
             (args.gpu_sweep, gpu_sweep_section), (args.c_sweep, c_sweep_section),
             (args.length_sweep, length_sweep_section), (args.staleness, staleness_section),
             (args.learning_curves, learning_curves_section), (args.step_grid, step_grid_section))
    return [section for wanted, section in asked if wanted]


def drop_stale_section(args, results):
    results["drop_stale"] = attempt(
        "drop_stale", lambda: drop_stale_analysis(lab.load("scheduler"), **scheduling_settings(args)),
        print_drop_stale, results["unavailable"])


def equal_hardware_section(args, results):
    train_work = args.gpus * args.train_time if args.train_work is None else args.train_work
    results["equal_hardware"] = attempt(
        "equal_hardware", lambda: equal_hardware(
            lab.load("scheduler"), lab.load("memory"), args.gpus, args.lanes_per_gpu,
            train_work, B=args.batch, n_steps=args.steps, sigma=args.sigma),
        print_equal_hardware, results["unavailable"])


def timeline_section(args, results):
    results["timeline"] = attempt(
        "timeline", lambda: timeline(lab.load("scheduler"), drop_stale=args.drop_stale,
                                     **scheduling_settings(args)),
        print_timeline, results["unavailable"])


def gpu_model_section(args, results):
    """Each chosen preset on the GPU model, {name: result}; None once one cannot run."""
    runs = {}
    for i, name in enumerate(PRESETS if args.preset == "all" else [args.preset]):
        if i:
            print()
        runs[name] = attempt("gpu_model", lambda name=name: gpu_comparison(
            lab.load("scheduler"), lab.load("memory"), name), print_gpu_model,
            results["unavailable"])
        if runs[name] is None:
            runs = None
            break
    results["gpu_model"] = runs


def gpu_sweep_section(args, results):
    results["gpu_sweep"] = attempt(
        "gpu_sweep", lambda: gpu_sweep(lab.load("scheduler"), lab.load("memory")),
        print_gpu_sweep, results["unavailable"])


def c_sweep_section(args, results):
    results["c_sweep"] = attempt(
        "c_sweep", lambda: c_sweep(lab.load("tis"), batch_size=args.batch_size, noise=args.noise),
        print_c_sweep, results["unavailable"])


def length_sweep_section(args, results):
    results["length_sweep"] = attempt(
        "length_sweep", lambda: length_sweep(lab.load("tis"), args.length_kl, args.batch_size,
                                             args.C, args.noise),
        print_length_sweep, results["unavailable"])


def part_2_missing(results, key, title):
    """--staleness and --learning-curves train on Part 2's traces: without Part 2, say so."""
    if results["scheduling"] is None:
        print(f"{title}: skipped, it needs Part 2 (Task 2, scheduler.py) working first.")
        results["unavailable"][lab.PARTS[key][0]] = "needs Part 2 (Task 2) first"
    return results["scheduling"] is None


def staleness_section(args, results):
    if part_2_missing(results, "staleness", "Staleness"):
        return
    results["staleness"] = attempt(
        "staleness", lambda: staleness_sweep(
            lab.load("scheduler"), lab.load("tis"), args.lanes, args.batch,
            n_steps=args.steps, train_time=args.train_time, sigma=args.sigma,
            kl=args.staleness_kl, mismatch=args.staleness_mismatch, C=args.C,
            noise=args.noise),
        print_staleness, results["unavailable"])


def learning_curves_section(args, results):
    if part_2_missing(results, "learning_curves", "Learning curves"):
        return
    results["learning_curves"] = attempt(
        "learning_curves", lambda: learning_curves(
            lab.load("scheduler"), lab.load("tis"), args.lanes, args.batch,
            train_time=args.train_time, sigma=args.sigma, C=args.C, noise=args.noise),
        print_learning_curves, results["unavailable"])


def step_grid_section(args, results):
    if part_2_missing(results, "step_grid", "Step grid"):
        return
    results["step_grid"] = attempt(
        "step_grid", lambda: step_grid(
            lab.load("scheduler"), lab.load("tis"), args.lanes, args.batch,
            train_time=args.train_time, sigma=args.sigma, C=args.C, noise=args.noise),
        print_step_grid, results["unavailable"])


if __name__ == "__main__":
    main()
