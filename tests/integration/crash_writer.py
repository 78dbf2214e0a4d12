"""Subprocess used by test_crash_safety: open an index and insert one batch, maybe dying."""

from __future__ import annotations

import json
import sys

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder


def main() -> None:
    path, docs_file = sys.argv[1], sys.argv[2]
    with open(docs_file, encoding="utf-8") as fh:
        docs = [json.loads(line) for line in fh]
    index = Index.open(path, embedder=HashingEmbedder(64))
    print("ready", flush=True)
    index.insert(docs)
    print("committed", index.version, flush=True)


if __name__ == "__main__":
    main()
