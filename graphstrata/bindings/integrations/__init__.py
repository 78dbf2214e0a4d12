"""Retrievers for the RAG frameworks, over an ``Index`` or a ``graphstrata serve``.

- :mod:`.langchain`: ``GraphstrataRetriever``, a LangChain ``BaseRetriever`` returning
  ``Document`` objects (extra ``langchain``: ``langchain-core``);
- :mod:`.llamaindex`: ``GraphstrataRetriever``, a LlamaIndex ``BaseRetriever`` returning
  ``NodeWithScore`` objects (extra ``llamaindex``: ``llama-index-core``);
- :mod:`.source`: where the hits come from (:class:`~.source.LocalSource`,
  :class:`~.source.HttpSource`) and the metadata each one carries.

Each retriever searches in any mode, with a token budget, ``top_k``, the mode's parameters
and a metadata filter, synchronously or on an event loop (docs/guide/integrations.md).
"""
