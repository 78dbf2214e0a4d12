"""The service's uvicorn server in a thread of the test process (its protocol, limits,
timeouts and middleware as served), on a free loopback port."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def threaded_server(
    index_path: Path | list[Path], **overrides: Any
) -> Iterator[tuple[str, Any, Any]]:
    """The service's uvicorn server (its protocol, limits and timeouts) in a thread.

    ``index_path`` is one index, or a list of indexes served together (each under its
    directory name). Yields ``(url, app, server)``; the server is stopped (graceful, as on
    SIGTERM) on exit.
    """
    import uvicorn

    from graphstrata.bindings.api import Index
    from graphstrata.bindings.server import ServerSettings, bind_socket, create_app
    from graphstrata.bindings.server.run import uvicorn_config

    options: dict[str, Any] = {"port": 0, "token": "", "microbatch_wait_ms": 0, **overrides}
    settings = ServerSettings(**options)
    if isinstance(index_path, list):
        app = create_app(index_path, settings=settings)
    else:
        app = create_app(index_path, settings=settings, index=Index.open(index_path))
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn_config(app, settings, log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(600):
        if server.started or not thread.is_alive():
            break
        time.sleep(0.05)
    assert server.started, "the threaded server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", app, server
    finally:
        server.should_exit = True
        thread.join(60)
        sock.close()
