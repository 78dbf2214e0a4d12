"""The HTTP service under load, its soak test, and concurrent graph queries."""
