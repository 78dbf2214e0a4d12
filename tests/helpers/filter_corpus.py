"""A synthetic corpus with metadata for the filter tests: small documents about made-up
observatories, instruments and people, each with ``year``, ``source``, ``tags`` and
``published`` (an ISO date), generated from a seed (no file, no network)."""

from __future__ import annotations

import random
from typing import Any

SOURCES = ("news", "blog", "paper", "wiki")
TAGS = ("optics", "radio", "solar", "survey", "archive", "funding", "people", "travel")
_PLACES = ("Halvorsen", "Meridian", "Tavira", "Kestrel", "Obrecht", "Lindqvist", "Ashdown")
_THINGS = ("telescope", "spectrograph", "camera", "antenna", "mirror", "detector", "dome")
_PEOPLE = ("Ada Morrow", "Bram Ostrova", "Celia Nunez", "Dov Hartley", "Esme Pirelli")
_VERBS = ("built", "repaired", "funded", "tested", "moved", "described", "calibrated")


def corpus(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` documents ``{doc_id, title, text, metadata}``; document ``i`` has year
    ``1990 + i % 35`` so that a year range selects a known share."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        place, thing = rng.choice(_PLACES), rng.choice(_THINGS)
        person, verb = rng.choice(_PEOPLE), rng.choice(_VERBS)
        year = 1990 + i % 35
        sentences = [
            f"{person} {verb} the {thing} of the {place} Observatory in {year}.",
            f"The {place} Observatory reported {rng.randint(2, 90)} nights of {thing} work.",
            f"Document {i} notes that {rng.choice(_PEOPLE)} {rng.choice(_VERBS)} a "
            f"{rng.choice(_THINGS)} near {rng.choice(_PLACES)} lake {i}.",
        ]
        docs.append(
            {
                "doc_id": f"doc-{i:04d}",
                "title": f"{place} {thing} {i}",
                "text": " ".join(sentences),
                "metadata": {
                    "year": year,
                    "source": SOURCES[i % len(SOURCES)],
                    "tags": rng.sample(TAGS, rng.randint(0, 3)),
                    "published": f"{year}-{1 + i % 12:02d}-{1 + i % 28:02d}",
                },
            }
        )
    return docs
