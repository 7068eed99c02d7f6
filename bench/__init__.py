"""Benchmarks of the Fire-and-Forget reference: `make bench` runs bench/run.py and writes docs/performance.md."""
