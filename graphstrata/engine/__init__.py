"""The engine: store, ingest, hierarchy, heterograph, search; the Embedder and LLM interfaces.

Layout (docs/architecture.md, "Layers"): the contract every retrieval structure implements
is ``component``, with ``interfaces`` (model protocols), ``config``, ``params`` and ``types``
beside it; ``store/`` is the on-disk format, ``ingest/`` turns documents into chunk changes,
``hierarchy/``, ``heterograph/`` and ``search/`` serve the modes, and ``index`` runs every
operation. The engine imports ``graphstrata.core`` and never ``graphstrata.bindings`` or
``graphstrata.evaluation``.
"""
