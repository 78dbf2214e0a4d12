"""Checks that need a CUDA machine (see README.md here)."""
