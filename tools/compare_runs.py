"""Run every run.py flag on two versions of the lab and diff what a user sees: for a
refactor that must change no number.

    python tools/compare_runs.py HEAD main~3        # two git commits (anything git names)
    python tools/compare_runs.py OLD_FOLDER .       # or folders (used as they are)
    python tools/compare_runs.py A B --only default timeline

A commit is unpacked into a temporary folder (git archive). Each flag set of flag_sets()
runs with the reference solutions (RL_SOLUTIONS=1; "stubs" and "solutions_flag" without),
A's run then B's, one job at a time (the timing of the parts is load-dependent). Per flag
set it compares:
- the exit code and the printed output (stdout, then stderr), exactly, once the folder
  names are written as <lab> and <out>;
- the names of the files run.py wrote beside --out;
- each .json value by value, exactly (numbers with ==, NaN equal to NaN); run.py writes
  no timing, so no field is ignored (IGNORED is empty);
- each .png: the same bytes (matplotlib's PNGs are deterministic), or else the same
  pixels, decoded (a note says so).
It prints a line per flag set, identical or its differences, and exits 1 if any differ or
a flag of A's --help is in no flag set.
"""

import argparse
import difflib
import io
import json
import math
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IGNORED = ()  # JSON paths ("a.b.2") whose values may differ between two runs: none
SHOWN = 8  # differences shown per flag set and kind
# pinned for both versions: argparse wraps --help to the terminal's width
ENV = dict(COLUMNS="100", PYTHONHASHSEED="0", MPLBACKEND="Agg")


def flag_sets(presets):
    """name -> (run.py flags, run with the reference solutions?): every flag of run.py, each
    switch alone, and each setting at a value other than its default."""
    sets = {
        "help": ["--help"],
        "default": [],
        "stubs": [],  # the students' view before they write anything
        "solutions_flag": ["--solutions"],
        "bad_value": ["--sigma", "-1"],
        "bad_batch_times_steps": ["-B", "1000", "--steps", "1001"],
        "part_settings": [
            "--lanes",
            "64",
            "-B",
            "16",
            "--steps",
            "50",
            "--train-time",
            "3.0",
            "--sigma",
            "0.5",
        ],
        "mismatch_settings": [
            "--noise",
            "gaussian",
            "--C",
            "5",
            "--batch-size",
            "32",
            "--max-tokens",
            "4096",
        ],
        "drop_stale": ["--drop-stale"],
        "equal_hardware": ["--equal-hardware"],
        "equal_hardware_settings": [
            "--equal-hardware",
            "--gpus",
            "8",
            "--lanes-per-gpu",
            "4",
            "--train-work",
            "32",
        ],
        "timeline": ["--timeline"],
        "c_sweep": ["--c-sweep"],
        "length_sweep": ["--length-sweep"],
        "length_sweep_kl": ["--length-sweep", "--length-kl", "0", "0.01"],
        "staleness": ["--staleness"],
        "staleness_settings": [
            "--staleness",
            "--staleness-kl",
            "0.1",
            "--staleness-mismatch",
            "0.6",
        ],
        "learning_curves": ["--learning-curves"],
        "learning_detail": ["--learning-curves", "--learning-detail"],
        "step_grid": ["--step-grid"],
        "ppo_curves": ["--ppo-curves"],
        **{f"preset_{name}": ["--preset", name] for name in presets},
        "gpu_sweep": ["--gpu-sweep"],
        "every_section": [
            "--drop-stale",
            "--equal-hardware",
            "--timeline",
            "--c-sweep",
            "--length-sweep",
            "--staleness",
            "--learning-curves",
            "--preset",
            "all",
            "--gpu-sweep",
        ],
    }
    return {name: (flags, name not in ("stubs", "solutions_flag")) for name, flags in sets.items()}


