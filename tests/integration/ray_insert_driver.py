"""Subprocess of test_ray_build: a Ray driver inserting a batch slowly, to be SIGKILLed.

``python ray_insert_driver.py RAY_ADDRESS INDEX SOURCE MARKER``: joins the test run's
cluster and inserts SOURCE into INDEX with an embedder that touches MARKER when it first
works and then takes 30 s per call, so the test kills this driver mid-job, writer lock held.
"""

from __future__ import annotations

import functools
import sys

from graphstrata.bindings.distributed import RayOptions, insert
from tests.helpers.ray_cluster import SlowEmbedder


def main() -> None:
    address, path, source, marker = sys.argv[1:5]
    insert(
        path,
        source,
        embedder=functools.partial(SlowEmbedder, marker, 30.0),
        options=RayOptions(address=address, actors=2),
    )
    print("committed", flush=True)  # the test fails if it gets here


if __name__ == "__main__":
    main()
