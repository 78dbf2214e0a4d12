"""HTML pages: the visible text in document order, ``<h1>``-``<h6>`` as sections.

Read with the standard library's ``html.parser`` (the tokenizer BeautifulSoup's
``html.parser`` builder uses): the text is collected in one streaming pass, block elements
end a paragraph, ``<script>``, ``<style>``, ``<template>``, ``<noscript>`` and the ``<head>``
(except its ``<title>``) are left out, and character references are decoded. No tree is
needed for that, so HTML needs no optional dependency (decision 0023).
"""

from __future__ import annotations

from html.parser import HTMLParser

from graphstrata.bindings.files.base import Parsed, TextBuilder, decode_text

#: Elements whose content is not text of the page.
_HIDDEN = frozenset({"script", "style", "template", "noscript", "head", "svg", "math"})
#: Elements that end a paragraph.
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "details", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li", "main",
        "nav", "ol", "p", "pre", "section", "summary", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
#: Void elements: no end tag, so they never open a hidden region.
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "source", "wbr", "area", "col"})


class _PageText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = TextBuilder()
        self.title = ""
        self._hidden: list[str] = []
        self._in_title = False
        self._heading: tuple[int, list[str]] | None = None
        self._para: list[str] = []

    def _flush(self) -> None:
        text = " ".join("".join(self._para).split())
        self._para = []
        self.out.block(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        if self._hidden or tag in _HIDDEN:
            if tag not in _VOID:
                self._hidden.append(tag)
            return
        if tag in _HEADINGS:
            self._flush()
            self._heading = (_HEADINGS[tag], [])
        elif tag in _BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if self._hidden:
            if tag in self._hidden:
                while self._hidden and self._hidden.pop() != tag:
                    pass
            return
        if tag in _HEADINGS and self._heading is not None:
            level, words = self._heading
            self._heading = None
            self.out.heading(level, "".join(words))
        elif tag in _BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._hidden:
            return
        if self._heading is not None:
            self._heading[1].append(data)
        else:
            self._para.append(data)

    def close(self) -> None:
        super().close()
        if self._heading is not None:
            level, words = self._heading
            self._heading = None
            self.out.heading(level, "".join(words))
        self._flush()


def parse(data: bytes, name: str) -> Parsed:
    """An HTML page (UTF-8) as a document: its visible text, headings as sections, titled
    by ``<title>`` or its first heading.

    Raises
    ------
    FileError
        When the bytes are not UTF-8.
    """
    page = _PageText()
    page.feed(decode_text(data, name))
    page.close()
    return page.out.parsed(" ".join(page.title.split()))
