"""The HTTP service under a bounded concurrent load on loopback (MultiHop-RAG index).

    python benchmarks/serve.py [--requests 2000] [--concurrency 1,8,32]
                               [--modes naive,collapsed,graph] [--duration-cap 300]
                               [--budget 2000] [--index PATH] [--no-ablation]

Starts the real server (``python -m graphstrata.bindings.server``) in a subprocess on a free
127.0.0.1 port over the MultiHop-RAG index that ``benchmarks/retrieval.py`` builds under
``build/bench-indexes/`` (reused when a complete build exists, built otherwise, with the
default CPU backends: packaged all-MiniLM-L6-v2 + extractive LLM), then sends ``--requests``
``POST /v1/retrieve`` requests (the 500 MultiHop-RAG questions, cycled) per (mode,
concurrency) cell with ``graphstrata.bindings.loadgen.run_load``. A mode the index was not
built with is skipped and named. Unless ``--no-ablation``, the naive mode is also run with
query micro-batching turned off, and the embedder is timed alone on one query versus a batch,
so the bottleneck can be named from measurements.

Writes ``benchmarks/results/serve.md`` and ``serve.json``. Skips cleanly (exit 0) when
``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
INDEX_ROOT = REPO / "build" / "bench-indexes"
RESULTS = REPO / "benchmarks" / "results"
DATASET = "multihop_rag"
MODES = ("naive", "collapsed", "graph")
DEFAULT_SETTING = "2 ms window (default)"
#: Server settings compared with the default on the naive mode (label, server arguments).
ABLATIONS = (
    ("0 ms window", ["--microbatch-wait-ms", "0"]),
    ("no micro-batching", ["--microbatch-wait-ms", "0", "--microbatch-max", "1"]),
    ("1 embedder thread", ["--embed-threads", "1"]),
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}"


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def complete_builds() -> list[tuple[Path, dict[str, Any]]]:
    """MultiHop-RAG indexes under build/bench-indexes with a build record, with the record."""
    found = []
    for p in INDEX_ROOT.glob(f"{DATASET}*"):
        record = p.with_suffix(".build.json")
        # A directory without a record (or "*.building") is a build in progress.
        if p.is_dir() and not p.suffix and (p / "manifest.json").exists() and record.exists():
            found.append((p, json.loads(record.read_text())))
    return found


def built_components(record: dict[str, Any]) -> list[str]:
    return list(record.get("identity", {}).get("components", []))


def locate_index(explicit: str | None, wanted: list[str]) -> tuple[Path, list[str] | None]:
    """The index to serve and the components it was built with (None: unknown, assume all).

    Among complete builds, the one whose components serve most of the wanted modes wins
    (then the newest); with none, ``benchmarks/retrieval.py`` builds one (default components).
    """
    if explicit:
        return Path(explicit), None
    builds = complete_builds()
    if not builds:
        log("no complete MultiHop-RAG index under build/bench-indexes; building one")
        sys.path.insert(0, str(REPO / "benchmarks"))
        import retrieval  # the one builder of benchmark indexes

        retrieval.build_or_reuse(DATASET, retrieval.components_for(None))
        builds = complete_builds()

    def coverage(item: tuple[Path, dict[str, Any]]) -> tuple[int, str]:
        record = item[1]
        served = {"naive"} | modes_of(built_components(record))
        return len(served & set(wanted)), record.get("built_at", "")

    path, record = max(builds, key=coverage)
    log(f"reusing {path.relative_to(REPO)} (built {record.get('built_at', '?')})")
    return path, built_components(record) or None


def modes_of(components: list[str]) -> set[str]:
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.index import default_components

    return {m for c in default_components(IndexConfig()) if c.name in components for m in c.modes}


def unbuilt_modes(built: list[str] | None) -> set[str]:
    """Modes served by components present in the code but absent when the index was built."""
    if built is None:
        return set()
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.index import default_components

    return {m for c in default_components(IndexConfig()) if c.name not in built for m in c.modes}


def questions() -> list[str]:
    with open(DATA / DATASET / "qa.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["question"] for line in fh if line.strip()]


def time_embedder(index: Path, queries: list[str], repeats: int = 3) -> dict[str, Any]:
    """The embedder alone, in this process: one query at a time versus batches of 32."""
    from graphstrata.bindings.backends import make_embedder
    from graphstrata.engine.store import Store

    embedder = make_embedder(Store.open(index).manifest["embedder"]["name"])
    sample = queries[:64]
    embedder.embed(sample[:8])  # load the model, warm the kernels
    best_single = best_batch = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for q in sample:
            embedder.embed([q])
        best_single = min(best_single, (time.perf_counter() - t0) / len(sample))
        t0 = time.perf_counter()
        for i in range(0, len(sample), 32):
            embedder.embed(sample[i : i + 32])
        best_batch = min(best_batch, (time.perf_counter() - t0) / len(sample))
    return {
        "embedder": embedder.name,
        "single_ms_per_query": 1000 * best_single,
        "batch32_ms_per_query": 1000 * best_batch,
    }


def run_cell(
    server: Any, queries: list[str], mode: str, c: int, args: argparse.Namespace, label: str
) -> dict[str, Any]:
    from graphstrata.bindings.loadgen import run_load

    log(f"{label}: {mode} at concurrency {c} ({args.requests} requests)")
    (result,) = run_load(
        server.url,
        queries,
        modes=[mode],
        concurrencies=[c],
        requests=args.requests,
        duration_cap=args.duration_cap,
        budget_tokens=args.budget,
        server_pid=server.proc.pid,
    )
    row = {"setting": label, **result.summary(), "load1": round(os.getloadavg()[0], 2)}
    log(
        f"  p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, {row['rps']:.1f} req/s, "
        f"mean batch {row['mean_batch']:.1f}, embed share {100 * row['embed_share']:.0f}%, "
        f"server CPU {row['server_cpu_ms_per_request']} ms/req, load {row['load1']}"
    )
    return row


def run_all(
    index: Path,
    queries: list[str],
    modes: list[str],
    concurrencies: list[int],
    args: argparse.Namespace,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """The grid on the default server, then the A/B comparisons on naive.

    Every setting has its own server, all started before the A/B block, and the A/B cells of
    one concurrency run back to back (default first), so each comparison is made under the
    same background load (this machine is shared).
    """
    from graphstrata.bindings.server_process import server_process

    settings: list[tuple[str, list[str]]] = [(DEFAULT_SETTING, [])]
    if not args.no_ablation and "naive" in modes:
        settings += list(ABLATIONS)
    with contextlib.ExitStack() as stack:
        servers = {
            label: stack.enter_context(server_process(index, server_args, startup_timeout=600))
            for label, server_args in settings
        }
        grid = [
            run_cell(servers[DEFAULT_SETTING], queries, mode, c, args, DEFAULT_SETTING)
            for mode in modes
            for c in concurrencies
        ]
        ab = [
            run_cell(servers[label], queries, "naive", c, args, label)
            for c in sorted({min(concurrencies), max(concurrencies)})
            for label, _ in (settings if len(settings) > 1 else [])
        ]
    reports = {label: (s.output.strip().splitlines() or [""])[-1] for label, s in servers.items()}
    return grid, ab, reports


def markdown(data: dict[str, Any]) -> str:
    from graphstrata.bindings.loadgen import format_load_table

    emb = data.get("embedder_alone")
    lines = [
        "# HTTP service under load",
        "",
        f"Command: `{data['command']}`  ",
        f"Machine: {data['machine']}; load average before the run: {data['load_before']}, "
        f"after: {data['load_after']}. Written {data['written']}.",
        "",
        f"Index: `{data['index']}` ({data['index_stats']}). Queries: the "
        f"{data['queries']} MultiHop-RAG questions, cycled; budget {data['budget']} tokens; "
        f"{data['requests']} requests per cell, duration cap {data['duration_cap']} s per cell. "
        "Server and load generator are separate processes on the same machine, talking over "
        "127.0.0.1 (HTTP/1.1 keep-alive, one connection per concurrent client).",
        "",
    ]
    if data["skipped_modes"]:
        lines += [
            f"Skipped (this index was not built with them): {', '.join(data['skipped_modes'])}.",
            "",
        ]
    lines += [
        "Columns: latency is client-side per request (ms); **req/s** = successful requests / "
        "wall time of the cell; **mean batch** = queries per query-embedding call on the server; "
        "**embed ms/q** and **search ms/q** = server time per query embedding (amortized over "
        "its batch) and searching; **embed share** = embed / (embed + search) of the server's "
        "query work; **embedder busy** = share of the cell's wall time the embedder was running "
        "(100% = saturated).",
        "",
        format_load_table(data["rows"]),
        "",
    ]
    if data["ab_rows"]:
        lines += [
            "A/B on `naive`: each setting runs on its own server; the cells of one concurrency "
            "run back to back (default first) so they share the same background load "
            "(**load** = 1-minute load average at the end of the cell).",
            "",
            format_load_table(data["ab_rows"]),
            "",
        ]
    if emb:
        lines += [
            f"Embedder alone ({emb['embedder']}, this process, no server): "
            f"{emb['single_ms_per_query']:.2f} ms per query one at a time, "
            f"{emb['batch32_ms_per_query']:.2f} ms per query in batches of 32.",
            "",
        ]
    for label, report in data["server_reports"].items():
        if report:
            lines.append(f"Server report ({label}): {report}  ")
    lines += ["", "## Bottleneck", "", data.get("bottleneck", "(see the table)"), ""]
    return "\n".join(lines)


def name_bottleneck(
    grid: list[dict[str, Any]], ab: list[dict[str, Any]], emb: dict[str, Any] | None
) -> str:
    """The measurements that locate the bottleneck, as sentences (the analysis cites them)."""
    if not grid:
        return ""
    parts = []
    top_c = max(r["concurrency"] for r in grid)
    for r in (r for r in grid if r["concurrency"] == top_c):
        client_ms = 1000 * r["client_cpu_seconds"] / max(r["ok"], 1)
        wall_ms = 1000 / r["rps"] if r["rps"] else float("nan")
        parts.append(
            f"`{r['mode']}` at concurrency {top_c}: {r['rps']:.0f} req/s ({wall_ms:.2f} ms of "
            f"wall time per request); the server embeds for {r['embed_ms_per_query']:.2f} ms "
            f"per query (batches of {r['mean_batch']:.1f}, embedder busy "
            f"{100 * r['embed_busy']:.0f}% of the time) and searches for "
            f"{r['search_ms_per_query']:.2f} ms; it burns {r['server_cpu_ms_per_request']} ms "
            f"of CPU per request, the load generator {client_ms:.2f} ms"
        )
    default = {r["concurrency"]: r for r in ab if r["setting"] == DEFAULT_SETTING}
    for r in ab:
        twin = default.get(r["concurrency"])
        if r["setting"] == DEFAULT_SETTING or twin is None:
            continue
        parts.append(
            f"{r['setting']} vs default (`naive`, concurrency {r['concurrency']}, back to "
            f"back): {r['rps']:.0f} vs {twin['rps']:.0f} req/s, p50 {r['p50_ms']:.1f} vs "
            f"{twin['p50_ms']:.1f} ms, p99 {r['p99_ms']:.1f} vs {twin['p99_ms']:.1f} ms, "
            f"embedding {r['embed_ms_per_query']:.2f} vs {twin['embed_ms_per_query']:.2f} ms "
            f"per query, server CPU {r['server_cpu_ms_per_request']} vs "
            f"{twin['server_cpu_ms_per_request']} ms per request"
        )
    if emb:
        parts.append(
            f"the embedder alone: {emb['single_ms_per_query']:.2f} ms per query one at a time, "
            f"{emb['batch32_ms_per_query']:.2f} ms per query in batches of 32"
        )
    return "Measured: " + "; ".join(parts) + "."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--duration-cap", type=float, default=300.0, dest="duration_cap")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--index", help="serve this index instead of the MultiHop-RAG build")
    parser.add_argument("--no-ablation", action="store_true", dest="no_ablation")
    parser.add_argument("--out", default=str(RESULTS / "serve.md"))
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared evaluation data is absent)")
        return 0
    command = "python benchmarks/serve.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
    wanted = [m for m in args.modes.split(",") if m]
    index, built_with = locate_index(args.index, wanted)
    from graphstrata.bindings.loadgen import service_modes
    from graphstrata.bindings.server_process import server_process

    with server_process(index, [], startup_timeout=600) as probe:
        served = service_modes(probe.url, None)
    missing = unbuilt_modes(built_with)
    modes = [m for m in wanted if m in served and m not in missing]
    skipped = [m for m in wanted if m not in modes]
    if skipped:
        log(f"skipping modes this index does not serve or was not built with: {skipped}")
    concurrencies = [int(c) for c in args.concurrency.split(",") if c]
    queries = questions()
    load_before = load_average()
    emb = None if args.no_ablation else time_embedder(index, queries)
    grid, ab, reports = run_all(index, queries, modes, concurrencies, args)
    from graphstrata.engine.store import Store

    snap = Store.open(index).load(verify=False)
    kinds = snap.nodes.kind
    data = {
        "command": command,
        "machine": machine(),
        "written": time.strftime("%Y-%m-%d %H:%M"),
        "load_before": load_before,
        "load_after": load_average(),
        "index": str(index.relative_to(REPO) if index.is_relative_to(REPO) else index),
        "index_stats": f"{snap.docs.num_rows} documents, {len(kinds)} nodes, "
        f"embedder {snap.manifest['embedder']['name']}, built with "
        f"{', '.join(built_with) if built_with else 'unknown components'}",
        "queries": len(queries),
        "budget": args.budget,
        "requests": args.requests,
        "duration_cap": args.duration_cap,
        "modes": modes,
        "skipped_modes": skipped,
        "embedder_alone": emb,
        "rows": grid,
        "ab_rows": ab,
        "server_reports": reports,
    }
    data["bottleneck"] = name_bottleneck(grid, ab, emb)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(data), encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    log(f"wrote {out} and {out.with_suffix('.json')}")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
