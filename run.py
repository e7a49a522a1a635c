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
from lab import SCHEMES, harness
from lab.experiments import (C_SWEEP, COLLAPSE_BUDGET, LARGE_MISMATCH, LENGTH_GRID,
                             LENGTH_KLS, LONG, MAX_TOKENS, c_sweep,
                             drop_stale_analysis, equal_hardware, length_sweep, masked_sweep,
                             memory_table, mismatch_sweep, scheduling_sweep, staleness_sweep,
                             timeline)
from lab.gpu_model import gpu_comparison, gpu_sweep
from lab.gpu_presets import PRESETS
from lab.staleness import TARGET_KL
from lab.input_checks import ContractError
from lab.model_shapes import GPU_GB
from scheduler_core import MAX_RESPONSES, MAX_SIGMA, SchedulerError

# ---------------------------------------------------------------- printing

def print_memory(m):
    print("Part 1: model state (weights, gradients, optimizer), GB = 10^9 bytes; LoRA rank 16")
    print(f"  {'model':<24}{'params':>8}{'KV/token':>10}{'PPO':>9}{'GRPO':>9}"
          f"{'GRPO+LoRA':>11}{'80GB GPUs for PPO':>19}{'lanes/GPU':>15}")
    for r in m["models"]:
        print(f"  {r['model']:<24}{r['params'] / 1e9:>7.2f}B{r['kv_bytes_per_token'] / 1024:>6.0f} KiB"
              f"{r['ppo_gb']:>9.1f}{r['grpo_gb']:>9.1f}{r['grpo_lora_gb']:>11.1f}"
              f"{r['gpus_for_ppo']:>19}{lanes_text(r, m['max_tokens']):>15}")
    print(f"  KV cache on top: 64 responses x 16k tokens on the 7B = {m['kv_64x16k_gb']:.1f} GB")
    print(f"  lanes/GPU: responses of {m['max_tokens']:,} tokens that one {GPU_GB} GB GPU "
          f"generates at once, KV cache beside\n  the bf16 weights (activations and engine "
          f"overhead ignored): {m['lanes_per_gpu']} for the lab's 7B. A lane of Part 2 is one "
          "such slot.")
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
    print(f"  longer than {LONG}x the mean: {d['long_share_dropped']:.0%} of dropped, "
          f"{d['long_share_trained']:.1%} of trained")
    print(f"  throughput {d['throughput']:.2f} vs {d['throughput_keeping_stale']:.2f} keeping "
          "them; dropping is a filter against long responses")
    print(f"  max lag of trained responses: {d['max_lag']} (<= k = {d['k']}), against "
          f"{d['max_lag_keeping_stale']} keeping them")


