"""The house's rules: imports run one way, from the bottom up, and no module grows too long.

    lab/         the facts every file shares, and the contracts that student files import
    cores        the student files and the given cores at the top (memory.py, toy.py, ...)
    grading/     whose code runs, the pytest plugin, messages, time limits, Gradescope
    experiments/ one module per experiment of run.py, and what they share
    run.py       the dispatcher
    tools/       the instructors' tools, which may import anything

A module may import its own room and the rooms below it, never one above; lab/ imports
only itself; the graded tests reach student code through the grading room, never through
an experiment (so editing an experiment cannot change a grade).
"""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("lab", "cores", "grading", "experiments", "run", "tools")  # bottom to top
CORES = ("memory", "scheduler", "tis", "scheduler_core", "toy", "gpu_core", "solutions")
GRADED_TESTS = ("test_rl_systems.py",)
# A module longer than this holds more than one idea (tests excepted). ruff format lays a long
# call out one argument a line: 800 lines so formatted are about 600 of the older, denser layout.
MAX_LINES = 800


def room(name):
    """The room of a module, by its dotted name ("experiments.preset") or file path."""
    top = name.replace("/", ".").split(".")[0]
    if top in ("conftest", "test_rl_systems", "test_given"):
        return "grading"  # the tests at the top, and pytest's entry point, use the plugin
    if top in CORES:
        return "cores"
    return top if top in ROOMS else None  # None: not the lab's (numpy, os, ...)


def lab_imports(source):
    """The lab's modules that `source` imports, as (line, dotted name)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.lineno, node.module


def wrong_way(path, source):
    """Every import of the module at `path` (relative to the lab) that breaks the rules."""
    here = room(path.removesuffix(".py"))
    problems = []
    for line, name in lab_imports(source):
        there = room(name)
        if there is None or there == here:
            continue
        if (ROOMS.index(there) > ROOMS.index(here) or here == "lab"
                or (path in GRADED_TESTS and there == "experiments")):
            problems.append(f"{path}:{line} imports {name} ({there}/, above {here}/)")
    return problems


def python_files():
    return [path for path in ROOT.rglob("*.py") if ".venv" not in path.parts
            and "__pycache__" not in path.parts]


def test_imports_run_one_way():
    problems = [p for path in python_files() for p in wrong_way(
        path.relative_to(ROOT).as_posix(), path.read_text())]
    assert not problems, "\n".join(problems)


def test_a_wrong_way_import_is_found():
    planted = "import numpy\nfrom experiments.part2_scheduling import lag_counts\n"
    assert wrong_way("test_rl_systems.py", planted) == [
        "test_rl_systems.py:2 imports experiments.part2_scheduling (experiments/, above grading/)"]
    assert wrong_way("lab/contracts.py", "import toy\n")  # lab/ imports only itself
    assert wrong_way("toy.py", "from grading import harness\n")
    assert wrong_way("experiments/preset.py", "import run\n")
    assert not wrong_way("experiments/preset.py", "import grading\nimport toy\nimport lab\n")


def test_no_module_is_too_long():
    long = [f"{path.relative_to(ROOT)}: {n} lines" for path in python_files()
            if not path.name.startswith("test_")
            and (n := len(path.read_text().splitlines())) > MAX_LINES]
    assert not long, f"over {MAX_LINES} lines: " + ", ".join(long)


def options_read(source):
    """The options an experiment module reads, as (line, name): X in `settings.options.X`,
    or in `mine.X` after `mine = settings.options`."""
    tree = ast.parse(source)
    aliases = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Attribute) and node.value.attr == "options"
               for target in node.targets if isinstance(target, ast.Name)}
    return [(node.lineno, node.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and (
                (isinstance(node.value, ast.Attribute) and node.value.attr == "options")
                or (isinstance(node.value, ast.Name) and node.value.id in aliases))]


def options_added(source):
    """The options a module's arguments(p) adds, by their argparse names ("--lanes-per-gpu"
    -> "lanes_per_gpu")."""
    return {arg.value.lstrip("-").replace("-", "_") for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"
            for arg in node.args[-1:] if isinstance(arg, ast.Constant)}


def test_experiments_read_only_their_own_options():
    """Options shared by several experiments are the model families' (experiments/settings.py,
    passed whole); an experiment's own options are for it alone."""
    from experiments import REGISTRY
    problems = []
    for e in REGISTRY:
        source = Path(e.__file__).read_text()
        mine = options_added(source)
        problems += [f"{e.__name__}:{line} reads the option {name}, not its own"
                     for line, name in options_read(source) if name not in mine]
    assert not problems, "\n".join(problems)


def test_reading_another_experiments_option_is_found():
    planted = ('def arguments(p):\n    p.add_argument("--gpus", type=int)\n'
               "def run(settings, results):\n    mine = settings.options\n"
               "    return mine.gpus, mine.lanes, settings.options.noise\n")
    assert options_added(planted) == {"gpus"}
    assert sorted(name for _, name in options_read(planted)) == ["gpus", "lanes", "noise"]
