"""Docs that can't drift: reference snapshots of run.py's numbers, and the docs' quotes of them.

    python tools/snapshots.py            # check (CI runs it)
    python tools/snapshots.py --update   # after a deliberate change: rewrite the snapshots
    python tools/snapshots.py --student-copy OUT/student   # a release's docs too
    python tools/snapshots.py --only step_grid timeline   # rerun these runs only

1. For each run, tools/snapshots/<name>.toml gives run.py's flags (the reference solutions
   always); the run's rl_systems.json must match tools/snapshots/<name>.json number for
   number within |fresh - snapshot| <= ATOL + RTOL * |snapshot|. The absolute part is for
   numbers near 0 (a bias of 1e-16 changes by a large factor when the arithmetic is
   reordered). It holds on any CPU (docs/instructors.md: "The same numbers on any CPU").
2. Every number README.md or a file of docs/ quotes from a run is listed in that run's
   .toml, under the doc, with the words around it (a table row, all its numbers at once,
   under [rows]); the snapshot's value, formatted as quoted, must appear there in that doc.
   A number not listed is not checked, so add it when you write it.
3. The table of Task 3's claims on other draws of the toy (DRAWS_DOC) must hold the counts
   tools/check_draws.py computes now (DRAW_CLAIMS names its rows).
4. --student-copy: a release's docs must be the ones tools/release.py makes, hold the same
   checked numbers (those outside instructor parts), and leave out the instructor-only docs.

A quote is one line, [words, path, format], e.g. in default.toml under "README.md":
    ['GRPO halves that to {} GB', 'memory.grpo_7b_gb', '{:.0f}'],
The path "a.b.2" is results["a"]["b"][2] (negative indexes count from the end); a list of
keys, ['gpu_model', 'areal-1.5b', 'speedup'], is for keys that hold dots. The format is a
format string, or "= expression" for what a format string can't say: v is the value at the
path, and the functions of tools/quote_formats.py are in scope ("= f'{v / 1024:g}'" for KiB
from bytes). A table row is [row, cell, cell, ...] with a {} per cell, each cell [path,
format] in this run, or [run, path, format] for another run's number.

To add an experiment flag: add tools/snapshots/<name>.toml with its flags, run --update, and
add its quotes. The runs are independent, so they run in parallel, one per core.
"""

import argparse
import json
import math
import os
import re
import string
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser is the package tomli (pytest's need)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "tools" / "snapshots"
RTOL, ATOL = 1e-6, 1e-9
sys.path.insert(0, str(ROOT))
from tools import quote_formats  # the functions an "= expression" may call


def compiled(fmt, where):
    """A format as the .toml writes it -> as quoted() applies it: a format string stays one,
    "= expression" becomes a function of the value v."""
    if not fmt.startswith("="):
        return fmt
    code = compile(fmt[1:].strip(), where, "eval")
    return lambda v: eval(code, {**vars(quote_formats), "v": v})


def registry(folder=SNAPSHOTS):
    """The runs, quotes and table rows of every <name>.toml in `folder`, as
    RUNS {name: flags}, QUOTES {doc: [(words, name, path, format)]} and
    TABLE_ROWS {doc: [(words, [(name, path, format), ...])]}."""
    runs, quotes, rows = {}, {}, {}
    files = sorted(folder.glob("*.toml"))
    names = {file.stem for file in files}
    for file in files:
        run, data = file.stem, tomllib.loads(file.read_text())
        if set(data) - {"flags", "quotes", "rows"} or "flags" not in data:
            raise ValueError(f"{file}: has {sorted(data)}; allowed: flags (required), quotes, rows")
        runs[run] = data["flags"]
        for doc, entries in data.get("quotes", {}).items():
            for i, entry in enumerate(entries):
                where = f"{file.name}: quote {i + 1} of {doc}"
                if len(entry) != 3:
                    raise ValueError(f"{where} is {entry!r}: want [words, path, format]")
                words, path, fmt = entry
                quotes.setdefault(doc, []).append((words, run, path, compiled(fmt, where)))
                check_fields(where, words, 1)
        for doc, entries in data.get("rows", {}).items():
            for i, (words, *cells) in enumerate(entries):
                where = f"{file.name}: row {i + 1} of {doc}"
                cells = [[run, *cell] if len(cell) == 2 else cell for cell in cells]
                if any(len(cell) != 3 or cell[0] not in names for cell in cells):
                    raise ValueError(
                        f"{where}: each cell is [path, format] or [run, path, "
                        f"format] with a run of {folder}"
                    )
                rows.setdefault(doc, []).append(
                    (words, [(name, path, compiled(fmt, where)) for name, path, fmt in cells])
                )
                check_fields(where, words, len(cells))
    return runs, quotes, rows


def check_fields(where, words, n_cells):
    """A quote's words hold one {} per cell."""
    n_fields = sum(field is not None for _, field, _, _ in string.Formatter().parse(words))
    if n_fields != n_cells:
        raise ValueError(f"{where}: {words!r} has {n_fields} {{}} for {n_cells} numbers")


RUNS, QUOTES, TABLE_ROWS = registry()


def value_at(results, path):
    """results["a"]["b"][2] for path "a.b.2" (negative indexes count from the end) or for
    the keys ["a", "b", 2]."""
    if isinstance(path, list):
        keys = path
    else:
        keys = [int(key) if re.fullmatch(r"-?\d+", key) else key for key in path.split(".")]
    for key in keys:
        results = results[key]
    return results


def fresh_run(name, tmp):
    out = Path(tmp, f"{name}.png")
    flags = RUNS[name]
    subprocess.run(
        [sys.executable, "run.py", *flags, "--out", str(out)],
        cwd=ROOT,
        check=True,
        env=dict(os.environ, RL_SOLUTIONS="1"),
        stdout=subprocess.DEVNULL,
    )
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
    elif (
        isinstance(snapshot, (int, float))
        and isinstance(fresh, (int, float))
        and not isinstance(snapshot, bool)
    ):
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
    return [
        (words, [(name, path, fmt)]) for words, name, path, fmt in QUOTES.get(doc, [])
    ] + TABLE_ROWS.get(doc, [])


def quoted(words, cells, snapshots):
    """`words` with the snapshots' numbers, formatted, in place of the {}s."""
    values = [value_at(snapshots[name], path) for name, path, _ in cells]
    return flat(
        words.format(
            *[
                fmt(value) if callable(fmt) else fmt.format(value)
                for value, (_, _, fmt) in zip(values, cells)
            ]
        )
    )


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
    "naive bias doubles with the mismatch": (
        "naive bias about doubles when the mismatch doubles (ratio 1.8–2.3)"
    ),
    "sequence IS variance explodes, naive does not": (
        "`seq` variance explodes, the naive one does not"
    ),
    "truncation has the lowest RMSE at mismatch 0.6": (
        "truncation has the lowest RMSE at mismatch 0.6"
    ),
    "sequence TIS beats token TIS at mismatch 0.6": "`seq_tis` beats `token_tis` at mismatch 0.6",
    "best C of token TIS strictly inside 1..10": "best C of `token_tis` strictly inside 1..10",
}


