"""Write the student files (memory.py, scheduler.py, tis.py) from solutions/.

For instructors. The reference files are the one source of truth: each
answer in them sits between two marker lines,

    # BEGIN SOLUTION task2b
    # HINT: a response with lag exactly k is still fresh enough to train on.
    ...the answer...
    # END SOLUTION

and the student file gets everything else unchanged (signatures, docstrings,
the decorators that check inputs, given code), with each region replaced by
its HINT lines, as TODO comments, and `raise TaskNotDone("2b")` (lab.TaskNotDone, whose
message names task, function and file; the stub's `from lab import ...` line imports it).
A region must be the whole body of its function after the docstring, so a student
function holds nothing but the student's code.

    python tools/make_stubs.py --write  # (re)write the student files that are unchanged
                                        # stubs (as committed in git); others are refused
    python tools/make_stubs.py --write --force  # overwrite anyway, keeping a backup of each
    python tools/make_stubs.py --check  # exit 1 if they differ from what would be written
"""

import argparse
import ast
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lab import GIVEN_FUNCTIONS, STUDENT_MODULES, TASKS, file_of  # ROOT first

STUDENT_FILES = tuple(module + ".py" for module in STUDENT_MODULES)
TASK_FUNCTIONS = {task.what for task in TASKS.values()}
BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION task(?P<task>\w+)\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
HINT = re.compile(r"^\s*# HINT: (?P<hint>.*)$")


class MarkerError(ValueError):
    """A BEGIN/END SOLUTION marker is missing, unclosed, nested or misplaced."""


def banner(name):
    task = next(task for task in TASKS if file_of(task) == name)[0]
    return (
        f"# Your file for Task {task}. Fill in each TODO, then run "
        f"`python -m pytest -q -k task{task}`.\n"
    )


def enclosing_function(tree, line_number):
    """Name of the innermost function whose body holds `line_number`, or None."""
    names = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.lineno < line_number <= node.end_lineno
    ]
    return names[-1] if names else None


def stub_source(reference, name):
    """The student file for the reference source text `reference` of file `name`."""
    tree = ast.parse(reference)
    out, region = [banner(name)], None
    imports = lab_import(tree, name)
    for number, line in enumerate(reference.splitlines(keepends=True), start=1):
        where = f"solutions/{name}, line {number}"
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if region:
                raise MarkerError(
                    f"{where}: BEGIN SOLUTION inside the region opened at line "
                    f"{region['line']} (regions may not nest)"
                )
            task = begin["task"]
            if task not in TASKS or file_of(task) != name:
                raise MarkerError(f"{where}: task{task} is not a task of {name} in lab.TASKS")
            function = enclosing_function(tree, number)
            if function != TASKS[task].what:
                raise MarkerError(
                    f"{where}: task{task} belongs in {TASKS[task].what}, found in {function}"
                )
            region = dict(line=number, indent=begin["indent"], task=task, hints=[])
        elif end:
            if not region:
                raise MarkerError(f"{where}: END SOLUTION without a BEGIN SOLUTION")
            out.append(stub_region(region))
            region = None
        elif region:
            hint = HINT.match(line)
            if hint:
                region["hints"].append(hint["hint"])
        elif number == imports.lineno:
            names = sorted([alias.name for alias in imports.names] + ["TaskNotDone"])
            out.append(f"from lab import {', '.join(names)}\n")
        else:
            out.append(line)
    if region:
        raise MarkerError(
            f"solutions/{name}: the region opened at line {region['line']} "
            "is never closed with # END SOLUTION"
        )
    return "".join(out)


def lab_import(tree, name):
    """The reference's one-line `from lab import ...`, to which the stub adds TaskNotDone."""
    found = [
        node
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        and node.module == "lab"
        and node.level == 0
        and node.lineno == node.end_lineno
    ]
    if not found:
        raise MarkerError(
            f"solutions/{name}: no one-line `from lab import ...` to add "
            "TaskNotDone to (the stubs raise it)"
        )
    return found[0]


