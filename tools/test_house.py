"""The house's rules: imports run one way, from the bottom up, no module grows too long, and
no function takes too many parameters or runs too long.

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
CORES = ("memory", "scheduler", "tis", "scheduler_core", "toy", "block_calls", "gpu_core",
         "solutions")
GRADED_TESTS = ("test_rl_systems.py",)
MAX_LINES = 600  # a module longer than this holds more than one idea (tests excepted)
MAX_PARAMETERS = 8       # a function that takes more wants a named record of its settings
MAX_FUNCTION_LINES = 60  # a function longer than this does more than one thing
# The functions outside tests and tools allowed past those two limits, by "path:name", each
# with its reason: at most five, and each must still need it (else the entry goes).
OVER_THE_LIMITS = {
    "scheduler.py:simulate": "9 parameters: Task 2's given API, called with keyword knobs "
                             "(n_lanes, B, k, *, n_steps, train_time, sigma, lengths, drop_stale, "
                             "seed) by the README, the tests and the students; it builds the "
                             "simulator's LaneSettings from them",
    "solutions/scheduler.py:simulate": "the same function in the reference (tools/make_stubs.py "
                                       "keeps the two alike)",
    "experiments/training.py:train": "73 lines: issue 44 splits it; drop this entry when it lands",
}
MAX_ALLOWED = 5


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


def functions(source):
    """(name, first line, lines, parameters) of every function and method in `source`;
    the lines run from `def` to the function's last line (docstring included), and a
    method's self or cls is not counted as a parameter."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            names = [p.arg for p in (*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg)
                     if p is not None]
            n = len(names) - (names[:1] in (["self"], ["cls"]))
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1, n


def over_the_limits(path, source):
    """{"path:name": [what breaks a limit, ...]} for the functions of the module at `path`
    that take more than MAX_PARAMETERS parameters or run past MAX_FUNCTION_LINES lines."""
    found = {}
    for name, line, lines, n in functions(source):
        broken = ([f"{n} parameters"] if n > MAX_PARAMETERS else []) + (
            [f"{lines} lines"] if lines > MAX_FUNCTION_LINES else [])
        if broken:
            found.setdefault(f"{path}:{name}", []).append(f"line {line}: {', '.join(broken)}")
    return found


def test_functions_are_short_and_take_few_parameters():
    found = {}
    for path in python_files():
        relative = path.relative_to(ROOT).as_posix()
        if not (relative.startswith("tools/") or path.name.startswith("test_")):
            found |= over_the_limits(relative, path.read_text())
    unlisted = [f"{key} ({'; '.join(why)})" for key, why in found.items()
                if key not in OVER_THE_LIMITS]
    assert not unlisted, (f"over {MAX_PARAMETERS} parameters or {MAX_FUNCTION_LINES} lines "
                          "(pass a named record, split the function): " + ", ".join(unlisted))
    stale = [key for key in OVER_THE_LIMITS if key not in found]
    assert not stale, "within the limits now, so off OVER_THE_LIMITS: " + ", ".join(stale)
    assert len(OVER_THE_LIMITS) <= MAX_ALLOWED


def test_a_too_wide_or_too_long_function_is_found():
    body = "    x += 1\n"
    planted = ("def wide(a, b, c, d, e, f, g, h, *i):\n    pass\n"            # 9 parameters
               "def fits(x, b, c, d, e, f, g, h):\n" + body * 59 +          # 8, and 60 lines
               "def long(x):\n" + body * 60 +                               # 61 lines
               "class Core:\n    def method(self, a, b, c, d, e, f, g, *, h):\n        pass\n"
               "    def longer(cls, a, b, c, d, e, f, g, h, **i):\n" + ("    " + body) * 60)
    assert over_the_limits("core.py", planted) == {
        "core.py:wide": ["line 1: 9 parameters"],
        "core.py:long": ["line 63: 61 lines"],
        "core.py:longer": ["line 127: 9 parameters, 61 lines"]}
