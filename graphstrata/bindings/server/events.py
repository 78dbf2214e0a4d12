"""Server-sent events: the wire form of a streamed answer (``POST /v1/answer?stream=true``
and ``POST /v1/chat/completions`` with ``stream: true``).

The answer itself, its ``[n]`` citations and its word pieces are the engine's
(``Index.answer``, ``stream_pieces``); this module only frames them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

#: OpenAPI (before 3.2) description of a server-sent event stream: the ``schema`` of a
#: ``text/event-stream`` response describes each event, with its ``data`` line(s).
SSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"data": {"type": "string"}, "event": {"type": "string"}},
    "required": ["data"],
}


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event: ``data: <json>`` (or the literal string) and a blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()


async def until_disconnect(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``events``, yielding to the event loop after each one.

    The events of an answer are ready at once, so without a pause the whole stream is
    written in one go of the event loop: a client that left is only noticed at the end, and
    every write to its closed socket was logged (issue 51: ~23 lines per aborted stream).
    With the pause the server sees the disconnect after the next event and cancels the
    stream (Starlette stops a streamed response when its client leaves).
    """
    async for event in events:
        yield event
        await asyncio.sleep(0)
