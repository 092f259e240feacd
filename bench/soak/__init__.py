"""The chaos soak (issue 37): `python -m bench.soak --help`."""
