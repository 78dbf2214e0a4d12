"""``LayeredDict`` against plain dicts: every version reads as its own copy would."""

from __future__ import annotations

import dataclasses
import random

import pytest

from graphstrata.engine.layered import LayeredDict
from graphstrata.engine.policies import MaintenanceConfig

#: The default policy, with a minimum small enough to fold within the tests.
FOLD = dataclasses.replace(MaintenanceConfig().layered_dict, minimum=3)


@pytest.mark.parametrize("seed", range(6))
def test_versions_read_like_copied_dicts(seed):
    rng = random.Random(seed)
    keys = [f"k{i}" for i in range(12)]
    base = {k: i for i, k in enumerate(keys[: rng.randint(0, 8)])}
    versions = [(LayeredDict(dict(base)), dict(base))]
    for _ in range(25):
        got, want = versions[rng.randrange(len(versions))]  # branch from any version
        got, want = got.changed(FOLD), dict(want)
        for _ in range(rng.randint(0, 4)):
            key = rng.choice(keys)
            if key in want and rng.random() < 0.5:
                del got[key]
                del want[key]
            else:
                got[key] = want[key] = rng.randint(0, 99)
        versions.append((got, want))
        for mapping, oracle in versions:  # no version changed under its readers
            assert dict(mapping.items()) == oracle
            assert len(mapping) == len(oracle)
            assert mapping == oracle
            for key in keys:
                assert (key in mapping) == (key in oracle)
                assert mapping.get(key) == oracle.get(key)


def test_edge_cases():
    empty = LayeredDict()
    assert len(empty) == 0 and list(empty) == [] and empty.get("x") is None
    with pytest.raises(KeyError):
        del empty.changed(FOLD)["x"]
    one = LayeredDict({"a": 1}).changed(FOLD)
    one["a"] = 1  # rewriting a key keeps the size
    assert len(one) == 1
    del one["a"]
    with pytest.raises(KeyError):
        one["a"]
    one["a"] = 2  # back after a removal
    assert dict(one) == {"a": 2} and len(one) == 1
