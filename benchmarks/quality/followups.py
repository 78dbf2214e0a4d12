"""Doc recall of follow-up questions: the last message alone vs the conversation's query.

    python -m benchmarks.quality.followups [--budgets 500,1000] [--modes naive,bm25,hybrid,graph]

Builds the sample corpus (``examples/sample.jsonl``, default embedder ``minilm-onnx``,
extractive LLM) in a temporary directory and reads the two-turn conversations of
``examples/sample_followups.jsonl``: 30 ``follow-up`` ones, whose second question names its
subject only through the first ("Where did he work before that?"), and 6 ``topic-switch``
controls, whose second question stands alone (an earlier turn must not pull it away). The
first turn is answered by the engine (``Index.answer``: what a chat client sends back as the
assistant turn); the second is searched with each query:

* ``last``: the last user message alone (the chat route before issue 47);
* ``concat``: every user message joined;
* ``names``: the last message plus the names, acronyms and numbers of the earlier user
  messages (``salient_terms``);
* ``names+assistant``: the same over the assistant's answer as well;
* ``conversation``: ``conversation_query`` (``graphstrata/engine/conversation.py``, what the
  chat and Ollama routes search with): ``concat``'s content words when the last message
  names nothing itself, else ``names``.

``doc recall`` is the share of the gold documents among the documents of the retrieved
nodes at the token budget; ``top doc`` the share of conversations whose best node is in a
gold document. Writes ``benchmarks/results/followups.{md,json}``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    REPO,
    command_line,
    load_text,
    log,
    machine,
    markdown_table,
    read_jsonl,
    write_report,
)

SAMPLE = REPO / "examples" / "sample.jsonl"
FOLLOWUPS = REPO / "examples" / "sample_followups.jsonl"

Turns = list[tuple[str, str]]


def methods() -> dict[str, Callable[[str, Turns, int], str]]:
    """Query method -> ``f(question, history, max_chars)``."""
    from graphstrata.bindings.api import conversation_query
    from graphstrata.engine.conversation import salient_terms

    def concat(question: str, history: Turns, max_chars: int) -> str:
        users = [content for role, content in history if role == "user"]
        return " ".join([*users, question])[-max_chars:]

    def names(
        question: str, history: Turns, max_chars: int, roles: Sequence[str] = ("user",)
    ) -> str:
        terms = [
            t for role, text in reversed(history) if role in roles for t in salient_terms(text)
        ]
        kept = [t for t in dict.fromkeys(terms) if t.lower() not in question.lower()]
        return " ".join([question, *kept])[:max_chars]

    def with_assistant(question: str, history: Turns, max_chars: int) -> str:
        return names(question, history, max_chars, ("user", "assistant"))

    return {
        "last": lambda question, history, max_chars: question,
        "concat": concat,
        "names": names,
        "names+assistant": with_assistant,
        "conversation": conversation_query,
    }


def score(nodes: Sequence[Any], gold: set[str]) -> tuple[float, bool]:
    """Doc recall of the retrieved nodes and whether the best node is in a gold document."""
    found = {doc for node in nodes for doc in node.docs}
    top = bool(nodes) and bool(set(nodes[0].docs) & gold)
    return len(found & gold) / len(gold), top


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budgets", default="500,1000", help="token budgets, comma-separated")
    parser.add_argument("--modes", default="naive,bm25,hybrid,graph", help="search modes")
    parser.add_argument("--max-chars", type=int, default=2000, help="query length limit")
    args = parser.parse_args(argv)
    from graphstrata.bindings.api import Index, read_documents

    budgets = [int(b) for b in args.budgets.split(",")]
    modes = args.modes.split(",")
    conversations = read_jsonl(FOLLOWUPS)
    load_before = load_text()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        index = Index.create(Path(tmp) / "sample")
        index.insert(read_documents(SAMPLE))
        log(f"built the sample index in {time.perf_counter() - start:.1f} s")
        queries: dict[str, list[str]] = {m: [] for m in methods()}
        for conv in conversations:
            first, second = conv["turns"]
            reply = index.answer(first, "hybrid").answer or ""
            history = [("user", first), ("assistant", reply)]
            for name, method in methods().items():
                queries[name].append(method(second, history, args.max_chars))
        rows: list[dict[str, Any]] = []
        for mode in modes:
            for budget in budgets:
                for name, texts in queries.items():
                    results = index.query_batch(texts, mode, budget)
                    for kind in ("follow-up", "topic-switch"):
                        picked = [
                            score(r.nodes, set(c["gold_doc_ids"]))
                            for r, c in zip(results, conversations, strict=True)
                            if c["kind"] == kind
                        ]
                        rows.append(
                            {
                                "mode": mode,
                                "budget": budget,
                                "method": name,
                                "set": kind,
                                "n": len(picked),
                                "doc_recall": round(sum(r for r, _ in picked) / len(picked), 3),
                                "top_doc": round(sum(t for _, t in picked) / len(picked), 3),
                            }
                        )
                log(f"{mode} @ {budget}: done")
    seconds = time.perf_counter() - start
    command = command_line(__spec__.name if __spec__ else "benchmarks.quality.followups", argv)
    lines = [
        "# Follow-up questions: the last message alone vs the conversation's query",
        "",
        f"Command: `{command}`  ",
        f"Machine: {machine()}; load average before / after: {load_before} / {load_text()}; "
        f"wall {seconds:.0f} s.",
        "",
        f"Data: `examples/sample_followups.jsonl` ({sum(c['kind'] == 'follow-up' for c in conversations)} "
        "two-turn conversations whose second question needs the first, "
        f"{sum(c['kind'] == 'topic-switch' for c in conversations)} topic switches whose second "
        "question stands alone) over the sample corpus, default embedder (minilm-onnx), "
        "extractive LLM (the first turn's answer is the assistant turn). `doc recall`: share of "
        "the gold documents among the retrieved nodes' documents at the budget; `top doc`: share "
        "whose best node is in a gold document. Methods: `last` = the last user message; "
        "`concat` = all user messages joined; `names` = the last message + the names, acronyms "
        "and numbers of earlier user messages; `names+assistant` = the same over the "
        "assistant's answer too; `conversation` = `conversation_query` (what the chat routes "
        "search with): the earlier user messages' content words when the last message names "
        "nothing itself, else `names`.",
    ]
    for kind in ("follow-up", "topic-switch"):
        lines += ["", f"## {kind}", ""]
        header = ["mode", "budget"] + [f"{m} recall / top" for m in methods()]
        table = []
        for mode in modes:
            for budget in budgets:
                cells = [mode, budget]
                for name in methods():
                    (row,) = [
                        r
                        for r in rows
                        if (r["mode"], r["budget"], r["method"], r["set"])
                        == (mode, budget, name, kind)
                    ]
                    cells.append(f"{row['doc_recall']:.3f} / {row['top_doc']:.3f}")
                table.append(cells)
        lines += markdown_table(header, table)
    payload = {"command": command, "seconds": round(seconds, 1), "rows": rows}
    path = write_report("followups", payload, "\n".join(lines))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
