"""Plain text files (``.txt``): the text as it is, titled by its first line."""

from __future__ import annotations

from graphstrata.bindings.files.base import Parsed, decode_text, first_line


def parse(data: bytes, name: str) -> Parsed:
    """A UTF-8 text file as a document.

    Raises
    ------
    FileError
        When the bytes are not UTF-8.
    """
    text = decode_text(data, name)
    return Parsed(text=text, title=first_line(text))
