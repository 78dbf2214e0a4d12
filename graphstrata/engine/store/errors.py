"""The errors the store raises; every one is a ``StoreError``."""

from __future__ import annotations


class StoreError(RuntimeError):
    """Base class of store errors."""


class CorruptIndexError(StoreError):
    """A manifest or segment failed its checksum, is truncated, or is not ours."""


class IndexLockedError(StoreError):
    """Another writer holds the index lock."""


class IndexNotFoundError(StoreError):
    """The path holds no index."""


class StoreWriteError(StoreError):
    """A commit could not write its files (e.g. the disk is full); it was abandoned.

    Parameters
    ----------
    message:
        What failed, where, and the version the index stays at.
    errno:
        The ``errno`` of the underlying ``OSError`` (None when it had none).
    """

    def __init__(self, message: str, errno: int | None = None):
        super().__init__(message)
        self.errno = errno
