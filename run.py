"""Run Lab 20's three experiments: print the results, save rl_systems.png and rl_systems.json.

    python run.py                  # your code; tasks not done yet become placeholders
    RL_SOLUTIONS=1 python run.py   # the reference solutions
    python run.py --help           # the "things to try", as flags

Same flags, same numbers: every run is deterministic.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import lab
import toy
from models import MODELS, ROUND_7B

GPU_GB = 80  # memory of one H100
KS = (0, 1, 2, 3, 4, 6, 8)
MISMATCHES = tuple(round(0.1 * i, 1) for i in range(11))  # 0.0, 0.1, ..., 1.0
LARGE_MISMATCH = 0.6
BATCH_SIZES = (1, 4, 16, 64, 256)
C_SWEEP = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 10.0)
SCHEMES = ("none", "token", "token_tis", "seq", "seq_tis")
LONG = 4  # a response "long" if over 4x the mean length (which is 1)


# ---------------------------------------------------------------- Part 1: memory (Task 1)

def memory_table():
    """Model-state GB of PPO, GRPO and GRPO + LoRA (rank 16) for the lab's 7B and real models."""
    memory = lab.load("memory")
    rows = []
    for model in [ROUND_7B] + MODELS:
        adapter = model.lora_params()
        row = dict(model=model.name, params=model.params, lora_params=adapter,
                   ppo_gb=memory.rl_memory_gb("ppo", model.params),
                   grpo_gb=memory.rl_memory_gb("grpo", model.params),
                   grpo_lora_gb=memory.rl_memory_gb("grpo", model.params, lora_params=adapter),
                   kv_bytes_per_token=memory.kv_cache_bytes(model.layers, model.kv_heads,
                                                            model.head_dim, 1))
        row["gpus_for_ppo"] = math.ceil(row["ppo_gb"] / GPU_GB)
        rows.append(row)
    lab_7b = rows[0]
    return dict(ppo_7b_gb=lab_7b["ppo_gb"], grpo_7b_gb=lab_7b["grpo_gb"],
                grpo_lora_7b_gb=lab_7b["grpo_lora_gb"],
                kv_bytes_per_token=lab_7b["kv_bytes_per_token"],
                kv_64x16k_gb=memory.kv_cache_bytes(ROUND_7B.layers, ROUND_7B.kv_heads,
                                                   ROUND_7B.head_dim, 64 * 16_384) / 1e9,
                h100s_for_ppo_7b=lab_7b["gpus_for_ppo"], models=rows)


def print_memory(m):
    print("Part 1: model state (weights, gradients, optimizer), GB = 10^9 bytes; LoRA rank 16")
    print(f"  {'model':<24}{'params':>8}{'KV/token':>10}{'PPO':>9}{'GRPO':>9}"
          f"{'GRPO+LoRA':>11}{'80GB GPUs for PPO':>19}")
    for r in m["models"]:
        print(f"  {r['model']:<24}{r['params'] / 1e9:>7.2f}B{r['kv_bytes_per_token'] / 1024:>6.0f} KiB"
              f"{r['ppo_gb']:>9.1f}{r['grpo_gb']:>9.1f}{r['grpo_lora_gb']:>11.1f}"
              f"{r['gpus_for_ppo']:>19}")
    print(f"  KV cache on top: 64 responses x 16k tokens on the 7B = {m['kv_64x16k_gb']:.1f} GB")


# ---------------------------------------------------------------- Part 2: scheduling (Task 2)

def scheduling_sweep(n_lanes, B, ks=KS, n_steps=200, train_time=1.0, sigma=1.25):
    """Throughput, lane utilization and mean lag for each staleness bound k (ks[0] must be 0)."""
    scheduler = lab.load("scheduler")
    runs = [scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time,
                               sigma=sigma) for k in ks]
    return dict(n_lanes=n_lanes, B=B, n_steps=n_steps, sigma=sigma, train_time=train_time,
                k=list(ks), throughput=[r["throughput"] for r in runs],
                throughput_gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                utilization=[r["utilization"] for r in runs],
                mean_lag=[r["mean_lag"] for r in runs])


def print_scheduling(s):
    print(f"Part 2: {s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, "
          f"train_time = {s['train_time']}, {s['n_steps']} steps")
    print(f"  {'k':>3}{'throughput':>12}{'gain':>8}{'lanes busy':>12}{'mean lag':>10}")
    for i, k in enumerate(s["k"]):
        print(f"  {k:>3}{s['throughput'][i]:>12.2f}{s['throughput_gain'][i]:>7.2f}x"
              f"{s['utilization'][i]:>12.0%}{s['mean_lag'][i]:>10.2f}")


def drop_stale_analysis(n_lanes, B, k=1, n_steps=200, train_time=1.0, sigma=1.25):
    """Run with stale responses dropped: how many, how much work lost, and which ones."""
    scheduler = lab.load("scheduler")
    r = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma,
                           drop_stale=True)
    dropped = [s["length"] for s in r["trace"] if s["dropped"]]
    trained = [s["length"] for s in r["trace"] if s["lag"] is not None]
    keep = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma)
    return dict(k=k, n_started=len(r["trace"]), n_dropped=len(dropped),
                wasted_frac=r["wasted_frac"], throughput=r["throughput"],
                throughput_keeping_stale=keep["throughput"],
                mean_length_dropped=sum(dropped) / max(len(dropped), 1),
                mean_length_trained=sum(trained) / len(trained),
                long_share_dropped=sum(x > LONG for x in dropped) / max(len(dropped), 1),
                long_share_trained=sum(x > LONG for x in trained) / len(trained))


