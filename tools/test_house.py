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
an experiment (so editing an experiment cannot change a grade). Every experiment keeps the
contract written down in experiments/__init__.py (the protocols Part and Flag).
"""

import ast
import inspect
import io
import tokenize
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("lab", "cores", "grading", "experiments", "run", "tools")  # bottom to top
CORES = (
    "memory",
    "scheduler",
    "tis",
    "scheduler_core",
    "toy",
    "block_calls",
    "gpu_core",
    "solutions",
)
GRADED_TESTS = ("test_rl_systems.py",)
# A module longer than this holds more than one idea (tests excepted). ruff format lays a long
# call out one argument a line: 800 lines so formatted are about 600 of the older, denser layout.
MAX_LINES = 800
MAX_PARAMETERS = 8  # a function that takes more wants a named record of its settings
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
        if (
            ROOMS.index(there) > ROOMS.index(here)
            or here == "lab"
            or (path in GRADED_TESTS and there == "experiments")
        ):
            problems.append(f"{path}:{line} imports {name} ({there}/, above {here}/)")
    return problems


def python_files():
    return [
        path
        for path in ROOT.rglob("*.py")
        if ".venv" not in path.parts and "__pycache__" not in path.parts
    ]


def test_imports_run_one_way():
    problems = [
        p
        for path in python_files()
        for p in wrong_way(path.relative_to(ROOT).as_posix(), path.read_text())
    ]
    assert not problems, "\n".join(problems)


def test_a_wrong_way_import_is_found():
    planted = "import numpy\nfrom experiments.part2_scheduling import lag_counts\n"
    assert wrong_way("test_rl_systems.py", planted) == [
        "test_rl_systems.py:2 imports experiments.part2_scheduling (experiments/, above grading/)"
    ]
    assert wrong_way("lab/contracts.py", "import toy\n")  # lab/ imports only itself
    assert wrong_way("toy.py", "from grading import harness\n")
    assert wrong_way("experiments/preset.py", "import run\n")
    assert not wrong_way("experiments/preset.py", "import grading\nimport toy\nimport lab\n")


def test_no_module_is_too_long():
    long = [
        f"{path.relative_to(ROOT)}: {n} lines"
        for path in python_files()
        if not path.name.startswith("test_")
        and (n := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, f"over {MAX_LINES} lines: " + ", ".join(long)


def options_read(source):
    """The options an experiment module reads, as (line, name): X in `settings.options.X`,
    or in `mine.X` after `mine = settings.options`."""
    tree = ast.parse(source)
    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "options"
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return [
        (node.lineno, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and (
            (isinstance(node.value, ast.Attribute) and node.value.attr == "options")
            or (isinstance(node.value, ast.Name) and node.value.id in aliases)
        )
    ]


def options_added(source):
    """The options a module's arguments(p) adds, by their argparse names ("--lanes-per-gpu"
    -> "lanes_per_gpu")."""
    return {
        arg.value.lstrip("-").replace("-", "_")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument"
        for arg in node.args[-1:]
        if isinstance(arg, ast.Constant)
    }


def test_experiments_read_only_their_own_options():
    """Options shared by several experiments are the model families' (experiments/settings.py,
    passed whole); an experiment's own options are for it alone."""
    from experiments import REGISTRY

    problems = []
    for e in REGISTRY:
        source = Path(e.__file__).read_text()
        mine = options_added(source)
        problems += [
            f"{e.__name__}:{line} reads the option {name}, not its own"
            for line, name in options_read(source)
            if name not in mine
        ]
    assert not problems, "\n".join(problems)


def test_reading_another_experiments_option_is_found():
    planted = (
        'def arguments(p):\n    p.add_argument("--gpus", type=int)\n'
        "def run(settings, results):\n    mine = settings.options\n"
        "    return mine.gpus, mine.lanes, settings.options.noise\n"
    )
    assert options_added(planted) == {"gpus"}
    assert sorted(name for _, name in options_read(planted)) == ["gpus", "lanes", "noise"]


def breaks_contract(module: Any, contract: type) -> list[str]:
    """How experiment `module` breaks `contract` (experiments.Part or Flag): a name it lacks,
    a value of another type, a function that cannot be called with the arguments run.py
    passes (positionally, as the protocol's functions take them)."""
    name, problems = module.__name__, []
    for attribute, kind in typing.get_type_hints(contract).items():
        value = getattr(module, attribute, inspect.Parameter.empty)
        if value is inspect.Parameter.empty:
            problems.append(f"{name} has no {attribute}")
        elif not isinstance(value, (int, float) if kind is float else kind):
            problems.append(f"{name}.{attribute} is {value!r}, not {kind}")
    for function, wanted in inspect.getmembers(contract, inspect.isfunction):
        if function.startswith("_"):
            continue
        arguments = list(inspect.signature(wanted).parameters)[1:]  # without self
        call = f"{function}({', '.join(arguments)})"
        own = getattr(module, function, None)
        if not inspect.isfunction(own):
            problems.append(f"{name} has no function {call}")
            continue
        try:
            inspect.signature(own).bind(*arguments)
        except TypeError as error:
            problems.append(
                f"{name}.{function}{inspect.signature(own)} cannot be called as {call}: {error}"
            )
    return problems


