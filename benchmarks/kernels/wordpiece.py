"""WordPiece tokenization speed: graphstrata's pure-Python tokenizer against ``tokenizers``.

Both read the packaged all-MiniLM-L6-v2 ``tokenizer.json`` and truncate at 256 word pieces,
as the ``minilm-onnx`` embedder does (``bindings/embed/wordpiece.py``). Inputs: 200-word
chunks and 12-word queries cut from the MultiHop-RAG corpus (``../shared/data``, skipped
when absent), from ``examples/sample.jsonl``, and from random text (words of random
letters, digits and punctuation, a few accented and CJK characters: every word is new, the
worst case for the word cache). Each row is one ``encode_batch`` over the whole set on one
thread (``TOKENIZERS_PARALLELISM=false``); graphstrata's tokenizer is measured cold (a new
instance, empty cache) and warm (the same texts again). The reference: embedding one
150-word chunk costs ~27 ms on one core (``benchmarks/results/embed.md``).

    python -m benchmarks.kernels.wordpiece            # ~1 min

Writes benchmarks/results/wordpiece.md.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.common import DATA, REPO, RESULTS, command_line, load_text, machine

MAX_TOKENS = 256


def _words_of(texts: Sequence[str]) -> list[str]:
    return " ".join(texts).split()


def _cut(words: list[str], size: int, limit: int) -> list[str]:
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)][:limit]


def _random_words(n: int, seed: int = 46) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    rare = "éüñçøß東京中文—“”"
    out = []
    for _ in range(n):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(1, 10)))
        if rng.random() < 0.1:
            word += rng.choice(rare)
        if rng.random() < 0.15:
            word += rng.choice(",.;:!?)")
        out.append(word)
    return out


def inputs() -> dict[str, list[str]]:
    """Named lists of texts: chunks and queries of each source."""
    sets: dict[str, list[str]] = {}
    corpus = DATA / "multihop_rag" / "corpus.jsonl"
    if corpus.exists():
        with corpus.open(encoding="utf-8") as fh:
            docs = [json.loads(line)["text"] for _, line in zip(range(200), fh, strict=False)]
        words = _words_of(docs)
        sets["MultiHop-RAG 200-word chunks"] = _cut(words, 200, 500)
        sets["MultiHop-RAG 12-word queries"] = _cut(words, 12, 2000)
    lines = (REPO / "examples" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    words = _words_of([json.loads(line)["text"] for line in lines if line.strip()])
    sets["sample.jsonl 200-word chunks"] = _cut(words, 200, 500)
    sets["sample.jsonl 12-word queries"] = _cut(words, 12, 2000)
    words = _random_words(200 * 200)
    sets["random 200-word chunks"] = _cut(words, 200, 200)
    sets["random 12-word queries"] = _cut(words, 12, 2000)
    return sets


def _time(fn: Callable[[], Any], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure() -> list[dict[str, Any]]:
    from tokenizers import Tokenizer

    from graphstrata.bindings.embed.onnx import packaged_model_dir
    from graphstrata.bindings.embed.wordpiece import WordPieceTokenizer

    path = packaged_model_dir() / "tokenizer.json"
    oracle = Tokenizer.from_file(str(path))
    oracle.no_padding()
    oracle.enable_truncation(max_length=MAX_TOKENS)
    rows = []
    for name, texts in inputs().items():
        pieces = sum(len(e.ids) for e in oracle.encode_batch(texts))
        cold = float("inf")
        for _ in range(3):
            fresh = WordPieceTokenizer.from_file(path, MAX_TOKENS)
            start = time.perf_counter()
            ids = fresh.encode_batch(texts)
            cold = min(cold, time.perf_counter() - start)
        assert ids == [e.ids for e in oracle.encode_batch(texts)], name
        warm = _time(lambda t=fresh, x=texts: t.encode_batch(x))
        theirs = _time(lambda x=texts: oracle.encode_batch(x))
        rows.append(
            {
                "set": name,
                "texts": len(texts),
                "pieces": pieces,
                "tokenizers": pieces / theirs,
                "cold": pieces / cold,
                "warm": pieces / warm,
                "ms_cold": 1000 * cold / len(texts),
                "ms_warm": 1000 * warm / len(texts),
                "ms_tokenizers": 1000 * theirs / len(texts),
            }
        )
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    out = [
        "# WordPiece tokenization: graphstrata (pure Python) vs tokenizers",
        "",
        f"Machine: {machine()}; load {load_text()}. Command: "
        f"`{command_line(__spec__.name if __spec__ else 'benchmarks.kernels.wordpiece')}`.",
        "Word pieces per second on one thread (best of 3), ids checked equal; cold = a new",
        "tokenizer (empty word cache), warm = the same texts again. ms = per text.",
        "",
        "| texts | n | pieces | tokenizers /s | ours cold /s | ours warm /s "
        "| ms tokenizers | ms cold | ms warm |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['set']} | {r['texts']} | {r['pieces']} | {r['tokenizers']:,.0f} "
            f"| {r['cold']:,.0f} | {r['warm']:,.0f} | {r['ms_tokenizers']:.3f} "
            f"| {r['ms_cold']:.3f} | {r['ms_warm']:.3f} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    text = report(measure())
    (RESULTS / "wordpiece.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
