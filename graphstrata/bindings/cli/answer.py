"""``graphstrata answer INDEX "question"``: a grounded answer, streamed to the terminal.

The retrieved nodes are numbered and the index's LLM answers with ``[n]`` markers
(:meth:`Index.answer <graphstrata.bindings.api.Index.answer>`, the same answer as the chat
API's and ``POST /v1/answer``'s); the answer
is written piece by piece as it comes, then the citations, one line per marker. With
``--url`` the answer comes from a running ``graphstrata serve`` instead
(``POST /v1/chat/completions`` with ``stream: true``, read as server-sent events).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from graphstrata.bindings.cli.common import CLIError, open_index
from graphstrata.bindings.options import add_backend_args


def local_answer(args: argparse.Namespace) -> tuple[Iterator[str], list[dict[str, Any]]]:
    """The answer pieces and citations, from the index opened here."""
    from graphstrata.bindings.api import stream_pieces

    index = open_index(args)
    mode = args.mode or ("hybrid" if "hybrid" in index.modes else "naive")
    result = index.answer(args.question, mode, args.budget)
    return stream_pieces(result.answer or ""), result.citations or []


def remote_answer(args: argparse.Namespace) -> tuple[Iterator[str], list[dict[str, Any]]]:
    """The answer pieces (as they arrive) and citations, from a running service."""
    import httpx

    token = args.token if args.token is not None else os.environ.get("GRAPHSTRATA_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    model = args.index if not args.mode else f"{args.index}:{args.mode}"
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "messages": [{"role": "user", "content": args.question}],
        "sources": False,  # the citations are written below, one line per marker
    }
    if args.budget is not None:
        body["budget_tokens"] = args.budget
    citations: list[dict[str, Any]] = []

    def pieces() -> Iterator[str]:
        url = f"{args.url.rstrip('/')}/v1/chat/completions"
        with httpx.stream("POST", url, json=body, headers=headers, timeout=120) as response:
            if response.status_code != 200:
                response.read()
                raise CLIError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                citations.extend(chunk.get("citations") or [])
                for choice in chunk.get("choices") or []:
                    content = choice.get("delta", {}).get("content")
                    if content:
                        yield content

    return pieces(), citations


def cmd_answer(args: argparse.Namespace) -> int:
    """Write the answer as it streams, then the citations of its markers (or one JSON object)."""
    pieces, citations = remote_answer(args) if args.url else local_answer(args)
    if args.json:
        text = "".join(pieces)
        print(json.dumps({"answer": text, "citations": citations}, ensure_ascii=False, indent=1))
        return 0
    text = ""
    for piece in pieces:
        text += piece
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
    cited = {int(m) for m in re.findall(r"\[(\d+)\]", text)}
    seen: set[tuple[int, str | None]] = set()
    for c in citations:
        if cited and c["marker"] not in cited:
            continue
        key = (c["marker"], c["doc_id"])
        if key not in seen:
            seen.add(key)
            print(
                f"[{c['marker']}] {c['doc_id']} ({c['kind']}, node {c['node_id']}, {c['score']:.3f})"
            )
    return 0


def register(sub: Any) -> None:
    """Add the ``answer`` subcommand.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser(
        "answer",
        help="answer a question from an index, with [n] citations, streamed to the terminal",
        description=(
            "Retrieve, number the retrieved nodes, and answer with the index's LLM citing "
            "them as [1], [2], ...; the answer is written as it streams, then the citations. "
            "With --url, INDEX is the served index's name and the answer comes from that "
            "service's chat API."
        ),
    )
    p.add_argument("index", help="the index directory (or, with --url, the served index name)")
    p.add_argument("question")
    p.add_argument(
        "--mode", default=None, help="search mode (default hybrid if served, else naive)"
    )
    p.add_argument("--budget", type=int, default=None, help="retrieved-token budget")
    p.add_argument(
        "--url", default=None, help="a running graphstrata serve, e.g. http://127.0.0.1:8000"
    )
    p.add_argument(
        "--token", default=None, help="bearer token for --url (default GRAPHSTRATA_TOKEN)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead")
    add_backend_args(p)
    p.set_defaults(func=cmd_answer)
