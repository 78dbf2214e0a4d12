"""The HTTP service under a bounded concurrent load on loopback (MultiHop-RAG index).

    python -m benchmarks.service.serve [--requests 2000] [--concurrency 1,8,32,128]
                               [--modes naive,hybrid,collapsed,graph] [--duration-cap 300]
                               [--budget 2000] [--index PATH]... [--ablations A,B] [--no-ablation]

Starts the real server (``python -m graphstrata.bindings.server``) in a subprocess on a free
127.0.0.1 port over the MultiHop-RAG index that ``benchmarks/quality/retrieval.py`` builds under
``build/bench-indexes/`` (reused when a complete build exists, built otherwise), or over the
``--index`` directories (several: each measured on the wanted modes it serves that no earlier
one served, e.g. a hierarchy + sparse + hybrid index and a heterograph index), then sends
``--requests`` ``POST /v1/retrieve`` requests (the 500 MultiHop-RAG questions, cycled) per
(mode, concurrency) cell with ``benchmarks.service.loadgen.run_load``. A mode the index was
not built with is skipped and named.

The grid's server has the query-vector cache off, so every request embeds its query (the
questions are cycled: with the cache on, the grid would measure cache hits). The A/B block
(``--ablations``; default: the cache on, warmed by one pass over the questions) compares
other server settings at concurrency 32 on ``naive`` and ``graph``; every server admits 256
requests in flight (default 64), so concurrency 128 measures queueing, not 429s; the embedder
is also timed alone on one query versus a batch, so the bottleneck can be named from
measurements. ``--no-ablation`` skips both.

Writes ``benchmarks/results/serve.md`` and ``serve.json``. Skips cleanly (exit 0) when
``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA,
    INDEX_ROOT,
    REPO,
    RESULTS,
    command_line,
    load1,
    load_text,
    log,
    machine,
    write_json,
)

DATASET = "multihop_rag"
MODES = ("naive", "hybrid", "collapsed", "graph")
#: The grid's server: default settings, but every query embedded. The questions are cycled,
#: so with the query-vector cache on every request after the first pass would be a hit and
#: the grid would not measure the embedder at all.
DEFAULT_SETTING = "cache off"
#: Every server of the run admits 256 retrievals in flight (the default is 64), so the
#: concurrency-128 cells measure queueing rather than 429 refusals.
DEFAULT_ARGS = ["--query-cache", "0", "--max-concurrency", "256"]
#: The concurrency of the A/B cells (the issue's target), else the highest measured.
AB_CONCURRENCY = 32
CACHE_SETTING = "cache on (warm)"
#: Server settings compared with the grid's at the highest concurrency (label, server
#: arguments, warm the query cache first); ``--ablations`` picks them by label.
ABLATIONS = (
    (CACHE_SETTING, ["--query-cache", "4096", "--max-concurrency", "256"], True),
    (
        "no micro-batching",
        [*DEFAULT_ARGS, "--microbatch-wait-ms", "0", "--microbatch-max", "1"],
        False,
    ),
    ("1 embedder thread", [*DEFAULT_ARGS, "--embed-threads", "1"], False),
)


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
    (then the newest); with none, ``benchmarks/quality/retrieval.py`` builds one (default components).
    """
    if explicit:
        return Path(explicit), None
    builds = complete_builds()
    if not builds:
        log("no complete MultiHop-RAG index under build/bench-indexes; building one")
        from benchmarks.quality import retrieval  # the one builder of benchmark indexes

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
    from graphstrata.engine.modes.registry import default_components

    return {m for c in default_components(IndexConfig()) if c.name in components for m in c.modes}


def unbuilt_modes(built: list[str] | None) -> set[str]:
    """Modes served by components present in the code but absent when the index was built."""
    if built is None:
        return set()
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.modes.registry import default_components

    return {m for c in default_components(IndexConfig()) if c.name not in built for m in c.modes}


