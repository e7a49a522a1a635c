"""The reference solutions: the source the student files are generated from (tools/make_stubs.py)."""
