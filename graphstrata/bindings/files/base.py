"""What every parser returns: the text, its title, and its pages and headings as offsets.

A parser reads one file's bytes and returns :class:`Parsed`; it raises :class:`FileError`
with a one-line cause (``no text layer: scanned PDF? run OCR first``) when the file gives no
document, never an empty one. :class:`TextBuilder` is how parsers assemble the text: it
records where each page and each section starts while the text grows, so offsets are right
by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class FileError(ValueError):
    """A file could not be turned into a document (the message says why, in one line)."""


@dataclass(frozen=True)
class Parsed:
    """A parsed file.

    Attributes
    ----------
    text:
        The document's text.
    title:
        Its title ("" when it has none).
    pages:
        The offset in ``text`` where each page starts (PDF only).
    sections:
        ``(offset, heading path)`` where each section starts, e.g. ``"Intro > Methods"``.
    """

    text: str
    title: str = ""
    pages: tuple[int, ...] = ()
    sections: tuple[tuple[int, str], ...] = ()


#: Separator of the headings of a section path.
PATH_SEPARATOR = " > "


@dataclass
class TextBuilder:
    """The text of a document as it is read, with its page and section starts."""

    parts: list[str] = field(default_factory=list)
    size: int = 0
    pages: list[int] = field(default_factory=list)
    sections: list[tuple[int, str]] = field(default_factory=list)
    _headings: list[tuple[int, str]] = field(default_factory=list)

    def add(self, text: str) -> None:
        """Append text."""
        if text:
            self.parts.append(text)
            self.size += len(text)

    def block(self, text: str) -> None:
        """Append a block (paragraph, heading, page) on its own lines."""
        text = text.strip()
        if not text:
            return
        if self.size:
            self.add("\n\n")
        self.add(text)

    def page(self) -> None:
        """Mark the start of a page at the current end of the text."""
        self.pages.append(self.size + (2 if self.size else 0))

    def heading(self, level: int, title: str) -> None:
        """Start a section: a heading of ``level`` (1 = top) titled ``title``, appended as
        a block; the section path keeps the enclosing headings of lower levels."""
        title = " ".join(title.split())
        if not title:
            return
        while self._headings and self._headings[-1][0] >= level:
            self._headings.pop()
        self._headings.append((level, title))
        start = self.size + (2 if self.size else 0)
        self.block(title)
        self.sections.append((start, PATH_SEPARATOR.join(t for _, t in self._headings)))

    def parsed(self, title: str = "") -> Parsed:
        """The document read so far (its title: ``title``, else the first heading)."""
        text = "".join(self.parts)
        if not title and self.sections:
            title = self.sections[0][1].split(PATH_SEPARATOR)[0]
        # A page that added no text starts where the next one does: clamp to the text.
        pages = tuple(min(p, len(text)) for p in self.pages)
        return Parsed(
            text=text, title=title.strip()[:500], pages=pages, sections=tuple(self.sections)
        )


def first_line(text: str) -> str:
    """The first non-blank line of ``text`` without Markdown heading marks (a title)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()[:500]
    return ""


def decode_text(data: bytes, name: str) -> str:
    """``data`` as UTF-8 (a byte-order mark dropped), or :class:`FileError`."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileError(f"not UTF-8 text (binary file?) at byte {exc.start}") from exc
