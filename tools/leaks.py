"""The leak check: nothing in the students' copy outside the three student files solves a task.

    python tools/leaks.py STUDENT_COPY     # exit 1 and list each leak if any

For instructors (tools/check_release.py and CI run it on a fresh students' copy). It
imports every module of the copy except memory.py, scheduler.py and tis.py, in a child
process run from the copy, and gathers every callable reachable there, bound to a name
or not:
- module-level functions and classes, methods (static, class, properties' getters), and
  the attributes of classes and of instances made by the copy's code;
- functools.partial objects (and the functions they wrap), and callables held in lists,
  tuples, sets and dicts: lambdas passed as arguments are reached through what holds them;
- every function and lambda written in a module's source, nested ones and closures
  included, found by a scan of the compiled source (its code objects hold one for each
  `def` and `lambda`, at any depth) and made into functions (`written`).
Each callable is called as each task function, with that task's arguments, on seeded
random valid inputs (`inputs`): positionally and with the task's keywords; for 3a and
3c also with the log-ratio in place of the two log-probability arrays; for 3b with its
three arrays in each order. Its outcomes are compared with the reference's
(solutions/), per scheme of 3a and per level of 3c: a callable that gives the
reference's outcome on every input of one scheme solves that scheme, and is a leak.
Scheme "none" is left out: its answer is a constant the README states (a weight of 1 on
every token), which the given code's tests need as it is (the toy's on-policy runs).
"""

import contextlib
import faulthandler
import functools
import importlib
import importlib.util
import itertools
import os
import resource
import signal
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STUDENT_FILES = ("memory.py", "scheduler.py", "tis.py")
CALL_LIMIT = 0.5  # seconds for one call; a callable that runs longer answers nothing
N_INPUTS = 12  # random inputs per task (and per scheme or level)


class Late(Exception):
    """A call ran past CALL_LIMIT."""


# ---------------------------------------------------------------- the inputs


