"""Run Lab 20's three experiments: print the results, save rl_systems.png and rl_systems.json.

    python run.py                  # your code; tasks not done yet become placeholders
    RL_SOLUTIONS=1 python run.py   # the reference solutions
    python run.py --help           # the "things to try", as flags

Same flags, same numbers: every run is deterministic. This is a script: the
experiments it runs live in lab/experiments.py, the figure in lab/figure.py.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import lab
import toy
from lab import SCHEMES, harness
from scheduler_core import SchedulerError
from lab.experiments import (C_SWEEP, LARGE_MISMATCH, LONG, c_sweep, drop_stale_analysis,
                             memory_table, mismatch_sweep, scheduling_sweep)

# ---------------------------------------------------------------- printing

def print_memory(m):
    print("Part 1: model state (weights, gradients, optimizer), GB = 10^9 bytes; LoRA rank 16")
    print(f"  {'model':<24}{'params':>8}{'KV/token':>10}{'PPO':>9}{'GRPO':>9}"
          f"{'GRPO+LoRA':>11}{'80GB GPUs for PPO':>19}")
    for r in m["models"]:
        print(f"  {r['model']:<24}{r['params'] / 1e9:>7.2f}B{r['kv_bytes_per_token'] / 1024:>6.0f} KiB"
              f"{r['ppo_gb']:>9.1f}{r['grpo_gb']:>9.1f}{r['grpo_lora_gb']:>11.1f}"
              f"{r['gpus_for_ppo']:>19}")
    print(f"  KV cache on top: 64 responses x 16k tokens on the 7B = {m['kv_64x16k_gb']:.1f} GB")


def print_scheduling(s):
    print(f"Part 2: {s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, "
          f"train_time = {s['train_time']}, {s['n_steps']} steps")
    print(f"  {'k':>3}{'throughput':>12}{'gain':>8}{'lanes busy':>12}{'mean lag':>10}")
    for i, k in enumerate(s["k"]):
        print(f"  {k:>3}{s['throughput'][i]:>12.2f}{s['throughput_gain'][i]:>7.2f}x"
              f"{s['utilization'][i]:>12.0%}{s['mean_lag'][i]:>10.2f}")


def print_drop_stale(d):
    print(f"Drop stale (k = {d['k']}): {d['n_dropped']} of {d['n_started']} responses dropped, "
          f"{d['wasted_frac']:.1%} of generation time wasted")
    print(f"  mean length: dropped {d['mean_length_dropped']:.2f}, trained "
          f"{d['mean_length_trained']:.2f} (the mean of all lengths is 1)")
    print(f"  longer than {LONG}x the mean: {d['long_share_dropped']:.0%} of dropped, "
          f"{d['long_share_trained']:.1%} of trained")
    print(f"  throughput {d['throughput']:.2f} vs {d['throughput_keeping_stale']:.2f} keeping "
          "them; dropping is a filter against long responses")


def print_mismatch(m):
    print(f"Part 3: RMSE of the gradient estimate (batch of {m['batch_size']}, C = {m['C']}, "
          f"{m['noise']} noise)")
    print(f"  {'mismatch':>8}" + "".join(f"{s:>11}" for s in SCHEMES))
    for i, x in enumerate(m["mismatch"]):
        print(f"  {x:>8.1f}" + "".join(f"{m['schemes'][s]['rmse'][i]:>11.4f}" for s in SCHEMES))


def print_c_sweep(c):
    print(f"C sweep: token_tis at mismatch {c['mismatch']}, batch of {c['batch_size']}")
    print(f"  {'C':>6}{'bias':>9}{'RMSE':>9}")
    for C, bias, rmse in zip(c["C"], c["bias"], c["rmse"]):
        print(f"  {C:>6}{bias:>9.4f}{rmse:>9.4f}" + ("   <- best" if C == c["best_C"] else ""))


# ---------------------------------------------------------------- the command line

def bounded(kind, low):
    """An argparse type: a `kind` (int or float) >= low, else a clear error."""
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value < math.inf:
            raise argparse.ArgumentTypeError(
                f"must be {'a whole number' if kind is int else 'a finite number'} >= {low}, "
                f"got {text!r}")
        return value
    return parse


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--lanes", type=bounded(int, 1), default=16, help="generation lanes")
    p.add_argument("-B", "--batch", type=bounded(int, 1), default=32,
                   help="B, responses per training batch")
    p.add_argument("--steps", type=bounded(int, 1), default=200,
                   help="training steps per simulated run")
    p.add_argument("--train-time", type=bounded(float, 0), default=1.0,
                   help="time units per update; try 3.0, where the trainer is the bottleneck")
    p.add_argument("--sigma", type=bounded(float, 0), default=1.25,
                   help="lognormal shape of response lengths; larger = heavier tail")
    p.add_argument("--drop-stale", action="store_true",
                   help="also run k = 1 dropping stale responses, and show which were dropped")
    p.add_argument("--noise", choices=toy.NOISES, default="student_t",
                   help="shape of the inference engine's logit perturbation")
    p.add_argument("--C", type=bounded(float, 1), default=2.0,
                   help="truncation level of token_tis and seq_tis")
    p.add_argument("--batch-size", type=bounded(int, 1), default=64,
                   help="responses per gradient estimate in Part 3")
    p.add_argument("--c-sweep", action="store_true",
                   help=f"sweep C over {C_SWEEP[0]:g}..{C_SWEEP[-1]:g} for token_tis at "
                        f"mismatch {LARGE_MISMATCH}")
    p.add_argument("--out", type=png_path, default="rl_systems.png",
                   help="where to save the figure; the numbers go next to it as .json")
    return p.parse_args(argv)


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


PART_LIMIT = 12 * harness.TIME_LIMIT  # 60 s per part; the reference needs about 2 (Part 3)
session = {}     # main() fills it: the watchdog, the results so far and their file; Ctrl-C
                 # sets "stopped", after which the parts left are not run


def attempt(key, experiment, show, unavailable):
    """Run the part `key` of lab.PARTS under a time limit. If its task is not done yet,
    or fails, say so, note it in `unavailable` (the figure draws a placeholder) and
    return None. Ctrl-C stops this part and skips the rest; main() still saves."""
    part, task = lab.PARTS[key]
    if session.get("stopped"):
        unavailable[part] = "not run: the run was interrupted"
        return None
    file = lab.file_of(next(t for t in lab.TASKS if t.startswith(task)))
    try:
        with harness.time_limit(f"{part} (Task {task}, {file})", session.get("watchdog"),
                                PART_LIMIT):
            result = experiment()
    except NotImplementedError as todo:
        if not str(todo):
            return failed(part, task, todo, unavailable)
        print(f"{part}: skipped, {todo}.")
        unavailable[part] = f"Task {task} not implemented yet"
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
        print(f"{part}: stopped after {PART_LIMIT:g} s, its time limit: {error}{where(error)}\n"
              f"  run `python -m pytest -q -k task{task}` to find out why.")
        unavailable[part] = f"Task {task} ran too long: see its tests"
    elif harness.raised_in_given_code(error) and not isinstance(error, (SchedulerError,
                                                                          lab.TaskFileError)):
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


def where(error):
    """' (stopped in scheduler.py, line 37, in may_start: ...)', or '' outside task files."""
    frame = harness.student_frame(error)
    return f" (stopped in {harness.location(frame)})" if frame else ""


def stuck(label, seconds):
    """The backstop (from the watchdog thread): a part ignored its limit. Save the rest."""
    print(f"\n{label} ignored its {PART_LIMIT:g} s time limit and was still running after "
          f"{seconds:.0f} s (does it catch every exception, or turn off signals?); stopping.")
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
    harness.write_atomically(out, write=lambda path: figure.draw(results, path))
    results["images"] = [out.name]
    # numpy numbers (a student's np.int64, say) are written as plain numbers
    text = json.dumps(results, indent=1, default=lambda number: number.item())
    harness.write_atomically(out.with_suffix(".json"), text)
    print(f"\nSaved {out} and {out.with_suffix('.json')}")


def main(argv=None):
    args = parse_args(argv)
    try:
        code = lab.code_under_test()
    except ValueError as error:
        sys.exit(f"run.py: {error}")
    print(f"Running {code}\n")
    sched = dict(n_lanes=args.lanes, B=args.batch, n_steps=args.steps,
                 train_time=args.train_time, sigma=args.sigma)
    results = dict(code=code, unavailable={})
    session.update(results=results, out=args.out, watchdog=harness.Watchdog(abort=stuck))
    skipped = results["unavailable"]
    results["memory"] = attempt("memory", lambda: memory_table(lab.load("memory")),
                                print_memory, skipped)
    print()
    results["scheduling"] = attempt(
        "scheduling", lambda: scheduling_sweep(lab.load("scheduler"), **sched),
        print_scheduling, skipped)
    if args.drop_stale:
        results["drop_stale"] = attempt(
            "drop_stale", lambda: drop_stale_analysis(lab.load("scheduler"), **sched),
            print_drop_stale, skipped)
    print()
    results["mismatch"] = attempt(
        "mismatch", lambda: mismatch_sweep(lab.load("tis"), args.C, args.batch_size, args.noise),
        print_mismatch, skipped)
    if args.c_sweep:
        results["c_sweep"] = attempt(
            "c_sweep", lambda: c_sweep(lab.load("tis"), batch_size=args.batch_size,
                                       noise=args.noise),
            print_c_sweep, skipped)

    save(results, args.out)
    if session.get("stopped"):
        sys.exit(130)  # interrupted: the files hold the parts done, the exit status says so

if __name__ == "__main__":
    main()
