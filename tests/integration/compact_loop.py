"""Subprocess used by test_store_races: compact an index again and again until told to stop."""

from __future__ import annotations

import sys
from pathlib import Path

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder


def main() -> None:
    path, stop, limit = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    index = Index.open(path, embedder=HashingEmbedder(64))
    print("ready", flush=True)
    done = 0
    while not stop.exists() and done < limit:
        index.compact(wait=30.0)
        done += 1
    print("compactions", done, flush=True)


if __name__ == "__main__":
    main()
