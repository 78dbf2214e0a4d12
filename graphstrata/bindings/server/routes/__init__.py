"""One router per resource of the service: retrieve, answer, documents, status."""