def inputs(rng):
    """{(task, part): [(args, kwargs, what the reference is called with)]}: each task's
    calls, `part` a scheme or level for 3a and 3c ("" for the others). Each call is one
    way to hand the task's arguments to a callable; the reference always gets them as the
    task function takes them."""
    from lab import MASK_LEVELS, SCHEMES

    calls = {}

    def add(task, part, forms, reference_args, reference_kwargs=None):
        calls.setdefault((task, part), []).append((forms, (reference_args, reference_kwargs or {})))

    for _ in range(N_INPUTS):
        a, b = (int(x) for x in rng.integers(0, 10**12, size=2))
        add("1a", "", [((a, b), {})], (a, b))
        shape = (
            int(rng.integers(1, 80)),
            int(rng.integers(1, 64)),
            int(2 ** rng.integers(0, 9)),
            int(rng.integers(0, 10**6)),
            [1, 2, 4][rng.integers(3)],
        )
        add("1b", "", [(shape, {})], shape)
        N = int(10 ** rng.uniform(6, 11))
        algo, ref, rm = (
            ["ppo", "grpo"][rng.integers(2)],
            bool(rng.integers(2)),
            [None, True, False][rng.integers(3)],
        )
        lora = int([0, rng.integers(1, N // 10)][rng.integers(2)])
        keywords = dict(reference=ref, reward_model=rm, lora_params=lora)
        add("1c", "", [((algo, N, ref, rm, lora), {}), ((algo, N), keywords)], (algo, N), keywords)
        B, k, v = int(rng.integers(1, 9)), int(rng.integers(0, 4)), int(rng.integers(0, 6))
        d = int(rng.integers(0, 2 * B))
        state = (d + (v + k + 1) * B + int(rng.integers(-B - 1, B + 2)), d, v, k, B)
        state = (max(state[0], d),) + state[1:]
        add("2a", "", [(state, {})], state)
        version = int(rng.integers(0, 6))
        size = int(rng.integers(2, 9))
        shapes = tuple(
            (int(i), int(t), float(i), float(length))
            for i, t, length in zip(
                rng.permutation(size),
                rng.integers(0, version + 1, size=size),
                rng.permutation(size) + 0.5,
            )
        )
        take = (
            shapes,
            version,
            int(rng.integers(0, 3)),
            int(rng.integers(1, 4)),
            bool(rng.integers(2)),
        )
        add("2b", "", [(take, {})], take)
        N, T, D = (int(x) for x in rng.integers(1, 5, size=3))
        r, g, w = rng.normal(size=N), rng.normal(size=(N, T, D)), rng.uniform(0, 2, size=(N, T))
        add("3b", "", [(order, {}) for order in itertools.permutations((r, g, w))], (r, g, w))
        logp_infer = np.log(rng.uniform(0.05, 1.0, size=(N, T)))
        log_w = rng.normal(0.0, 0.8, size=(N, T))
        logp_train = logp_infer + log_w
        log_ratio = logp_train - logp_infer
        for scheme in [s for s in SCHEMES if s != "none"]:  # (see the docstring)
            C = [1.0, 1.5, 2.0, 4.0][rng.integers(4)]
            add(
                "3a",
                scheme,
                [((logp_train, logp_infer, scheme, C), {}), ((log_ratio, scheme, C), {})],
                (logp_train, logp_infer, scheme, C),
            )
        for level in MASK_LEVELS:
            low, high = [(0.5, 2.0), (0.7, 1.5), (0.25, 4.0)][rng.integers(3)]
            add(
                "3c",
                level,
                [
                    ((logp_train, logp_infer, level, low, high), {}),
                    ((log_ratio, level, low, high), {}),
                ],
                (logp_train, logp_infer, level, low, high),
            )
    return calls


# ---------------------------------------------------------------- the callables


def own(value, modules):
    return getattr(value, "__module__", None) in modules


def reachable(modules):
    """{label: callable} for every callable reachable in the modules (see the docstring)."""
    found, seen = {}, set()

    def visit(value, label, depth=0):
        if id(value) in seen or depth > 6:
            return
        seen.add(id(value))
        if isinstance(value, functools.partial):
            found[label] = value
            visit(value.func, label + ".func", depth + 1)
            for i, arg in enumerate(value.args):
                visit(arg, f"{label}.args[{i}]", depth + 1)
            for key, arg in value.keywords.items():
                visit(arg, f"{label}.{key}", depth + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for i, item in enumerate(value):
                visit(item, f"{label}[{i}]", depth + 1)
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{label}[{key!r}]", depth + 1)
        elif isinstance(value, type):
            if own(value, modules):
                for name, attribute in vars(value).items():
                    if isinstance(attribute, (staticmethod, classmethod)):
                        found[f"{label}.{name}"] = getattr(value, name)
                        visit(attribute.__func__, f"{label}.{name}", depth + 1)
                    elif isinstance(attribute, property):
                        visit(attribute.fget, f"{label}.{name}.fget", depth + 1)
                    elif not name.startswith("__"):
                        visit(attribute, f"{label}.{name}", depth + 1)
        elif isinstance(value, types.FunctionType):
            if own(value, modules):
                found[label] = value
                for i, default in enumerate(value.__defaults__ or ()):
                    visit(default, f"{label}.default[{i}]", depth + 1)
                for cell, name in zip(value.__closure__ or (), value.__code__.co_freevars):
                    try:
                        visit(cell.cell_contents, f"{label}.<{name}>", depth + 1)
                    except ValueError:  # an empty cell
                        pass
        elif isinstance(value, types.MethodType):
            visit(value.__func__, label, depth + 1)
        elif own(type(value), modules) and hasattr(value, "__dict__"):
            for name, attribute in vars(value).items():
                visit(attribute, f"{label}.{name}", depth + 1)
            if callable(value):
                found[label] = value
            visit(type(value), f"{label}.__class__", depth + 1)

    for name, module in modules.items():
        for attribute, value in vars(module).items():
            visit(value, f"{name}.{attribute}")
        for qualname, function in written(module).items():
            found.setdefault(f"{name}.{qualname} (from its source)", function)
    return found


def written(module):
    """{qualified name: function} of every function and lambda written in the module's
    source, compiled from its code objects (one for each `def` and `lambda`). A free
    variable (a closure's) reads the function of that name written beside it in the same
    scope, else the module's value of that name, else None."""
    source = Path(module.__file__).read_text()
    functions, parents = {}, [compile(source, module.__file__, "exec")]
    while parents:
        parent = parents.pop()
        children = [const for const in parent.co_consts if isinstance(const, types.CodeType)]
        made = {}
        for code in children:
            cells = tuple(types.CellType() for _ in code.co_freevars)
            function = types.FunctionType(code, vars(module), code.co_name, None, cells or None)
            made[code.co_name] = function
            functions[getattr(code, "co_qualname", code.co_name)] = function
            parents.append(code)
        for function in made.values():
            for cell, name in zip(function.__closure__ or (), function.__code__.co_freevars):
                cell.cell_contents = made.get(name, vars(module).get(name))
    return functions


# ---------------------------------------------------------------- calling them


def alarm(signum, frame):
    raise Late()


def outcome(task, function, args, kwargs):
    """What a test observes of function(*args, **kwargs) for this task (take_batch: the
    lab.responses outcome, on fresh responses); raises if the call does."""
    from lab.responses import take_outcome

    if task == "2b":
        shapes, *rest = args
        return take_outcome(lambda *call: function(*call, **kwargs), shapes, *rest)
    return function(*args, **kwargs)


def attempt(task, function, args, kwargs):
    """outcome(), or None if it raised anything or ran past CALL_LIMIT (or the tool's
    own alarms were disturbed: they are set again for each call)."""
    signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT)
    try:
        with (
            np.errstate(all="ignore"),
            open(os.devnull, "w") as quiet,
            contextlib.redirect_stdout(quiet),
            contextlib.redirect_stderr(quiet),
        ):
            return outcome(task, function, args, kwargs)
    except BaseException:  # noqa: BLE001 (whatever a callable does with wrong arguments)
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()


def leaks(callables, calls, reference, same):
    """[(label, task, part)] for each callable that gives the reference's outcome on every
    call of a (task, part), in one of the ways the arguments are handed over."""
    from lab import TASKS

    expected = {
        key: [attempt(key[0], reference[TASKS[key[0]].what], *ref) for _, ref in group]
        for key, group in calls.items()
    }
    found = []
    for label, function in callables.items():
        for (task, part), group in calls.items():
            for form in range(len(group[0][0])):
                matched = True
                for (forms, _), want in zip(group, expected[(task, part)]):
                    got = attempt(task, function, *forms[form])
                    if got is None or want is None or not same(got, want):
                        matched = False
                        break
                if matched:
                    found.append((label, task, part))
                    break
    return found


# ---------------------------------------------------------------- in the copy


def copy_modules(copy):
    """The dotted names of the copy's Python modules, without the student files."""
    return sorted(
        ".".join(path.relative_to(copy).with_suffix("").parts).removesuffix(".__init__")
        for path in copy.rglob("*.py")
        if path.relative_to(copy).as_posix() not in STUDENT_FILES
        and ".venv" not in path.parts
        and "__pycache__" not in path.parts
    )


def check_here(copy):
    """In the child process, run from the copy: the leaks, one line each."""
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
    os.environ["RL_SOLUTIONS"] = "0"
    modules = {}
    for name in copy_modules(copy):
        try:
            modules[name] = importlib.import_module(name)
        except BaseException as error:  # noqa: BLE001 (a module that cannot load holds no leak)
            print(f"leaks: {name} not imported: {type(error).__name__}: {error}", file=sys.stderr)
    from grading.feedback import same
    from lab import STUDENT_MODULES

    reference = {}
    for module in STUDENT_MODULES:
        spec = importlib.util.spec_from_file_location(
            f"reference_{module}", ROOT / "solutions" / f"{module}.py"
        )
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        reference.update({name: getattr(loaded, name) for name in dir(loaded)})
    callables = reachable(modules)
    found = leaks(callables, inputs(np.random.default_rng(2026)), reference, same)
    for label, task, part in found:
        print(f"LEAK: {label} gives Task {task}'s answers" + (f" ({part})" if part else ""))
    print(
        f"leaks: {len(callables)} callables in {len(modules)} modules, called as each task "
        f"function: {len(found)} solve a task"
    )
    return found


def check(copy):
    """Run the check on the students' copy at `copy` in a child process; (ok, its report)."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--here", str(copy)],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ, PYTHONPATH=str(copy)),
    )
    report = done.stdout + done.stderr
    return done.returncode == 0 and "leaks: " in done.stdout, report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--here"]:
        copy = Path(argv[1]).resolve()
        sys.path.insert(0, str(copy))
        return 1 if check_here(copy) else 0
    if len(argv) != 1:
        sys.exit(__doc__.split("\n\n")[1])
    ok, report = check(Path(argv[0]).resolve())
    print(report, end="")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
