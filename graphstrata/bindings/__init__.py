"""Public Python API, CLI, HTTP service and the concrete model backends."""
