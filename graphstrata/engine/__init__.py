"""Tables, store, chunking, hierarchy, heterograph, search; the Embedder and LLM interfaces."""
