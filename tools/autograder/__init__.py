"""The autograder bundle's package (tools/release.py ships it as grader/): see grade.py."""
