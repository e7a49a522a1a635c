"""Write a course release of the lab: the students' repository and the Gradescope autograder.

    python tools/release.py OUT

OUT/student/          the repository students get: the lab without solutions/, tools/
                      (stub generator, release checks, the corpus of wrong answers) and CI;
                      its README is README.md without the instructor parts.
OUT/autograder.zip    the Gradescope bundle: setup.sh, run_autograder, grader/ (from
                      tools/autograder/) and course/ (the student files plus solutions/ and
                      the unseen-input checks, tools/autograder/fresh_checks.py as
                      test_fresh.py). See README "For instructors".

README.md marks what only instructors see: a line ending in `<!-- instructor -->`, or
the lines between `<!-- instructor -->` and `<!-- /instructor -->`. Lines between
`<!-- student` and `student -->` (hidden in README.md) are shown in the students' copy.
"""
import argparse
import shutil
import subprocess
import sys
import zipfile
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_FOR_STUDENTS = ("solutions/", "tools/", ".ci/", "README.md")
MARK = "<!-- instructor -->"
END_MARK = "<!-- /instructor -->"
STUDENT_START, STUDENT_END = "<!-- student", "student -->"
GRADER_FILES = ("__init__.py", "grade.py", "remote.py", "serve.py", "wire.py")
BUNDLE_ROOT_FILES = ("setup.sh", "run_autograder", "requirements.txt")


def lab_files():
    """The lab's files as git sees them (committed or new, not ignored), relative to ROOT.
    Outside a git checkout (CI's copy), every file that .gitignore does not match."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return sorted(path for path in listed.splitlines() if (ROOT / path).is_file())
    except (OSError, subprocess.CalledProcessError):
        lines = (ROOT / ".gitignore").read_text().splitlines()
        ignored = [line.rstrip("/") for line in lines if line and not line.startswith("#")]
        ignored.append(".git")
        return sorted(str(path.relative_to(ROOT)) for path in ROOT.rglob("*") if path.is_file()
                      and not any(fnmatch(part, pattern) for part in path.relative_to(ROOT).parts
                                  for pattern in ignored))


def student_readme(text):
    """README.md as the students' copy shows it (see the module docstring)."""
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
        raise ValueError(f"README.md: a {MARK} block is never closed by {END_MARK}")
    return "\n".join(lines) + "\n"


def write_student(out):
    """OUT/student: the students' repository."""
    for path in lab_files():
        if not path.startswith(NOT_FOR_STUDENTS):
            (out / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, out / path)
    (out / "README.md").write_text(student_readme((ROOT / "README.md").read_text()))


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
    print(f"Wrote {student} (the students' repository) and {out / 'autograder.zip'} "
          "(the Gradescope autograder)")


if __name__ == "__main__":
    sys.exit(main())