def stub_region(region):
    """The lines that replace one solution region in the student file."""
    task, indent = region["task"], region["indent"]
    lines = [f"{indent}# TODO (Task {task}): {hint}\n" for hint in region["hints"]]
    lines.append(f'{indent}raise TaskNotDone("{task}")\n')
    return "".join(lines)


def only_the_todo(stub, name):
    """Check that each task function of student file `name` is its docstring, TODO comments
    and the raise of TaskNotDone, nothing else (given checks belong in its decorator), and
    that every other function there is one of the file's lab.GIVEN_FUNCTIONS."""
    for node in ast.parse(stub).body:
        if (
            isinstance(node, ast.FunctionDef)
            and node.name not in TASK_FUNCTIONS
            and node.name not in GIVEN_FUNCTIONS.get(name[:-3], ())
        ):
            raise MarkerError(
                f"solutions/{name}: {node.name} is neither a task function nor "
                "in lab.GIVEN_FUNCTIONS (which tells given code from the student's "
                "when an error is reported)"
            )
        if isinstance(node, ast.FunctionDef) and node.name in TASK_FUNCTIONS:
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            if not (len(body) == 1 and isinstance(body[0], ast.Raise)):
                raise MarkerError(
                    f"solutions/{name}: {node.name} holds code outside its "
                    "solution region; move given code out of the function "
                    "(input checks go in its @checked decorator)"
                )


def all_stubs():
    """{file name: student source} for every student file; checks every task has a region."""
    stubs = {
        name: stub_source((ROOT / "solutions" / name).read_text(), name) for name in STUDENT_FILES
    }
    for name, stub in stubs.items():
        only_the_todo(stub, name)
    for task in TASKS:
        name = file_of(task)
        count = stubs[name].count(f'raise TaskNotDone("{task}")')
        if task[-1].isalpha() and count != 1:
            raise MarkerError(
                f"solutions/{name}: task{task} needs exactly one solution region, found {count}"
            )
    return stubs


def out_of_date(stubs):
    """Names of the student files that are missing or differ from `stubs`."""
    return [
        name
        for name, text in stubs.items()
        if not (ROOT / name).exists() or (ROOT / name).read_text() != text
    ]


def committed_unchanged(name):
    """True if student file `name` is exactly as committed in git, so overwriting it loses
    nothing git cannot bring back (False outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--", name], cwd=ROOT, capture_output=True
        )
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", name], cwd=ROOT, capture_output=True
        )
    except OSError:  # no git
        return False
    return done.returncode == 0 and tracked.returncode == 0


def backup(name):
    """Copy student file `name` to name.<time>.bak beside it; return the backup's name."""
    copy = f"{name}.{time.strftime('%Y%m%d-%H%M%S')}.bak"
    shutil.copy2(ROOT / name, ROOT / copy)
    return copy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if a student file is out of date",
    )
    action.add_argument(
        "--write",
        action="store_true",
        help="write the student files that are missing or unchanged stubs",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="with --write: overwrite edited files too, after a backup of each",
    )
    args = parser.parse_args()
    try:
        stubs = all_stubs()
    except MarkerError as error:
        sys.exit(f"make_stubs: {error}")
    stale = out_of_date(stubs)
    if args.check:
        if stale:
            sys.exit(
                f"make_stubs (an instructor tool): {', '.join(stale)} differ from the stubs "
                "generated from solutions/. A student's edited file always differs: "
                "that is expected, and nothing needs doing."
            )
        print("make_stubs: the student files match solutions/")
        return
    edited = [name for name in stale if (ROOT / name).exists() and not committed_unchanged(name)]
    if edited and not args.force:
        sys.exit(
            f"make_stubs: refusing to overwrite {', '.join(edited)}: they differ from the "
            "stubs and from git's last commit, so they may hold someone's work. Nothing "
            "was written. (Instructors: --force overwrites them after a backup.)"
        )
    for name in stale:
        if name in edited:
            print(f"make_stubs: kept a backup of {name} in {backup(name)}")
        (ROOT / name).write_text(stubs[name])
    print(f"make_stubs: wrote {', '.join(stale) or 'nothing (all up to date)'}")


if __name__ == "__main__":
    main()
