"""How fast run.py and the test suite are, against bare imports (for instructors; not a test).

    python tools/benchmark.py            # 5 runs each, medians
    python tools/benchmark.py --runs 9

Wall-clock times depend on the machine, so the targets are ratios to a bare
`python -c "import numpy, matplotlib.pyplot"` on the same machine, with the
reference solutions (RL_SOLUTIONS=1) so every part runs:

    run.py (default flags) / bare imports   target <= 3
    the test suite         / bare imports   target <= 2

Measure in a fresh virtual environment: pytest plugins installed system-wide
(pytest-benchmark, say) slow the suite down and a student's venv has none.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"run.py": 3.0, "test suite": 2.0}


def seconds(command):
    """Wall-clock seconds of one run of `command` (in ROOT, with the reference code)."""
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=dict(os.environ, RL_SOLUTIONS="1"), check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (median taken)")
    runs = parser.parse_args(argv).runs
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        commands = {"bare imports": [python, "-c", "import numpy, matplotlib.pyplot"],
                    "run.py": [python, "run.py", "--out", str(Path(tmp, "bench.png"))],
                    "test suite": [python, "-m", "pytest", "-q"]}
        seconds(commands["run.py"])  # warm the file cache and matplotlib's font cache
        # Round robin, so a machine that gets busier slows all three alike.
        times = {name: [] for name in commands}
        for _ in range(runs):
            for name, command in commands.items():
                times[name].append(seconds(command))
        median = {name: statistics.median(t) for name, t in times.items()}
    bare = median["bare imports"]
    print(f"{python}, median of {runs} runs, reference solutions")
    print(f"  bare imports  {bare:6.2f} s")
    ok = True
    for name, target in TARGETS.items():
        ratio = median[name] / bare
        ok &= ratio <= target
        print(f"  {name:<13} {median[name]:6.2f} s  = {ratio:4.2f}x bare imports "
              f"(target <= {target:g}x){'' if ratio <= target else '  OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
