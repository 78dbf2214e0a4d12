"""A LlamaIndex retriever over graphstrata (extra ``llamaindex``).

>>> from graphstrata.bindings.integrations.llamaindex import GraphstrataRetriever
>>> retriever = GraphstrataRetriever(url="http://127.0.0.1:8000", token="...", mode="graph")
>>> nodes = retriever.retrieve("Who built the observatory?")
>>> nodes[0].score, nodes[0].node.text, nodes[0].node.metadata["docs"]

Or over an index in the process: ``GraphstrataRetriever(index=Index.open("my-index"))``.
Each ``NodeWithScore`` holds a ``TextNode`` with the hit's text and
:func:`~.source.hit_metadata` (score, kind, node id, cited documents, their metadata and source
spans); only the cited document ids are shown to an LLM or an embedder with the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphstrata.bindings.api import Index
from graphstrata.bindings.extras import require
from graphstrata.bindings.integrations.source import SearchOptions, hit_metadata, make_source

if TYPE_CHECKING:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
else:
    _WHAT = "graphstrata's LlamaIndex retriever"
    BaseRetriever = require("llama_index.core.retrievers", "llamaindex", _WHAT).BaseRetriever
    _schema = require("llama_index.core.schema", "llamaindex", _WHAT)
    NodeWithScore, QueryBundle, TextNode = (
        _schema.NodeWithScore,
        _schema.QueryBundle,
        _schema.TextNode,
    )

#: The metadata an LLM or embedder sees with a node's text (the rest is for the program).
SHOWN_METADATA = ("docs",)


class GraphstrataRetriever(BaseRetriever):
    """Retrieve graphstrata results as LlamaIndex ``NodeWithScore`` objects.

    Parameters
    ----------
    index:
        An open :class:`graphstrata.Index`; or, instead:
    url, token, index_name, timeout:
        A ``graphstrata serve``'s base URL, its bearer token (the read right is enough), a
        served index's name (default: the service's first), seconds per request.
    mode, budget_tokens, top_k, params, filter:
        The search (:class:`~.source.SearchOptions`).
    kwargs:
        Passed to LlamaIndex's ``BaseRetriever`` (``callback_manager``, ``verbose``).

    Raises
    ------
    ValueError
        Unless exactly one of ``index`` and ``url`` is given.
    """

    def __init__(
        self,
        index: Index | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        index_name: str | None = None,
        timeout: float = 60.0,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        params: dict[str, Any] | None = None,
        filter: dict[str, Any] | None = None,
        **kwargs: Any,
    ):
        self.source = make_source(index, url, token, index_name, timeout)
        self.options = SearchOptions(mode, budget_tokens, top_k, dict(params or {}), filter)
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(h) for h in self.source.retrieve(query_bundle.query_str, self.options)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = await self.source.aretrieve(query_bundle.query_str, self.options)
        return [_node(h) for h in hits]


def _node(hit: dict[str, Any]) -> NodeWithScore:
    metadata = hit_metadata(hit)
    hidden = [k for k in metadata if k not in SHOWN_METADATA]
    node = TextNode(
        id_=f"graphstrata-{hit['id']}",
        text=hit["text"],
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
    )
    return NodeWithScore(node=node, score=float(hit["score"]))
