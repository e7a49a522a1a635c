"""Docs that can't drift: reference snapshots of run.py's numbers, and the README's quotes of them.

    python tools/snapshots.py            # check (CI runs it)
    python tools/snapshots.py --update   # after a deliberate change: rewrite the snapshots
    python tools/snapshots.py --student-readme OUT/student/README.md   # a release's too

1. For each run in RUNS, run.py with the reference solutions writes rl_systems.json, and
   every number in it must match tools/snapshots/<name>.json within
   |fresh - snapshot| <= ATOL + RTOL * |snapshot|. The absolute part is for numbers near
   0 (a bias of 1e-16 changes by a large factor when the arithmetic is reordered).
2. Every number README.md quotes from a run is listed in QUOTES, with the words around
   it; the snapshot's value, formatted as quoted, must appear there in README.md. A
   README number not in QUOTES is not checked, so add it when you write it.
3. --student-readme: a release's README must be the one tools/release.py makes from
   README.md, and holds the same checked numbers (those outside instructor parts).

To add an experiment flag: add a line to RUNS, run --update, and add its README quotes
to QUOTES.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
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
}

# (the README's words, with {} where the number goes; snapshot; path in the JSON; format)
QUOTES = [
    # What you should see: Part 1
    ("needs {} GB of model state", "default", "memory.ppo_7b_gb", "{:.0f}"),
    ("{} H100s (80 GB) just to hold", "default", "memory.h100s_for_ppo_7b", "{}"),
    ("GRPO halves that to {} GB", "default", "memory.grpo_7b_gb", "{:.0f}"),
    ("40M adapter parameters) needs {} GB", "default", "memory.grpo_lora_7b_gb", "{:.1f}"),
    ("64 responses of 16k tokens take {} GB", "default", "memory.kv_64x16k_gb", "{:.1f}"),
    ("(Qwen2.5-72B with PPO: {} GB", "default", "memory.models.4.ppo_gb", "{:,.0f}"),
    ("Qwen2.5-72B with PPO: 2,618 GB, {} GPUs)", "default", "memory.models.4.gpus_for_ppo",
     "{}"),
    # Part 2
    ("keeps the lanes busy {} of the time", "default", "scheduling.utilization.0", "{:.0%}"),
    ("(k = 1) gives {}× the throughput", "default", "scheduling.throughput_gain.1", "{:.2f}"),
    ("k = 2 adds almost nothing ({}×)", "default", "scheduling.throughput_gain.2", "{:.2f}"),
    ("a mean of 0 at k = 0, {} at k = 1", "default", "scheduling.mean_lag.1", "{:.2f}"),
    ("and {} from k = 2 on", "default", "scheduling.mean_lag.2", "{:.2f}"),
    # Part 3
    ("grows linearly with the mismatch ({},", "default", "mismatch.schemes.none.bias.1", "{:.3f}"),
    ("with the mismatch (0.037, {},", "default", "mismatch.schemes.none.bias.2", "{:.3f}"),
    ("0.076, {} at 0.1, 0.2, 0.4)", "default", "mismatch.schemes.none.bias.4", "{:.3f}"),
    ("its RMSE climbs to {} at mismatch 1.0", "default", "mismatch.schemes.seq.rmse.10", "{:.1f}"),
    ("at large mismatch: {} (token TIS)", "default", "mismatch.schemes.token_tis.rmse.6",
     "{:.3f}"),
    ("and {} (sequence TIS) at 0.6", "default", "mismatch.schemes.seq_tis.rmse.6", "{:.3f}"),
    ("against {} (token IS)", "default", "mismatch.schemes.token.rmse.6", "{:.3f}"),
    ("(token IS), {} (naive)", "default", "mismatch.schemes.none.rmse.6", "{:.3f}"),
    ("(naive) and {} (sequence IS)", "default", "mismatch.schemes.seq.rmse.6", "{:.3f}"),
    ("sequence TIS's RMSE falls from {}", "default", "mismatch.schemes.seq_tis.rmse.0", "{:.3f}"),
    ("RMSE falls from 0.117 at mismatch 0 to {} at 1.0", "default",
     "mismatch.schemes.seq_tis.rmse.10", "{:.3f}"),
    ("its variance falls from {}", "default", "mismatch.schemes.seq_tis.variance.0", "{:.4f}"),
    ("its variance falls from 0.0137 to {}", "default", "mismatch.schemes.seq_tis.variance.10",
     "{:.4f}"),
    ("while its bias grows only to {}", "default", "mismatch.schemes.seq_tis.bias.10", "{:.3f}"),
    # Things to try
    ("drops from 4.08× to {}×", "train_time_3", "scheduling.throughput_gain.1", "{:.2f}"),
    ("and levels off at {}×", "train_time_3", "scheduling.throughput_gain.-1", "{:.2f}"),
    ("with the lanes busy at most {} of the time", "train_time_3", "scheduling.utilization.-1",
     "{:.0%}"),
    ("keeps growing with k ({} at k = 8)", "train_time_3", "scheduling.mean_lag.-1", "{:.2f}"),
    ("{} of 7,128 responses are dropped", "drop_stale", "drop_stale.n_dropped", "{:,}"),
    ("696 of {} responses are dropped", "drop_stale", "drop_stale.n_started", "{:,}"),
    ("{} of all generation time", "drop_stale", "drop_stale.wasted_frac", "{:.0%}"),
    ("have a mean length of {}", "drop_stale", "drop_stale.mean_length_dropped", "{:.2f}"),
    ("against {} for the trained ones", "drop_stale", "drop_stale.mean_length_trained", "{:.2f}"),
    ("{} of them are over 4×", "drop_stale", "drop_stale.long_share_dropped", "{:.0%}"),
    ("{} of the trained ones are", "drop_stale", "drop_stale.long_share_trained", "{:.0%}"),
    ("the synchronous lanes are already {} busy", "sigma_0.5", "scheduling.utilization.0",
     "{:.0%}"),
    ("asynchrony gains only {}×", "sigma_0.5", "scheduling.throughput_gain.1", "{:.1f}"),
    ("The RMSE is lowest at C = {}", "c_sweep", "c_sweep.best_C", "{:g}"),
    ("lowest at C = 1.25 ({})", "c_sweep", "c_sweep.rmse.1", "{:.3f}"),
    ("It rises to {} once C", "c_sweep", "c_sweep.rmse.-1", "{:.3f}"),
    ("The bias falls from {} at C = 1", "c_sweep", "c_sweep.bias.0", "{:.3f}"),
    ("to {} from C = 6 on", "c_sweep", "c_sweep.bias.7", "{:.3f}"),
    ("({} at C = 1.5,", "c_sweep", "c_sweep.bias.2", "{:.4f}"),
    ("{} at 2.5,", "c_sweep", "c_sweep.bias.4", "{:.4f}"),
    ("{} at 3.0)", "c_sweep", "c_sweep.bias.5", "{:.4f}"),
    ("its RMSE at mismatch 1.0 is {}", "noise_gaussian", "mismatch.schemes.seq.rmse.10",
     "{:.2f}"),
    ("is 1.96 instead of {}", "default", "mismatch.schemes.seq.rmse.10", "{:.2f}"),
    ("stays low under both ({}", "noise_gaussian", "mismatch.schemes.seq_tis.rmse.10", "{:.2f}"),
    ("under both (0.14 and {})", "default", "mismatch.schemes.seq_tis.rmse.10", "{:.2f}"),
]


def value_at(results, path):
    """results["a"]["b"][2] for path "a.b.2" (negative indexes count from the end)."""
    for key in path.split("."):
        results = results[int(key)] if re.fullmatch(r"-?\d+", key) else results[key]
    return results


def fresh_run(flags, tmp):
    out = Path(tmp, "rl_systems.png")
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


def quote_problems(readme, snapshots, only=None):
    """The QUOTES that README text `readme` does not hold with the snapshot's number."""
    text, problems = flat(readme), []
    for words, name, path, fmt in QUOTES:
        expected = flat(words.format(fmt.format(value_at(snapshots[name], path))))
        if (only is None or expected in only) and expected not in text:
            problems.append(f"README should say {expected!r} (snapshot {name}, {path})")
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots")
    parser.add_argument("--student-readme", type=Path, help="also check this release README")
    args = parser.parse_args(argv)
    problems = []
    snapshots = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags in RUNS.items():
            fresh, path = fresh_run(flags, tmp), SNAPSHOTS / f"{name}.json"
            if args.update or not path.exists():
                SNAPSHOTS.mkdir(exist_ok=True)
                path.write_text(json.dumps(fresh, indent=1) + "\n")
            snapshots[name] = json.loads(path.read_text())
            found = differences(fresh, snapshots[name])
            print(f"run.py {' '.join(flags) or '(default flags)'}: "
                  f"{'matches' if not found else 'DIFFERS from'} tools/snapshots/{name}.json")
            problems += [f"{name}: {problem}" for problem in found]
    readme = (ROOT / "README.md").read_text()
    found = quote_problems(readme, snapshots)
    print(f"README.md: {len(QUOTES) - len(found)} of {len(QUOTES)} quoted numbers match")
    problems += found
    if args.student_readme:
        sys.path.insert(0, str(ROOT))
        from tools.release import student_readme
        made = student_readme(readme)
        if args.student_readme.read_text() != made:
            problems.append(f"{args.student_readme} is not what tools/release.py makes now")
        quotes = [flat(w.format(f.format(value_at(snapshots[n], p)))) for w, n, p, f in QUOTES]
        kept = [quote for quote in quotes if quote in flat(made)]  # not in instructor parts
        found = quote_problems(args.student_readme.read_text(), snapshots, only=set(kept))
        print(f"{args.student_readme}: {len(kept) - len(found)} of {len(kept)} quoted numbers "
              "match")
        problems += found
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