def questions() -> list[str]:
    with open(DATA / DATASET / "qa.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["question"] for line in fh if line.strip()]


def time_embedder(index: Path, queries: list[str], repeats: int = 3) -> dict[str, Any]:
    """The embedder alone, in this process: one query at a time versus batches of 32."""
    from graphstrata.bindings.registry import make_embedder
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
    from benchmarks.service.loadgen import run_load

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
    row = {"setting": label, **result.summary(), "load1": load1()}
    log(
        f"  p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, {row['rps']:.1f} req/s, "
        f"mean batch {row['mean_batch']:.1f}, embed share {100 * row['embed_share']:.0f}%, "
        f"server CPU {row['server_cpu_ms_per_request']} ms/req, load {row['load1']}"
    )
    return row


def warm_up(server: Any, queries: list[str], modes: list[str], requests: int, c: int) -> None:
    """Send ``requests`` unrecorded requests per mode (first-call costs: kernels, views,
    the model's first batch shapes; or the query cache), with no duration cap."""
    from benchmarks.service.loadgen import run_load

    for mode in modes:
        run_load(server.url, queries, modes=[mode], concurrencies=[c], requests=requests,
                 duration_cap=3600.0)  # fmt: skip


def run_all(
    index: Path,
    queries: list[str],
    modes: list[str],
    concurrencies: list[int],
    args: argparse.Namespace,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """The grid on the default server (cache off), then the A/B comparisons.

    Every setting has its own server, all started before the A/B block, and the A/B cells
    run back to back with the grid's server first, at concurrency 32 (else the highest
    measured), on ``naive``
    and ``graph`` where the index serves them (else its first mode), so each comparison is
    made under the same background load (this machine is shared). A setting that warms the
    query cache first sends every question once (not recorded).
    """
    from benchmarks.service.server_process import server_process

    chosen = [a for a in ABLATIONS if a[0] in args.ablations]
    settings = [(DEFAULT_SETTING, DEFAULT_ARGS, False), *chosen]
    ab_modes = [m for m in modes if m in ("naive", "graph")] or modes[:1]
    top = AB_CONCURRENCY if AB_CONCURRENCY in concurrencies else max(concurrencies)
    with contextlib.ExitStack() as stack:
        servers = {
            label: stack.enter_context(server_process(index, server_args, startup_timeout=600))
            for label, server_args, _ in settings
        }
        for label, server in servers.items():
            log(f"{label}: warming up ({', '.join(modes)})")
            warm_up(server, queries, modes, 8, 2)
        grid = [
            run_cell(servers[DEFAULT_SETTING], queries, mode, c, args, DEFAULT_SETTING)
            for mode in modes
            for c in concurrencies
        ]
        ab = []
        for mode in ab_modes if chosen else []:
            for label, _, warm in settings:
                if warm:
                    log(f"{label}: warming the query cache with the {len(queries)} questions")
                    warm_up(servers[label], queries, [mode], len(queries), top)
                ab.append(run_cell(servers[label], queries, mode, top, args, label))
    reports = {label: (s.output.strip().splitlines() or [""])[-1] for label, s in servers.items()}
    return grid, ab, reports


def markdown(data: dict[str, Any]) -> str:
    from benchmarks.service.loadgen import format_load_table

    emb = data.get("embedder_alone")
    lines = [
        "# HTTP service under load",
        "",
        f"Command: `{data['command']}`  ",
        f"Machine: {data['machine']}; load average before the run: {data['load_before']}, "
        f"after: {data['load_after']}. Written {data['written']}.",
        "",
        "Indexes: " + ", ".join(f"`{part['index']}`" for part in data["parts"]) + ". Queries: the "
        f"{data['queries']} MultiHop-RAG questions, cycled; budget {data['budget']} tokens; "
        f"{data['requests']} requests per cell, duration cap {data['duration_cap']} s per cell. "
        "Server and load generator are separate processes on the same machine, talking over "
        "127.0.0.1 (HTTP/1.1 keep-alive, one connection per concurrent client). The cores "
        "are shared with other jobs: the **load** column is the 1-minute load average at the "
        "end of each cell.",
        "",
    ]
    if data["skipped_modes"]:
        lines += [
            "Skipped (no index served them or was built with them): "
            f"{', '.join(data['skipped_modes'])}.",
            "",
        ]
    lines += [
        "Columns: latency is client-side per request (ms); **req/s** = successful requests / "
        "wall time of the cell; **mean batch** = queries per query-embedding call on the server; "
        "**embed ms/q** and **search ms/q** = server time per query embedding (amortized over "
        "its batch) and searching; **embed share** = embed / (embed + search) of the server's "
        "query work; **embedder busy** = share of the cell's wall time the embedder was running "
        "(100% = saturated); **cache hits** = share of the queries answered from the "
        "query-vector cache; **server CPU ms/req** = the server process's CPU time per "
        "request (it barely moves with the background load).",
        "",
    ]
    for part in data["parts"]:
        lines += [
            f"### `{part['index']}`",
            "",
            f"{part['index_stats']}.",
            "",
            format_load_table(part["rows"]),
            "",
        ]
        if part["ab_rows"]:
            lines += [
                "A/B: each setting runs on its own server; the cells of one mode run back to "
                "back (the grid's server first) so they share the same background load. "
                f"`{CACHE_SETTING}`: the server's default query-vector cache (4,096 vectors), "
                "warmed by one pass over the questions, so every query is a repeat.",
                "",
                format_load_table(part["ab_rows"]),
                "",
            ]
        for label, report in part["server_reports"].items():
            if report:
                lines.append(f"Server report ({label}): {report}  ")
        lines.append("")
    if emb:
        lines += [
            f"Embedder alone ({emb['embedder']}, this process, no server): "
            f"{emb['single_ms_per_query']:.2f} ms per query one at a time, "
            f"{emb['batch32_ms_per_query']:.2f} ms per query in batches of 32.",
            "",
        ]
    lines += ["## Bottleneck", "", data.get("bottleneck", "(see the table)"), ""]
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
    default = {(r["mode"], r["concurrency"]): r for r in ab if r["setting"] == DEFAULT_SETTING}
    for r in ab:
        twin = default.get((r["mode"], r["concurrency"]))
        if r["setting"] == DEFAULT_SETTING or twin is None:
            continue
        parts.append(
            f"{r['setting']} vs {DEFAULT_SETTING} (`{r['mode']}`, concurrency "
            f"{r['concurrency']}, back to "
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
    parser.add_argument("--concurrency", default="1,8,32,128")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--duration-cap", type=float, default=300.0, dest="duration_cap")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument(
        "--index",
        action="append",
        default=[],
        help="serve this index instead of the MultiHop-RAG build (repeatable: each index is "
        "measured on the wanted modes it serves that no earlier index served)",
    )
    parser.add_argument(
        "--ablations",
        default=CACHE_SETTING,
        help="comma-separated A/B settings: " + ", ".join(a[0] for a in ABLATIONS),
    )
    parser.add_argument("--no-ablation", action="store_true", dest="no_ablation")
    parser.add_argument("--out", default=str(RESULTS / "serve.md"))
    args = parser.parse_args(argv)
    args.ablations = [] if args.no_ablation else [a for a in args.ablations.split(",") if a]
    unknown = set(args.ablations) - {a[0] for a in ABLATIONS}
    if unknown:
        parser.error(f"unknown ablations {sorted(unknown)}; known: {[a[0] for a in ABLATIONS]}")
    if not DATA.is_dir():
        print(f"skipped: {DATA} not found (the shared evaluation data is absent)")
        return 0
    command = command_line(__spec__.name, argv or None)
    wanted = [m for m in args.modes.split(",") if m]
    targets = [(Path(p), None) for p in args.index] if args.index else [locate_index(None, wanted)]
    from benchmarks.service.loadgen import service_modes
    from benchmarks.service.server_process import server_process
    from graphstrata.engine.store import Store

    concurrencies = [int(c) for c in args.concurrency.split(",") if c]
    queries = questions()
    load_before = load_text()
    emb = None if args.no_ablation else time_embedder(targets[0][0], queries)
    parts: list[dict[str, Any]] = []
    done: set[str] = set()
    for index, built_with in targets:
        with server_process(index, [], startup_timeout=600) as probe:
            served = service_modes(probe.url, None)
        missing = unbuilt_modes(built_with)
        modes = [m for m in wanted if m in served and m not in missing and m not in done]
        if not modes:
            log(f"{index}: none of the wanted modes left to measure; skipped")
            continue
        done.update(modes)
        grid, ab, reports = run_all(index, queries, modes, concurrencies, args)
        snap = Store.open(index).load(verify=False)
        record = index.with_name(index.name + ".build.json")
        if built_with is None and record.exists():
            built_with = built_components(json.loads(record.read_text()))
        components = built_with or sorted(snap.manifest.get("components", {}))
        parts.append(
            {
                "index": str(index.relative_to(REPO) if index.is_relative_to(REPO) else index),
                "index_stats": f"{snap.docs.num_rows} documents, {len(snap.nodes.kind)} nodes, "
                f"embedder {snap.manifest['embedder']['name']}, components "
                f"{', '.join(components) or 'unknown'}; modes measured here: {', '.join(modes)}",
                "modes": modes,
                "rows": grid,
                "ab_rows": ab,
                "server_reports": reports,
            }
        )
    skipped = [m for m in wanted if m not in done]
    if skipped:
        log(f"skipping modes no index serves or was built with: {skipped}")
    data = {
        "command": command,
        "machine": machine(),
        "written": time.strftime("%Y-%m-%d %H:%M"),
        "load_before": load_before,
        "load_after": load_text(),
        "queries": len(queries),
        "budget": args.budget,
        "requests": args.requests,
        "duration_cap": args.duration_cap,
        "modes": [m for m in wanted if m in done],
        "skipped_modes": skipped,
        "embedder_alone": emb,
        "parts": parts,
    }
    data["bottleneck"] = name_bottleneck(
        [r for part in parts for r in part["rows"]],
        [r for part in parts for r in part["ab_rows"]],
        emb,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(markdown(data), encoding="utf-8")
    write_json(out.with_suffix(".json"), data)
    log(f"wrote {out} and {out.with_suffix('.json')}")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