def print_drop_stale(d):
    print(f"Drop stale (k = {d['k']}): {d['n_dropped']} of {d['n_started']} responses dropped, "
          f"{d['wasted_frac']:.1%} of generation time wasted")
    print(f"  mean length: dropped {d['mean_length_dropped']:.2f}, trained "
          f"{d['mean_length_trained']:.2f} (the mean of all lengths is 1)")
    print(f"  longer than {LONG}x the mean: {d['long_share_dropped']:.0%} of dropped, "
          f"{d['long_share_trained']:.1%} of trained")
    print(f"  throughput {d['throughput']:.2f} vs {d['throughput_keeping_stale']:.2f} keeping "
          "them; dropping is a filter against long responses")


# ---------------------------------------------------------------- Part 3: mismatch (Task 3)

def mismatch_sweep(C=2.0, batch_size=64, noise="student_t"):
    """Exact bias, variance and RMSE of the five estimators against the mismatch,
    and against the batch size at LARGE_MISMATCH."""
    schemes = {}
    for scheme in SCHEMES:
        stats = [toy.exact_stats(scheme, m, C, batch_size, noise) for m in MISMATCHES]
        schemes[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance", "rmse")}
    by_batch_size = dict(mismatch=LARGE_MISMATCH, batch_size=list(BATCH_SIZES))
    for scheme in SCHEMES:
        stats = [toy.exact_stats(scheme, LARGE_MISMATCH, C, n, noise) for n in BATCH_SIZES]
        by_batch_size[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance")}
    return dict(mismatch=list(MISMATCHES), batch_size=batch_size, C=C, noise=noise,
                schemes=schemes, by_batch_size=by_batch_size)


def print_mismatch(m):
    print(f"Part 3: RMSE of the gradient estimate (batch of {m['batch_size']}, C = {m['C']}, "
          f"{m['noise']} noise)")
    print(f"  {'mismatch':>8}" + "".join(f"{s:>11}" for s in SCHEMES))
    for i, x in enumerate(m["mismatch"]):
        print(f"  {x:>8.1f}" + "".join(f"{m['schemes'][s]['rmse'][i]:>11.4f}" for s in SCHEMES))


def c_sweep(Cs=C_SWEEP, mismatch=LARGE_MISMATCH, batch_size=64, noise="student_t"):
    """Bias and RMSE of token_tis against the truncation level C."""
    stats = [toy.exact_stats("token_tis", mismatch, C, batch_size, noise) for C in Cs]
    rmse = [s["rmse"] for s in stats]
    return dict(mismatch=mismatch, batch_size=batch_size, noise=noise, C=list(Cs),
                bias=[s["bias"] for s in stats], rmse=rmse, best_C=Cs[rmse.index(min(rmse))])


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
    p.add_argument("--out", type=png_path, default=Path("rl_systems.png"),
                   help="where to save the figure; the numbers go next to it as .json")
    return p.parse_args(argv)


def png_path(text):
    """An argparse type: a .png file in a folder that exists."""
    path = Path(text)
    if path.suffix != ".png" or not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"must be a .png file in an existing folder, got {text!r}")
    return path


def attempt(part, task, experiment, show, unavailable):
    """Run one part of the lab. If its task is not done yet, or fails, say so, note
    it in `unavailable` (the figure draws a placeholder) and return None."""
    try:
        result = experiment()
    except NotImplementedError as todo:
        print(f"{part}: skipped, {todo}.")
        unavailable[part] = f"Task {task} not implemented yet"
        return None
    except Exception as error:  # noqa: BLE001 (a bug in a task: report it, draw the rest)
        print(f"{part}: failed with {type(error).__name__}: {error}\n"
              f"  run `python -m pytest -q -k task{task}` to find out why.")
        unavailable[part] = f"Task {task} failed: see its tests"
        return None
    show(result)
    return result


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
    results["memory"] = attempt("Part 1", 1, memory_table, print_memory, results["unavailable"])
    print()
    results["scheduling"] = attempt("Part 2", 2, lambda: scheduling_sweep(**sched),
                                    print_scheduling, results["unavailable"])
    if args.drop_stale:
        results["drop_stale"] = attempt("Drop stale", 2, lambda: drop_stale_analysis(**sched),
                                        print_drop_stale, results["unavailable"])
    print()
    results["mismatch"] = attempt(
        "Part 3", 3, lambda: mismatch_sweep(args.C, args.batch_size, args.noise),
        print_mismatch, results["unavailable"])
    if args.c_sweep:
        results["c_sweep"] = attempt(
            "C sweep", 3, lambda: c_sweep(batch_size=args.batch_size, noise=args.noise),
            print_c_sweep, results["unavailable"])

    import figure  # matplotlib loads only here, so importing run.py stays fast
    figure.draw(results, args.out)
    # numpy numbers (a student's np.int64, say) are written as plain numbers
    text = json.dumps(results, indent=1, default=lambda number: number.item())
    args.out.with_suffix(".json").write_text(text)
    print(f"\nSaved {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