def unpack(version, into):
    """A folder of the lab at `version`: the folder itself, or the commit unpacked."""
    if Path(version).is_dir():
        return Path(version).resolve()
    commit = subprocess.run(
        ["git", "rev-parse", "--verify", f"{version}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if commit.returncode:
        sys.exit(f"compare_runs.py: {version!r} is neither a folder nor a git commit")
    archive = subprocess.run(
        ["git", "archive", commit.stdout.strip()], cwd=ROOT, capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run(lab, flags, solutions, out):
    """run.py `flags` in `lab`, writing to the folder `out`: (exit code, output, {file:
    bytes}, seconds)."""
    out.mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if key != "RL_SOLUTIONS"}
    env.update(ENV, **({"RL_SOLUTIONS": "1"} if solutions else {}))
    start = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "run.py", *flags, "--out", str(out / "rl_systems.png")],
            cwd=lab,
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        code, output = done.returncode, done.stdout + "\n---- stderr\n" + done.stderr
    except subprocess.TimeoutExpired:
        code, output = "timed out after 1800 s", ""
    seconds = time.monotonic() - start
    output = output.replace(str(out), "<out>").replace(str(lab), "<lab>")
    return code, output, {p.name: p.read_bytes() for p in sorted(out.iterdir())}, seconds


def json_differences(a, b, path=""):
    """Where the values a and b differ, exactly, as "path: a != b"."""
    if path.lstrip(".") in IGNORED:
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        if a.keys() != b.keys():
            found.append(
                f"{path.lstrip('.') or 'top'}: keys {sorted(a.keys() ^ b.keys())} in one only"
            )
        return found + [
            d for key in a if key in b for d in json_differences(a[key], b[key], f"{path}.{key}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d for i, (x, y) in enumerate(zip(a, b)) for d in json_differences(x, y, f"{path}.{i}")
        ]
    same = (a == b and type(a) is type(b)) or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    )
    return [] if same else [f"{path.lstrip('.')}: {a!r} != {b!r}"]


def png_difference(a, b):
    """None if two PNGs are the same bytes, else what differs in the pixels, decoded ("" if
    nothing: the same picture in other bytes)."""
    if a == b:
        return None
    import matplotlib.image  # only when the bytes differ

    x, y = (matplotlib.image.imread(io.BytesIO(data), format="png") for data in (a, b))
    if x.shape != y.shape:
        return f"sizes {x.shape} != {y.shape}"
    n = int((x != y).any(axis=-1).sum())
    return f"{n} of {x.shape[0] * x.shape[1]} pixels differ" if n else ""


def differences(a, b, notes=None):
    """What differs between two runs' (exit code, output, files); a PNG that differs only in
    its bytes goes to `notes` (a list), if given."""
    (code_a, out_a, files_a, _), (code_b, out_b, files_b, _) = a, b
    found = [f"exit code {code_a} != {code_b}"] if code_a != code_b else []
    if out_a != out_b:
        diff = list(
            difflib.unified_diff(out_a.splitlines(), out_b.splitlines(), "A", "B", lineterm="", n=0)
        )[2:]
        found += [f"output: {line}" for line in diff[: 2 * SHOWN]]
        if len(diff) > 2 * SHOWN:
            found.append(f"output: ... {len(diff) - 2 * SHOWN} more diff lines")
    if files_a.keys() != files_b.keys():
        found.append(f"files: {sorted(files_a)} != {sorted(files_b)}")
    for name in sorted(files_a.keys() & files_b.keys()):
        if name.endswith(".json"):
            listed = json_differences(json.loads(files_a[name]), json.loads(files_b[name]))
            found += [f"{name}: {d}" for d in listed[:SHOWN]]
            if len(listed) > SHOWN:
                found.append(f"{name}: ... {len(listed) - SHOWN} more")
        elif name.endswith(".png"):
            problem = png_difference(files_a[name], files_b[name])
            if problem:
                found.append(f"{name}: {problem}")
            elif problem == "" and notes is not None:
                notes.append(f"{name}: the same pixels in other bytes")
        elif files_a[name] != files_b[name]:
            found.append(f"{name}: the bytes differ")
    return found


def uncovered(help_text, sets):
    """The options of run.py's --help (a line "  -B BATCH, --batch BATCH  ..." each, with
    its aliases) that no flag set uses, --help and --out aside."""
    used = {flag for flags, _ in sets.values() for flag in flags} | {"--help", "--out"}
    options = [
        re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", line.strip().split("  ")[0])
        for line in help_text.splitlines()
        if re.match(r"  -", line)
    ]
    return sorted(names[-1] for names in options if not set(names) & used)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", help="a git commit or a folder of the lab (the 'before')")
    parser.add_argument("b", help="a git commit or a folder of the lab (the 'after')")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these flag sets")
    args = parser.parse_args(argv)
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        labs = [
            unpack(version, Path(tmp, side)) for version, side in ((args.a, "A"), (args.b, "B"))
        ]
        help_a = run(labs[0], ["--help"], True, Path(tmp, "help"))[1]
        presets = re.search(r"--preset \{([^}]*)\}", help_a)
        sets = flag_sets(presets.group(1).split(",") if presets else [])
        if args.only:
            unknown = sorted(set(args.only) - set(sets))
            if unknown:
                parser.error(
                    f"argument --only: unknown flag sets {unknown}; allowed: {', '.join(sets)}"
                )
            sets = {name: sets[name] for name in args.only}
        print(
            f"A = {args.a} ({labs[0]}), B = {args.b} ({labs[1]}): {len(sets)} flag sets, "
            "one run at a time",
            flush=True,
        )
        n_differ = 0
        for name, (flags, solutions) in sets.items():
            a, b = (
                run(lab, flags, solutions, Path(tmp, f"out{side}", name))
                for lab, side in zip(labs, "AB")
            )
            notes = []
            found = differences(a, b, notes)
            n_differ += bool(found)
            what = " ".join(flags) or "(no flags)"
            if not solutions:
                what += ", without RL_SOLUTIONS=1"
            print(
                f"{name} [{what}]: {'identical' if not found else 'DIFFERS'} "
                f"({len(a[2])} files; {a[3]:.1f} s + {b[3]:.1f} s)",
                flush=True,
            )
            for line in found:
                print(f"    {line}")
            for line in notes:
                print(f"    (note: {line})")
        missing = [] if args.only else uncovered(help_a, sets)
        if missing:
            print(f"PROBLEM: flags of A's --help in no flag set: {', '.join(missing)}")
    print(
        f"{len(sets) - n_differ} of {len(sets)} flag sets identical; "
        f"{time.monotonic() - start:.0f} s in all"
    )
    return 1 if n_differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
