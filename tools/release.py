"""Write a course release of the lab: the students' repository and the Gradescope autograder.

    python tools/release.py OUT

OUT/student/          the repository students get: the lab without solutions/, tools/
                      (stub generator, release checks, the corpus of wrong answers), CI
                      and the instructor-only docs (INSTRUCTOR_DOCS); its README and docs
                      without their instructor parts.
OUT/autograder.zip    the Gradescope bundle: setup.sh, run_autograder, grader/ (from
                      tools/autograder/) and course/ (the student files plus solutions/ and
                      the unseen-input checks, tools/autograder/fresh_checks.py as
                      test_fresh.py). See docs/instructors.md.

A Markdown file marks what only instructors see: a line ending in `<!-- instructor -->`,
or the lines between `<!-- instructor -->` and `<!-- /instructor -->`. Lines between
`<!-- student` and `student -->` (hidden in the repository) are shown in the students'
copy. In a Python file, a line ending in `(instructors only)` is left out (the
`--solutions` lines of run.py's docstring, say). A students' doc may not link to a file
the students' copy does not have.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import zipfile
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_FOR_STUDENTS = ("solutions/", "tools/", ".ci/")
INSTRUCTOR_DOCS = ("docs/instructors.md",)
MARK = "<!-- instructor -->"
END_MARK = "<!-- /instructor -->"
STUDENT_START, STUDENT_END = "<!-- student", "student -->"
PY_MARK = "(instructors only)"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")  # a Markdown link's target, without its #part
GRADER_FILES = (
    "__init__.py",
    "box.py",
    "grade.py",
    "remote.py",
    "serve.py",
    "student.py",
    "wire.py",
)
BUNDLE_ROOT_FILES = ("setup.sh", "run_autograder", "requirements.txt")


def lab_files():
    """The lab's files as git sees them (committed or new, not ignored), relative to ROOT.
    Outside a git checkout (CI's copy), every file that .gitignore does not match."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return sorted(path for path in listed.splitlines() if (ROOT / path).is_file())
    except (OSError, subprocess.CalledProcessError):
        lines = (ROOT / ".gitignore").read_text().splitlines()
        ignored = [line.rstrip("/") for line in lines if line and not line.startswith("#")]
        ignored.append(".git")
        return sorted(
            str(path.relative_to(ROOT))
            for path in ROOT.rglob("*")
            if path.is_file()
            and not any(
                fnmatch(part, pattern)
                for part in path.relative_to(ROOT).parts
                for pattern in ignored
            )
        )


def student_text(text, name="README.md"):
    """A Markdown file as the students' copy shows it (see the module docstring)."""
    lines, hidden = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == MARK:
            hidden = True
        elif stripped == END_MARK:
            hidden = False
        elif stripped in (STUDENT_START, STUDENT_END):
            continue
        elif not hidden and not line.rstrip().endswith(MARK):
            lines.append(line)
    if hidden:
        raise ValueError(f"{name}: a {MARK} block is never closed by {END_MARK}")
    return "\n".join(lines) + "\n"


def student_python(text):
    """A Python file as the students' copy shows it: without the lines marked PY_MARK."""
    return "".join(
        line for line in text.splitlines(keepends=True) if not line.rstrip().endswith(PY_MARK)
    )


def student_doc(doc):
    """The text of `doc` (a path from ROOT) in the students' copy, or None if it has none."""
    if doc in INSTRUCTOR_DOCS:
        return None
    return student_text((ROOT / doc).read_text(), doc)


def links(path, text):
    """The files a Markdown file at `path` (relative to the copy's root) links to."""
    folder = Path(path).parent
    return {
        Path(os.path.normpath(folder / target)).as_posix()
        for target in LINK.findall(text)
        if "://" not in target and not target.startswith("mailto:")
    }


def write_student(out):
    """OUT/student: the students' repository. Refuses a doc that links to a file left out."""
    shipped = [
        path
        for path in lab_files()
        if not path.startswith(NOT_FOR_STUDENTS) and path not in INSTRUCTOR_DOCS
    ]
    texts = {path: student_doc(path) for path in shipped if path.endswith(".md")}
    for path, text in texts.items():
        missing = sorted(links(path, text) - set(shipped))
        if missing:
            raise ValueError(
                f"{path} links to {', '.join(missing)}, which the students' copy "
                "does not have: mark the link <!-- instructor -->"
            )
    for path in shipped:
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        if path in texts:
            (out / path).write_text(texts[path])
        elif path.endswith(".py"):
            (out / path).write_text(student_python((ROOT / path).read_text()))
            shutil.copymode(ROOT / path, out / path)
        else:
            shutil.copy2(ROOT / path, out / path)


def write_bundle(student, zip_path):
    """OUT/autograder.zip from the students' repository, the reference and tools/autograder."""
    here = ROOT / "tools" / "autograder"
    with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name in BUNDLE_ROOT_FILES:
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable once unzipped
            bundle.writestr(info, (here / name).read_bytes(), zipfile.ZIP_DEFLATED)
        for name in GRADER_FILES:
            bundle.write(here / name, f"grader/{name}")
        for path in sorted(student.rglob("*")):
            if path.is_file():
                bundle.write(path, f"course/{path.relative_to(student)}")
        for path in sorted((ROOT / "solutions").glob("*.py")):
            bundle.write(path, f"course/solutions/{path.name}")
        bundle.write(here / "fresh_checks.py", "course/test_fresh.py")  # pytest collects test_*


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="a new or empty folder for the release")
    out = parser.parse_args(argv).out
    if out.exists() and any(out.iterdir()):
        parser.error(f"argument out: {out} exists and is not empty")
    student = out / "student"
    student.mkdir(parents=True)
    write_student(student)
    write_bundle(student, out / "autograder.zip")
    print(
        f"Wrote {student} (the students' repository) and {out / 'autograder.zip'} "
        "(the Gradescope autograder)"
    )


if __name__ == "__main__":
    sys.exit(main())
