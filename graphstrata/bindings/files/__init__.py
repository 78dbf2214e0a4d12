"""Files in: PDF, Word, HTML, Markdown and text parsed into documents with their pages and
headings (docs/architecture.md, "Layers"; ``docs/guide/files.md``).

One module per format (``pdf``, ``word``, ``html_page``, ``markdown``, ``text``), each a
``parse(data, name) -> Parsed`` (``base``); ``batch`` turns files into documents with one
outcome per file. Parsing is I/O on files, so it lives in the bindings: the engine receives
``Document`` objects whose ``SourceMap`` says where each page and section starts.
"""

from graphstrata.bindings.files.base import FileError, Parsed
from graphstrata.bindings.files.batch import (
    FORMATS,
    FileBatch,
    parse_file,
    path_items,
    read_files,
    read_source,
    supported,
)

__all__ = [
    "FORMATS",
    "FileBatch",
    "FileError",
    "Parsed",
    "parse_file",
    "path_items",
    "read_files",
    "read_source",
    "supported",
]
