"""``graphstrata query --filter``: a metadata filter from the command line (one line and exit 1
when it is bad, as for ``--params``)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import REPO, run

pytestmark = pytest.mark.integration


def test_query_filter_keeps_to_the_matching_documents(tmp_path):
    out = tmp_path / "ix"
    run("index", str(REPO / "examples" / "sample" / "city"), "--out", str(out), "--no-heterograph")
    plain = json.loads(run("query", str(out), "ferry harbour", "--json").stdout)
    docs = sorted({d for n in plain["nodes"] for d in n["docs"]})
    assert len(docs) >= 2
    keep = docs[-1]
    for mode in ("naive", "collapsed"):
        flt = json.dumps({"doc_id": keep})
        got = json.loads(
            run(
                "query", str(out), "ferry harbour", "--mode", mode, "--filter", flt, "--json"
            ).stdout
        )
        assert got["nodes"] and {d for n in got["nodes"] for d in n["docs"]} == {keep}
        assert got["report"]["filter"]["documents"] == 1
        assert got["nodes"][0]["documents"][0]["doc_id"] == keep
    for bad, message in (
        ('{"year": {"$regex": "x"}}', "unknown operator"),
        ("[1]", "--filter must be a JSON object"),
        ("{not json", "--filter is not valid JSON"),
    ):
        proc = run("query", str(out), "ferry", "--filter", bad, check=False)
        assert proc.returncode == 1, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and message in lines[0], proc.stderr
