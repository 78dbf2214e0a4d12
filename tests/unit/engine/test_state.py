"""``engine.state``: one owner for what outlives a version; components and views keep
nothing between calls, and each member advances into a new object."""

from __future__ import annotations

import numpy as np

from graphstrata.engine.heterograph.schema import NAME as HETEROGRAPH
from graphstrata.engine.hierarchy.keys import ItemKeys
from graphstrata.engine.state import EngineState, Versioned
from graphstrata.engine.types import NodeKind

T = int(NodeKind.T)


def test_a_commit_advances_every_member_into_new_objects(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:8])
    index.query("Halvorsen Observatory", mode="bm25")  # builds this version's chunk postings
    before: EngineState = index.engine.state
    parts = before.sparse.peek(T)
    assert parts is not None
    for member in (before.doc_names, before.text_index, before.sparse, *before.members.values()):
        assert isinstance(member, Versioned)
    index.insert(sample_docs[8:10])
    after = index.engine.state
    assert after is not before and after.snapshot.version == before.snapshot.version + 1
    for name in ("vectors", "doc_names", "text_index", "sparse"):
        assert getattr(after, name) is not getattr(before, name), name
    # the previous version's parts are as they were (readers pinned to it still search them)
    assert before.sparse.peek(T) is parts
    np.testing.assert_array_equal(parts.live_ids(), before.snapshot.nodes.ids_of_kind(T))
    advanced = after.sparse.peek(T)  # advanced at the commit, not left to build lazily
    assert advanced is not None
    np.testing.assert_array_equal(advanced.live_ids(), after.snapshot.nodes.ids_of_kind(T))
    # every view of the new version reads the new state's parts
    assert index.engine.state.views["bm25"].sparse.parts is after.sparse
    assert index.engine.state.views["graph"].sparse.parts is after.sparse
    # the graph view reads the heterograph's member of the state, advanced by the commit
    graph, was = after.members[HETEROGRAPH], before.members[HETEROGRAPH]
    assert graph is not was and graph.snapshot is after.snapshot
    assert after.views["graph"].names is graph.names and after.views["graph"].stored is graph.walk


def test_what_a_write_leaves_for_the_next_is_carried_by_the_state(make_index, sample_docs):
    """The heterograph's G2 and the hierarchy's item keys go from write to write through the
    state the write commits; the components themselves hold nothing, and a state built from
    a snapshot (open, refresh) carries nothing."""
    from graphstrata.bindings.api import Index

    index = make_index()
    held = {id(c): dict(vars(c)) for c in index.engine.components}
    index.insert(sample_docs[:8])
    index.query("Halvorsen Observatory", mode="graph")
    carried = index.engine.state.carried
    assert carried[HETEROGRAPH] is not None
    assert isinstance(carried["hierarchy"], ItemKeys)
    index.insert(sample_docs[8:10])
    assert index.engine.state.carried[HETEROGRAPH] is not carried[HETEROGRAPH]
    for comp in index.engine.components:  # nothing kept between calls
        assert dict(vars(comp)) == held[id(comp)], comp.name
    assert Index.open(index.path).engine.state.carried == {}
