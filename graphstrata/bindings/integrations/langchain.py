"""A LangChain retriever over graphstrata (extra ``langchain``).

>>> from graphstrata.bindings.integrations.langchain import GraphstrataRetriever
>>> retriever = GraphstrataRetriever(url="http://127.0.0.1:8000", token="...", mode="hybrid")
>>> docs = retriever.invoke("Who built the observatory?")
>>> docs[0].page_content, docs[0].metadata["docs"], docs[0].metadata["score"]

Or over an index in the process: ``GraphstrataRetriever(index=Index.open("my-index"))``.
Each ``Document`` carries the hit's text as ``page_content`` and :func:`~.source.hit_metadata`
as ``metadata`` (score, kind, node id, cited documents, their metadata and source spans).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, PrivateAttr

from graphstrata.bindings.extras import require
from graphstrata.bindings.integrations.source import (
    SearchOptions,
    Source,
    hit_metadata,
    make_source,
)

if TYPE_CHECKING:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
else:
    _WHAT = "graphstrata's LangChain retriever"
    BaseRetriever = require("langchain_core.retrievers", "langchain", _WHAT).BaseRetriever
    Document = require("langchain_core.documents", "langchain", _WHAT).Document
    _callbacks = require("langchain_core.callbacks", "langchain", _WHAT)
    CallbackManagerForRetrieverRun = _callbacks.CallbackManagerForRetrieverRun
    AsyncCallbackManagerForRetrieverRun = _callbacks.AsyncCallbackManagerForRetrieverRun


class GraphstrataRetriever(BaseRetriever):
    """Retrieve graphstrata results as LangChain ``Document`` objects.

    Give either ``index`` (an open ``graphstrata.Index``) or ``url`` (a ``graphstrata
    serve``, with ``token`` and optionally ``index_name``).

    Attributes
    ----------
    index:
        An open :class:`graphstrata.Index`.
    url, token, index_name, timeout:
        The service's base URL, its bearer token (the read right is enough), a served
        index's name (default: the service's first), seconds per request.
    mode, budget_tokens, top_k, params, filter:
        The search (:class:`~.source.SearchOptions`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any = None
    url: str | None = None
    token: str | None = None
    index_name: str | None = None
    timeout: float = 60.0
    mode: str = "naive"
    budget_tokens: int | None = None
    top_k: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    filter: dict[str, Any] | None = None

    _source: Source = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        """Choose the source once the fields are set (``ValueError`` unless exactly one of
        ``index`` and ``url`` is given)."""
        self._source = make_source(self.index, self.url, self.token, self.index_name, self.timeout)

    def _options(self) -> SearchOptions:
        return SearchOptions(self.mode, self.budget_tokens, self.top_k, self.params, self.filter)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(h) for h in self._source.retrieve(query, self._options())]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [_document(h) for h in await self._source.aretrieve(query, self._options())]


def _document(hit: dict[str, Any]) -> Document:
    return Document(page_content=hit["text"], metadata=hit_metadata(hit), id=str(hit["id"]))
