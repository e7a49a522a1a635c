"""How an answer is compared with the one expected: one tolerance for each kind of
comparison, each defined here once (given).

The public tests (test_rl_systems.py, through grading/feedback.py's check, check_cases and
same), the autograder's checks on unseen inputs (tools/autograder/fresh_checks.py) and the
failure messages read them. KIND names the kind each task's answers are compared with, in
its public tests and its unseen check alike (tools/test_tolerances.py holds that); a public
test may name a stricter kind (STRICTER) for inputs where rounding is all that can differ.
"""

from typing import NamedTuple


class Tolerance(NamedTuple):
    name: str
    rtol: float  # relative: |got - expected| <= atol + rtol * |expected|
    atol: float  # absolute


# Ints, bools, ids and lags: equal, and of the type the docstring states.
EXACT = Tolerance("EXACT", 0.0, 0.0)
# Floats that code written another way (another order of sums, say) may round differently.
FLOATS = Tolerance("FLOATS", 1e-9, 1e-12)
# Bias and variance, each a sum over the toy's 4,096 responses of your own answers.
STATISTICS = Tolerance("STATISTICS", 1e-6, 1e-12)
# A few float operations on exact inputs (truncation at and around C, weights from e**-700
# to e**700, a sum against a plain loop): only the last bits may differ, and 0 is only 0.
ROUNDING = Tolerance("ROUNDING", 1e-12, 0.0)
# Numbers far below FLOATS' absolute floor (9.9e-305, say) that must not come out 0.
NO_FLOOR = Tolerance("NO_FLOOR", 1e-9, 0.0)

STRICTER = (ROUNDING, NO_FLOOR)
KIND = {
    "1a": EXACT,
    "1b": EXACT,
    "1c": FLOATS,
    "2a": EXACT,
    "2b": EXACT,
    "2": FLOATS,
    "3a": FLOATS,
    "3b": FLOATS,
    "3": STATISTICS,
    "3c": FLOATS,
}