def print_equal_hardware(e):
    G = e["gpus"]
    print(f"Equal hardware: {G} GPUs, {e['lanes_per_gpu']} lane(s) per generating GPU, one update "
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
    print(f"Timeline: 0 to {t['window']:.1f} time units (the k = 0 run's first "
          f"{t['n_updates']} updates), lanes busy {busy}")


def print_gpu_model(g):
    wrap = lambda text: print(textwrap.fill(text, 100, subsequent_indent="      "))  # noqa: E731
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
    wrap("  asynchronous at the published split: " + ", ".join(
        f"k = {r['k']}: {r['hours']:.1f} h" for r in g["by_k"]))
    a = g["asynchronous"]
    print(f"  lag at k = {a['k']}: head {a['mean_lag']:.2f} per group, {a['head_token_lag']:.2f} "
          f"per token; by token {a['token_lag']:.2f} (weights swapped mid-response)")
    print("  where each value comes from (lab/gpu_presets.py names the sources):")
    for what, source in g["notes"]:
        wrap(f"    {what}: {source}")


def print_gpu_sweep(w):
    print(f"GPU sweep, {w['preset']} at its split ({w['gen_gpus']} of {w['gpus']} GPUs generate): "
          f"seconds per step, synchronous (k = 0) against k = {w['k']}")
    print(f"  {'':<26}{'S':>6}{'group':>7}{'cap':>8}{'sync s':>9}{'async s':>9}{'speedup':>9}"
          f"{'max lag':>9}{'token lag':>11}")
    for r in w["rows"]:
        print(f"  {r['variant']:<26}{r['slots']:>6}{r['group_size']:>7}{r['max_len']:>8}"
              f"{r['sync_seconds']:>9.1f}{r['async_seconds']:>9.1f}{r['speedup']:>8.2f}x"
              f"{r['max_lag']:>9}{r['token_lag']:>11.2f}")
    lanes = w["lanes"]
    print(f"  Part 2's lanes on the GPU model ({lanes['n_lanes']} lanes, B = {lanes['B']}, "
          f"sigma = {lanes['sigma']}): gain over k = 0 and max lag at k = 0, 1, 2")
    for r in lanes["rows"]:
        print(f"  {r['variant']:<26}" + "".join(f"{g:>7.2f}x" for g in r["gain"])
              + "   max lag " + ", ".join(map(str, r["max_lag"])))


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
        print_length_level(level)


def print_length_level(level):
    print(f"  per-token KL(pi_infer || pi_train) = {level['kl']:g} nats (mismatch scale "
          f"{level['mismatch']:.4f}); T x KL from {level['T_kl'][0]:.3g} to {level['T_kl'][-1]:.3g}")
    for key, title in (("rmse", "relative RMSE, RMSE / ||true gradient|| (always 0 scores 1.0)"),
                       ("cosine", "cosine of the mean estimate with the true gradient"),
                       ("zero_weight_share", "share of token weights that are numerically 0")):
        print(f"    {title}")
        width = 14 if key == "rmse" else 11
        print(f"    {'T':>6}{'T x KL':>9}{'method':>12}"
              + "".join(f"{name:>{width}}" for name in level["schemes"]))
        for i, T in enumerate(level["T"]):
            cells = [f"{stats[key][i]:.3f}" + (f"+-{stats['rmse_stderr'][i]:.3f}"
                                                if key == "rmse" else "")
                     for stats in level["schemes"].values()]
            print(f"    {T:>6}{level['T_kl'][i]:>9.3g}{level['method'][i]:>12}"
                  + "".join(f"{c:>{width}}" for c in cells))
    print("    collapse (cosine < 0.5 or over half the weights 0), as T x KL: "
          + "; ".join(f"{scheme} {collapse_text(c)}" for scheme, c in level["collapse"].items()))


def collapse_text(c):
    """"at 10.1 (fine at 2.53)", "at 1 (the first T)" or "none up to 16.4"."""
    if c["at"] is None:
        return f"none up to {c['after']:.3g}"
    return f"at {c['at']:.3g} " + (f"(fine at {c['after']:.3g})" if c["after"] is not None
                                   else "(the first T)")


def print_staleness(s):
    print(f"Staleness: what each k's lag costs the gradient ({s['n_lanes']} lanes, B = {s['B']}, "
          f"sigma = {s['sigma']}, {s['n_steps']} steps; engine mismatch {s['mismatch']}, "
          f"C = {s['C']})")
    print(f"  the policy moves: one update = step {s['step']:.4g} along the exact gradient, "
          f"{s['kl']:g} nats per token (KL(pi_v-1 || pi_v) / T);\n  a response at lag l was "
          f"sampled by version v - l, KL(pi_v-l || pi_v) / T = "
          + ", ".join(f"{kl:.3f}" for kl in s["lag_kl"][1:5]) + " ... at l = 1 .. 4")
    names = {"none": "none", "token_tis": "token TIS", "seq_tis": "seq TIS"}
    print(f"  {'k':>9}{'throughput':>11}{'mean lag':>9}{'p95':>5}{'max':>5}"
          + "".join(f"{names[n] + ' RMSE':>15}{'cos':>7}" for n in s["schemes"]))
    for row in s["rows"]:
        print(f"  {row_name(row):>9}{row['throughput']:>11.2f}{row['mean_lag']:>9.2f}"
              f"{row['lag_p95']:>5}{row['max_lag']:>5}"
              + "".join(f"{v['rmse']:>15.4f}{v['cosine']:>7.3f}" for v in row["schemes"].values()))
    print("  expected gain of the toy's reward J per time unit (second order, exact): gain per "
          "update x throughput / B")
    print(f"  {'k':>9}" + "".join(f"{names[n]:>12}" for n in s["schemes"]))
    for row in s["rows"]:
        print(f"  {row_name(row):>9}"
              + "".join(f"{v['gain_per_time']:>12.5f}" for v in row["schemes"].values()))
    print("  best: " + ", ".join(f"{names[n]} at k = {row_name(s['rows'][i])}"
                                 for n, i in s["best"].items()))


def row_name(row):
    """A staleness row's k as printed: "1" or "1 drop" (k = 1 dropping stale responses)."""
    return f"{row['k']}" + (" drop" if row["drop_stale"] else "")


def print_c_sweep(c):
    print(f"C sweep: token_tis at mismatch {c['mismatch']}, batch of {c['batch_size']}")
    print(f"  {'C':>6}{'bias':>9}{'RMSE':>9}")
    for C, bias, rmse in zip(c["C"], c["bias"], c["rmse"]):
        print(f"  {C:>6}{bias:>9.4f}{rmse:>9.4f}" + ("   <- best" if C == c["best_C"] else ""))


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


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
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
                   help="also run k = 1 dropping stale responses, and show which were dropped")
    p.add_argument("--noise", choices=toy.NOISES, default="student_t",
                   help="shape of the inference engine's logit perturbation")
    p.add_argument("--C", type=bounded(float, 1), default=2.0,
                   help="truncation level of token_tis and seq_tis")
    p.add_argument("--batch-size", type=bounded(int, 1, toy.MAX_BATCH_SIZE), default=64,
                   help="responses per gradient estimate in Part 3")
    p.add_argument("--c-sweep", action="store_true",
                   help=f"sweep C over {C_SWEEP[0]:g}..{C_SWEEP[-1]:g} for token_tis at "
                        f"mismatch {LARGE_MISMATCH}")
    p.add_argument("--length-sweep", action="store_true",
                   help=f"measure every scheme at response lengths T from "
                        f"{', '.join(map(str, LENGTH_GRID))} (a per-token reward), up to "
                        f"T x KL = {COLLAPSE_BUDGET}, at each per-token KL of --length-kl")
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
                   help="predict a published run's hours on the GPU model (docs/gpu-model.md)")
    p.add_argument("--gpu-sweep", action="store_true",
                   help="how the GPU model's speedup depends on S, group size and the length cap")
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
    if key in ("scheduling", "drop_stale", "equal_hardware", "timeline", "staleness"):
        work = more("batch") * more("steps")  # simulations of B * steps responses
        if key == "equal_hardware":  # a simulation per split of the GPUs, of more lanes
            work *= more("gpus") * args.lanes_per_gpu
    elif key == "length_sweep":  # sampled batches of batch_size responses
        work = more("batch_size")
    return max(harness.TIME_LIMIT, 5 * lab.PART_SECONDS[key] * work)


