"""Benchmarks: kept out of the test run, each writing machine-readable results."""
