"""Markdown files: the source text as it is, its ATX (``## Methods``) and setext headings
(a line underlined with ``===`` or ``---``) as sections.

Only headings are parsed, with the standard library: the indexed text stays the Markdown
source (as for a folder of ``.md`` files before files were parsed), so a span's offsets
point into the file as written. Lines inside fenced code blocks are not headings.
"""

from __future__ import annotations

import re

from graphstrata.bindings.files.base import PATH_SEPARATOR, Parsed, decode_text, first_line

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def headings(text: str) -> list[tuple[int, int, str]]:
    """``(offset, level, title)`` of each heading of Markdown ``text``, in order."""
    found: list[tuple[int, int, str]] = []
    fence = ""
    offset = 0
    previous: tuple[int, str] | None = None  # the last paragraph line: a setext candidate
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        opened = _FENCE.match(bare)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
        elif opened:
            fence = opened.group(1)
            previous = None
        elif (atx := _ATX.match(bare)) is not None:
            found.append((offset, len(atx.group(1)), (atx.group(2) or "").strip()))
            previous = None
        elif (setext := _SETEXT.match(bare)) is not None and previous is not None:
            level = 1 if setext.group(1)[0] == "=" else 2
            found.append((previous[0], level, previous[1]))
            previous = None
        else:
            previous = (offset, bare.strip()) if bare.strip() else None
        offset += len(line)
    return [h for h in found if h[2]]


def parse(data: bytes, name: str) -> Parsed:
    """A UTF-8 Markdown file as a document, its headings as sections.

    Raises
    ------
    FileError
        When the bytes are not UTF-8.
    """
    text = decode_text(data, name)
    sections: list[tuple[int, str]] = []
    path: list[tuple[int, str]] = []
    for offset, level, title in headings(text):
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, " ".join(title.split())))
        sections.append((offset, PATH_SEPARATOR.join(t for _, t in path)))
    return Parsed(text=text, title=first_line(text), sections=tuple(sections))