def test_every_experiment_keeps_its_contract():
    """experiments/__init__.py's protocols, by inspection: the parts are Parts, the flags
    Flags, and an experiment's NEEDS names an experiment that runs before it."""
    from experiments import FLAGS, PARTS, REGISTRY, Flag, Part

    problems = [p for e in PARTS for p in breaks_contract(e, Part)]
    problems += [p for e in FLAGS for p in breaks_contract(e, Flag)]
    for i, e in enumerate(REGISTRY):
        needs = getattr(e, "NEEDS", None)  # optional
        if needs is not None and needs not in [earlier.KEY for earlier in REGISTRY[:i]]:
            problems.append(f"{e.KEY}'s NEEDS is {needs!r}, not an earlier experiment's KEY")
    assert not problems, "\n".join(problems)


def test_a_broken_contract_is_found():
    from experiments import Flag, Part, part1_memory

    broken = types.ModuleType("experiments.broken")
    vars(broken).update(
        KEY="broken",
        LABEL="Broken",
        TASK="2",
        FLAG="broken",
        arguments=lambda p: None,
        work=lambda: 1.0,
        show=print,
        run=lambda settings, results, seed: {},
    )  # one more than run.py passes
    assert breaks_contract(broken, Flag) == [
        "experiments.broken has no SECONDS",
        "experiments.broken has no function draw(results, path)",
        (
            "experiments.broken.run(settings, results, seed) cannot be called as "
            "run(settings, results): missing a required argument: 'seed'"
        ),
        "experiments.broken has no function show(result)",  # a builtin is not the module's
        (
            "experiments.broken.work() cannot be called as work(settings): too many positional "
            "arguments"
        ),
    ]
    assert breaks_contract(part1_memory, Flag) == [
        "experiments.part1_memory.FLAG is None, not <class 'str'>",
        "experiments.part1_memory has no function draw(results, path)",
    ]
    assert not breaks_contract(part1_memory, Part)


def continued_lines(source):
    """The numbers of the lines of `source` that continue a bracket opened on an earlier
    line: ruff format puts one argument a line when a call does not fit, and those lines
    are layout, not more code."""
    depth, continued, line = 0, set(), 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.NL, tokenize.COMMENT):
            continue
        if token.start[0] != line:  # the line's first token: does it start inside a bracket?
            line = token.start[0]
            if depth:
                continued.add(line)
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
    return continued


def functions(source):
    """(name, first line, lines, parameters) of every function and method in `source`;
    the lines run from `def` to the function's last line (docstring and comments included)
    but for the lines that only continue a bracket (continued_lines), and a method's self or
    cls is not counted as a parameter."""
    continued = continued_lines(source)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            names = [
                p.arg
                for p in (*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg)
                if p is not None
            ]
            n = len(names) - (names[:1] in (["self"], ["cls"]))
            span = range(node.lineno, node.end_lineno + 1)
            yield node.name, node.lineno, len(span) - len(continued.intersection(span)), n


def over_the_limits(path, source):
    """{"path:name": [what breaks a limit, ...]} for the functions of the module at `path`
    that take more than MAX_PARAMETERS parameters or run past MAX_FUNCTION_LINES lines."""
    found = {}
    for name, line, lines, n in functions(source):
        broken = ([f"{n} parameters"] if n > MAX_PARAMETERS else []) + (
            [f"{lines} lines"] if lines > MAX_FUNCTION_LINES else []
        )
        if broken:
            found.setdefault(f"{path}:{name}", []).append(f"line {line}: {', '.join(broken)}")
    return found


def test_functions_are_short_and_take_few_parameters():
    found = {}
    for path in python_files():
        relative = path.relative_to(ROOT).as_posix()
        if not (relative.startswith("tools/") or path.name.startswith("test_")):
            found |= over_the_limits(relative, path.read_text())
    unlisted = [
        f"{key} ({'; '.join(why)})" for key, why in found.items() if key not in OVER_THE_LIMITS
    ]
    assert not unlisted, (
        f"over {MAX_PARAMETERS} parameters or {MAX_FUNCTION_LINES} lines "
        "(pass a named record, split the function): " + ", ".join(unlisted)
    )
    stale = [key for key in OVER_THE_LIMITS if key not in found]
    assert not stale, "within the limits now, so off OVER_THE_LIMITS: " + ", ".join(stale)
    assert len(OVER_THE_LIMITS) <= MAX_ALLOWED


def test_a_too_wide_or_too_long_function_is_found():
    body = "    x += 1\n"
    planted = (
        "def wide(a, b, c, d, e, f, g, h, *i):\n    pass\n"  # 9 parameters
        "def fits(x, b, c, d, e, f, g, h):\n"
        + body * 59  # 8, and 60 lines
        + "def long(x):\n"
        + body * 60  # 61 lines
        + "class Core:\n    def method(self, a, b, c, d, e, f, g, *, h):\n        pass\n"
        "    def longer(cls, a, b, c, d, e, f, g, h, **i):\n" + ("    " + body) * 60
    )
    assert over_the_limits("core.py", planted) == {
        "core.py:wide": ["line 1: 9 parameters"],
        "core.py:long": ["line 63: 61 lines"],
        "core.py:longer": ["line 127: 9 parameters, 61 lines"],
    }


def test_a_call_laid_out_one_argument_a_line_is_not_length():
    """The lines that only continue a bracket (ruff format's one argument a line) do not
    count; comments and a docstring's lines do."""
    call = "    total = add(\n" + "        1,\n" * 70 + "    )\n"
    comments = "    # why\n" * 58
    planted = (
        f'def laid_out(x):\n    """Sums."""\n{call}    return total\n'
        f'def explained(x):\n    """Sums,\n    twice."""\n{comments}    return x\n'
    )
    assert continued_lines(call) == set(range(2, 73))
    assert over_the_limits("core.py", planted) == {"core.py:explained": ["line 76: 62 lines"]}
