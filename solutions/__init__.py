"""The reference solutions, from which tools/make_stubs.py generates the student files."""
