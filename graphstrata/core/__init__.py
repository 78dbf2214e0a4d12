"""Compiled kernels: pure functions over numpy arrays. No I/O, no models."""
