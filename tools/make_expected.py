"""Write grading/expected.json: the graded tests' expected values and hints' fingerprints.

    python tools/make_expected.py --write   # (re)write it from the reference (solutions/)
    python tools/make_expected.py --check   # exit 1 if it differs from what would be written

For instructors. The graded tests compare with data, never with code the students'
copy holds (grading/expected.py says how a table is found). This tool runs every
graded test on the reference at the stored seed (LAB_SEED=2026) with
grading.expected.RECORD set, so that each table a test asks for is worked out by
solutions/oracles.py and kept; then every task's known-mistake fingerprints on its
probes, and the tables that only a failing test asks for (the whole-simulation and
claims tests' culprits). The file holds each distinct value once.
"""

import argparse
import base64
import inspect
import json
import os
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["LAB_SEED"] = "2026"  # (before the tests draw their inputs)
os.environ["RL_SOLUTIONS"] = "1"
import grading
import lab  # these need ROOT on the path first
import test_rl_systems
from grading import expected


def recorded():
    """{name: {digest: [values]}}: every table the graded tests use at the stored seed."""
    assert grading.test_seed() == expected.STORED_SEED
    expected.RECORD = {}
    try:
        modules = {name: grading.load(name) for name in lab.STUDENT_MODULES}
        for name, test in vars(test_rl_systems).items():
            if lab.task_of(name) is not None:
                test(**{arg: modules[arg] for arg in inspect.signature(test).parameters})
        for known in test_rl_systems.KNOWN_MISTAKES.values():
            known.tables()
        # asked for only when a whole-simulation or claims test fails (here they pass)
        assert test_rl_systems.culprit(modules["scheduler"]) == ""
        assert test_rl_systems.tis_culprit(modules["tis"]) == ""
        return expected.RECORD
    finally:
        expected.RECORD = None


def text(tables):
    """The file's text: each distinct encoded value once in "values", and each table as
    the positions of its values there."""
    values, where = [], {}

    def place(value):
        encoded = expected.encode(value)
        key = json.dumps(encoded, sort_keys=True)
        if key not in where:
            where[key] = len(values)
            values.append(encoded)
        return where[key]

    indexed = {
        name: {key: [place(v) for v in found] for key, found in sorted(by_key.items())}
        for name, by_key in sorted(tables.items())
    }
    return (
        json.dumps(
            {"seed": expected.STORED_SEED, "tables": indexed, "values": values},
            separators=(",", ":"),
        )
        + "\n"
    )


def contents(text):
    """What a file's text holds, with each array's compressed bytes decompressed (another
    zlib may compress the same bytes otherwise)."""
    data = json.loads(text)
    data["values"] = [
        (value["array"], value["shape"], zlib.decompress(base64.b64decode(value["zlib"])))
        if isinstance(value, dict) and "zlib" in value
        else value
        for value in data["values"]
    ]
    return data


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="write grading/expected.json")
    action.add_argument("--check", action="store_true", help="exit 1 if it is out of date")
    args = parser.parse_args(argv)
    new = text(recorded())
    old = expected.DATA.read_text() if expected.DATA.exists() else None
    if args.write:
        expected.DATA.write_text(new)
        print(f"make_expected: wrote {expected.DATA.relative_to(ROOT)} ({len(new):,} bytes)")
        return 0
    if old is None or contents(new) != contents(old):
        print(
            f"make_expected: {expected.DATA.relative_to(ROOT)} is out of date: run python "
            "tools/make_expected.py --write"
        )
        return 1
    print(f"make_expected: {expected.DATA.relative_to(ROOT)} is up to date ({len(new):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