def draw_lines():
    """What DRAWS_DOC must say, from the counts tools/check_draws.py computes now (about 2 s)."""
    from tools import check_draws

    found = check_draws.draws()
    aside = [(seed, ratio) for seed, _, ratio, set_aside, _ in found if set_aside]
    lines = [
        f"set aside ({', '.join(f'seed {s}: {r:.2f}×' for s, r in aside)})",
        f"Of the other {len(found) - len(aside)} draws",
    ]
    for claim, results in check_draws.per_claim(found).items():
        failing = ", ".join(str(seed) for seed, holds in results if not holds) or "none"
        lines.append(
            f"| {DRAW_CLAIMS[claim]} | {sum(h for _, h in results)}/{len(results)} | {failing} |"
        )
    return lines


def draws_problems(text, lines):
    """The lines of draw_lines() that the text of DRAWS_DOC, `text`, does not hold."""
    return [
        f"{DRAWS_DOC} should say {line!r} (tools/check_draws.py)"
        for line in lines
        if line not in flat(text)
    ]


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
            only = {
                quoted(words, cells, snapshots)
                for words, cells in checks(doc)
                if quoted(words, cells, snapshots) in flat(made)
            }
        found, n_numbers = quote_problems(doc, text, snapshots, only)
        n_checks = sum(
            only is None or quoted(words, cells, snapshots) in only for words, cells in checks(doc)
        )
        print(
            f"{root / doc}: {len(found)} of {n_checks} quotes differ ({n_numbers} numbers checked)"
        )
        problems += found
        if doc == DRAWS_DOC:
            found = draws_problems(text, lines)
            print(
                f"{root / doc}: {len(found)} of {len(lines)} lines of tools/check_draws.py differ"
            )
            problems += found
    unknown = (set(QUOTES) | set(TABLE_ROWS)) - set(docs())
    problems += [f"QUOTES or TABLE_ROWS name {doc}, which is not a doc" for doc in sorted(unknown)]
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the snapshots")
    parser.add_argument(
        "--student-copy",
        type=Path,
        metavar="DIR",
        help="also check the docs of this students' copy (OUT/student)",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=sorted(RUNS),
        metavar="RUN",
        help="rerun only these runs (the docs are checked against the stored "
        "snapshots of the others)",
    )
    args = parser.parse_args(argv)
    chosen = {name: flags for name, flags in RUNS.items() if not args.only or name in args.only}
    problems = []
    snapshots = {}
    with tempfile.TemporaryDirectory() as tmp:
        # the runs are independent processes: run as many at once as there are cores
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            runs = dict(zip(chosen, pool.map(lambda name: fresh_run(name, tmp), chosen)))
        for name, flags in RUNS.items():
            path = SNAPSHOTS / f"{name}.json"
            if name not in runs:
                snapshots[name] = json.loads(path.read_text())
                continue
            fresh = runs[name]
            if args.update or not path.exists():
                SNAPSHOTS.mkdir(exist_ok=True)
                path.write_text(json.dumps(fresh, indent=1) + "\n")
            snapshots[name] = json.loads(path.read_text())
            found = differences(fresh, snapshots[name])
            print(
                f"run.py {' '.join(flags) or '(default flags)'}: "
                f"{'matches' if not found else 'DIFFERS from'} tools/snapshots/{name}.json"
            )
            problems += [f"{name}: {problem}" for problem in found]
    problems += check_docs(ROOT, snapshots)
    if args.student_copy:
        from tools.release import student_doc

        problems += check_docs(args.student_copy, snapshots, render=student_doc)
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
