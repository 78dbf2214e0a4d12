"""Retrieval and answer quality on the shared QA sets, and the graph mode's tuning."""
