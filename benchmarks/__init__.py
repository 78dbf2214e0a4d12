"""Benchmarks of graphstrata, by family; run each as a module from the repository root:
``python -m benchmarks.<family>.<script> ...`` (see :mod:`benchmarks.common`).

Results are written to ``benchmarks/results/``.
"""