def attempt(key, experiment, show, unavailable):
    """Run the part `key` of lab.PARTS under its time limit. If its task is not done yet,
    or fails, say so, note it in `unavailable` (the figure draws a placeholder) and
    return None. Ctrl-C stops this part and skips the rest; main() still saves."""
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
            return failed(part, task, todo, unavailable)
        print(f"{part}: skipped, {todo}.")
        named = re.match(r"Task (\d[a-z]?)", str(todo))  # a part may need two tasks
        unavailable[part] = f"Task {named[1] if named else task} not implemented yet"
        return None
    except KeyboardInterrupt:
        print(f"{part}: interrupted (Ctrl-C); saving the parts done so far.")
        session["stopped"] = part
        unavailable[part] = "not run: the run was interrupted"
        return None
    except BaseException as error:  # noqa: BLE001 (a bug in a task, a time limit, an exit)
        return failed(part, task, error, unavailable)
    show(result)
    return result


def failed(part, task, error, unavailable):
    """Report a part that failed: in a task file (or its checks), or in given code."""
    if isinstance(error, harness.TimeLimitExceeded):
        print(f"{part}: stopped after {session['limit']:.3g} s, its time limit: {error}"
              f"{harness.where(error)}\n"
              f"  run `python -m pytest -q -k task{task}` to find out why.")
        unavailable[part] = f"Task {task} ran too long: see its tests"
    elif harness.raised_in_given_code(error) and not isinstance(
            error, (SchedulerError, ContractError, lab.TaskFileError)):
        frame = harness.lab_frames(error)[-1]
        print(f"{part}: failed in given code, not in your file: {type(error).__name__}: {error}"
              f"\n  at {Path(frame.filename).relative_to(harness.ROOT)}, line {frame.lineno}. "
              f"If the tests of Task {task} pass, this is a bug in the lab: please report it.")
        unavailable[part] = f"{part} failed in given code"
    else:
        print(f"{part}: failed with {harness.describe(error)}\n"
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
    from lab import gpu_figure
    for key, draw_extra in (("equal_hardware", figure.draw_equal_hardware),
                            ("timeline", figure.draw_timeline),
                            ("staleness", figure.draw_staleness),
                            ("gpu_model", gpu_figure.draw)):
        if key in results:
            drawings[out.with_name(f"{out.stem}_{key}.png")] = draw_extra
    for path, draw in drawings.items():
        harness.write_atomically(path, write=lambda tmp, draw=draw: draw(results, tmp))
    results["images"] = [path.name for path in drawings]
    # numpy numbers (a student's np.int64, say) are written as plain numbers
    text = json.dumps(results, indent=1, default=lambda number: number.item())
    harness.write_atomically(out.with_suffix(".json"), text)
    print(f"\nSaved {', '.join(map(str, drawings))} and {out.with_suffix('.json')}")


def gpu_model(choice, skipped):
    """Each chosen preset on the GPU model, {name: result}; None once one cannot run."""
    runs = {}
    for name in (PRESETS if choice == "all" else [choice]):
        print()
        runs[name] = attempt("gpu_model", lambda name=name: gpu_comparison(
            lab.load("scheduler"), lab.load("memory"), name), print_gpu_model, skipped)
        if runs[name] is None:
            return None
    return runs


def main(argv=None):
    args = parse_args(argv)
    if getattr(args, "solutions", False):
        lab.choose_reference()
    try:
        code = lab.code_under_test()
    except ValueError as error:
        sys.exit(f"run.py: {error}")
    print(f"Running {code}\n")
    sched = dict(n_lanes=args.lanes, B=args.batch, n_steps=args.steps,
                 train_time=args.train_time, sigma=args.sigma)
    results = dict(code=code, unavailable={})
    session.update(results=results, out=args.out, args=args,
                   watchdog=harness.Watchdog(abort=stuck))
    skipped = results["unavailable"]
    results["memory"] = attempt("memory", lambda: memory_table(lab.load("memory"),
                                                               args.max_tokens),
                                print_memory, skipped)
    print()
    results["scheduling"] = attempt(
        "scheduling", lambda: scheduling_sweep(lab.load("scheduler"), **sched),
        print_scheduling, skipped)
    if args.drop_stale:
        results["drop_stale"] = attempt(
            "drop_stale", lambda: drop_stale_analysis(lab.load("scheduler"), **sched),
            print_drop_stale, skipped)
    if args.equal_hardware:
        train_work = args.gpus * args.train_time if args.train_work is None else args.train_work
        results["equal_hardware"] = attempt(
            "equal_hardware", lambda: equal_hardware(
                lab.load("scheduler"), lab.load("memory"), args.gpus, args.lanes_per_gpu,
                train_work, B=args.batch, n_steps=args.steps, sigma=args.sigma),
            print_equal_hardware, skipped)
    if args.timeline:
        results["timeline"] = attempt(
            "timeline", lambda: timeline(lab.load("scheduler"), drop_stale=args.drop_stale, **sched),
            print_timeline, skipped)
    if args.preset:
        results["gpu_model"] = gpu_model(args.preset, skipped)
    if args.gpu_sweep:
        print()
        results["gpu_sweep"] = attempt(
            "gpu_sweep", lambda: gpu_sweep(lab.load("scheduler"), lab.load("memory")),
            print_gpu_sweep, skipped)
    print()
    results["mismatch"] = attempt(
        "mismatch", lambda: mismatch_sweep(lab.load("tis"), args.C, args.batch_size, args.noise),
        print_mismatch, skipped)
    results["masking"] = attempt(
        "masking", lambda: masked_sweep(lab.load("tis"), args.batch_size, args.noise),
        print_masking, skipped)
    if args.c_sweep:
        results["c_sweep"] = attempt(
            "c_sweep", lambda: c_sweep(lab.load("tis"), batch_size=args.batch_size,
                                       noise=args.noise),
            print_c_sweep, skipped)
    if args.length_sweep:
        print()
        results["length_sweep"] = attempt(
            "length_sweep", lambda: length_sweep(lab.load("tis"), args.length_kl,
                                                 args.batch_size, args.C, args.noise),
            print_length_sweep, skipped)

    if args.staleness:
        print()
        if results["scheduling"] is None:
            print("Staleness: skipped, it needs Part 2 (Task 2, scheduler.py) working first.")
            skipped[lab.PARTS["staleness"][0]] = "needs Part 2 (Task 2) first"
        else:
            results["staleness"] = attempt(
                "staleness", lambda: staleness_sweep(
                    lab.load("scheduler"), lab.load("tis"), args.lanes, args.batch,
                    n_steps=args.steps, train_time=args.train_time, sigma=args.sigma,
                    kl=args.staleness_kl, mismatch=args.staleness_mismatch, C=args.C,
                    noise=args.noise),
                print_staleness, skipped)

    save(results, args.out)
    if session.get("stopped"):
        sys.exit(130)  # interrupted: the files hold the parts done, the exit status says so


if __name__ == "__main__":
    main()
