"""A seeded synthetic corpus for scale benchmarks (issue 17; ``benchmarks/scale/scale.py``).

Documents of Zipf-distributed pseudo-words with names from a pool of 3,000 entities
(two capitalized words each, themselves Zipf-popular, so that entities recur across
documents as they do in news or encyclopedic text). With the default chunking (200 cl100k
tokens, 20 overlap) a document is ~5.2 chunks. The same ``seed`` always gives the same
corpus, and document ``i`` does not depend on how many documents are asked for.

It also holds what the scale scripts share about it (chunks per document, the hashing
embedder's dimension, its chunks' vectors), so they import this module, not each other.

Usage: ``python -m benchmarks.scale.synthetic_corpus --docs 10 --show 1`` prints a sample.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

#: Chunks per document with the default chunking (what a size in chunks is turned into).
CHUNKS_PER_DOC = 5.2
#: Dimension of the ``hashing`` embedder the scale benchmarks use.
DIM = 384

_ONSETS = ["b", "br", "c", "ch", "d", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "pr", "r"]
_ONSETS += ["s", "st", "t", "tr", "v", "w", "z", "th", "sh", "pl", "fl", "cr", "dr", "sl"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"]
_CODAS = ["", "", "n", "r", "s", "l", "m", "t", "nd", "st", "rk", "ng"]


@dataclass(frozen=True)
class CorpusSpec:
    """The shape of the corpus; the defaults are the ones issue 17 measured with.

    Attributes
    ----------
    seed:
        Seed of the vocabulary, the entity pool and every document.
    vocabulary:
        Distinct common words.
    zipf_s:
        Exponent of the words' Zipf law (English text: ~1.0-1.1).
    entities:
        Size of the entity-name pool.
    entity_zipf_s:
        Exponent of the entities' popularity.
    words_per_doc:
        Mean words per document (uniform within ±25 %); 487 words gave 5.2 chunks per
        document with the default chunking (measured over 2,000 documents).
    entity_share:
        Share of sentences that name an entity.
    """

    seed: int = 17
    vocabulary: int = 20_000
    zipf_s: float = 1.07
    entities: int = 3_000
    entity_zipf_s: float = 0.9
    words_per_doc: int = 487
    entity_share: float = 0.45


def _word(rng: random.Random, syllables: int) -> str:
    return "".join(
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
    )


def _distinct_words(rng: random.Random, n: int, syllables: tuple[int, ...]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        w = _word(rng, rng.choice(syllables))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _zipf_cdf(n: int, s: float) -> list[float]:
    weights = [1.0 / (r**s) for r in range(1, n + 1)]
    total = sum(weights)
    acc, out = 0.0, []
    for w in weights:
        acc += w / total
        out.append(acc)
    return out


class SyntheticCorpus:
    """Documents ``{"doc_id", "title", "text"}`` of a :class:`CorpusSpec`, generated lazily.

    Parameters
    ----------
    spec:
        The corpus' shape and seed.
    """

    def __init__(self, spec: CorpusSpec | None = None):
        self.spec = spec or CorpusSpec()
        rng = random.Random(self.spec.seed)
        # Short words are frequent: sort the vocabulary by length before ranking it.
        words = _distinct_words(rng, self.spec.vocabulary, (1, 1, 2, 2, 2, 3))
        self.words = sorted(words, key=len)
        first = _distinct_words(rng, 600, (2, 3))
        last = _distinct_words(rng, 1500, (2, 3))
        names: list[str] = []
        seen: set[str] = set()
        while len(names) < self.spec.entities:
            name = f"{rng.choice(first).capitalize()} {rng.choice(last).capitalize()}"
            if name not in seen:
                seen.add(name)
                names.append(name)
        self.names = names
        self._word_cdf = _zipf_cdf(len(self.words), self.spec.zipf_s)
        self._name_cdf = _zipf_cdf(len(self.names), self.spec.entity_zipf_s)

    def document(self, i: int) -> dict[str, str]:
        """Document ``i`` (deterministic in ``(seed, i)``)."""
        spec = self.spec
        rng = random.Random(f"{spec.seed}:{i}")
        # A document is about a few entities; its sentences mostly name those.
        topics = rng.choices(self.names, cum_weights=self._name_cdf, k=3)
        n_words = int(spec.words_per_doc * rng.uniform(0.75, 1.25))
        sentences: list[str] = []
        written = 0
        while written < n_words:
            length = rng.randint(8, 22)
            words = rng.choices(self.words, cum_weights=self._word_cdf, k=length)
            if rng.random() < spec.entity_share:
                name = (
                    rng.choice(topics)
                    if rng.random() < 0.7
                    else rng.choices(self.names, cum_weights=self._name_cdf, k=1)[0]
                )
                words.insert(rng.randrange(len(words) + 1), name)
            sentence = " ".join(words)
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
            written += length
        paragraphs = [" ".join(sentences[j : j + 6]) for j in range(0, len(sentences), 6)]
        return {
            "doc_id": f"syn-{i:07d}",
            "title": f"{topics[0]} and {topics[1]}",
            "text": "\n\n".join(paragraphs),
        }

    def documents(self, n: int, start: int = 0) -> Iterator[dict[str, str]]:
        """Documents ``start .. start + n - 1``."""
        for i in range(start, start + n):
            yield self.document(i)


def chunk_vectors(n_vectors: int) -> np.ndarray:
    """Hashing embeddings of the corpus' first ``n_vectors`` chunks (a build's T vectors).

    Parameters
    ----------
    n_vectors:
        How many chunks to embed, in corpus order.

    Returns
    -------
    numpy.ndarray
        ``(n_vectors, DIM)`` float32.
    """
    from graphstrata.bindings.embed.models import HashingEmbedder
    from graphstrata.engine.config import ChunkingConfig
    from graphstrata.engine.ingest.chunking import chunk_text

    corpus = SyntheticCorpus()
    texts: list[str] = []
    cfg = ChunkingConfig()
    for doc in corpus.documents(round(n_vectors / CHUNKS_PER_DOC) + 50):
        texts += [c.text for c in chunk_text(doc["text"], cfg)]
        if len(texts) >= n_vectors:
            break
    return HashingEmbedder(DIM).embed(texts[:n_vectors]).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    """Print the chunk count of a sample (``--docs``) and ``--show`` documents."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--show", type=int, default=0)
    ap.add_argument("--seed", type=int, default=CorpusSpec.seed)
    args = ap.parse_args(argv)
    from graphstrata.engine.config import ChunkingConfig
    from graphstrata.engine.ingest.chunking import chunk_text

    corpus = SyntheticCorpus(CorpusSpec(seed=args.seed))
    cfg = ChunkingConfig()
    chunks = 0
    for doc in corpus.documents(args.docs):
        chunks += len(chunk_text(doc["text"], cfg))
    print(f"{args.docs} documents, {chunks} chunks, {chunks / max(args.docs, 1):.2f} per document")
    for doc in corpus.documents(args.show):
        print(doc["title"], "\n", doc["text"][:600], "...\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
