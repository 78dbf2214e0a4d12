"""How the engine's work grows with the corpus: builds, writes, opens, vector bases."""
