"""Array kernels and embedders against the peers' ways and the machine's floor."""
