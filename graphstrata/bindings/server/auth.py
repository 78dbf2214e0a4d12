"""Bearer tokens: who may call the service, on which indexes, with which rights.

The token is enforced before the request's body is read, by
:class:`~graphstrata.bindings.server.middleware.AuthMiddleware` (every path but ``/healthz``
and the OpenAPI document and its viewers): an unknown token is a 401, a known token without
the right or the index a route needs is a 403 ``forbidden``. The route dependency here checks
the token again and is what puts the bearer scheme and the 401 answers into the OpenAPI
document.

Tokens (:class:`TokenTable`): the single ``--token`` / ``GRAPHSTRATA_TOKEN`` token has every
right on every index; a tokens file (``graphstrata serve --tokens tokens.json``) adds scoped
ones, ``{"TOKEN": {"indexes": ["a"], "rights": ["read"]}}`` (``indexes`` absent or ``["*"]``:
every index; ``rights`` among ``read`` and ``write``, absent: both). ``read`` is retrieval,
answers, chat, stats, metrics and document status; ``write`` is document inserts and deletes.

No ``from __future__ import annotations``: FastAPI must resolve the annotations of the guard's
dependency.
"""

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from graphstrata.bindings.api import ConfigError
from graphstrata.bindings.server.errors import ApiError

#: The rights a token may hold.
RIGHTS = frozenset({"read", "write"})


@dataclass(frozen=True)
class TokenScope:
    """What one token may do.

    Attributes
    ----------
    indexes:
        The index names it may use, or None for every index.
    rights:
        A subset of :data:`RIGHTS`.
    """

    indexes: frozenset[str] | None = None
    rights: frozenset[str] = RIGHTS

    def allows(self, index: str | None, right: str) -> bool:
        """Whether this token may use ``right`` on ``index`` (None: no index involved)."""
        if right not in self.rights:
            return False
        return index is None or self.indexes is None or index in self.indexes


@dataclass
class TokenTable:
    """The service's tokens and their scopes (empty: the service is open).

    Attributes
    ----------
    scopes:
        Token -> its scope.
    """

    scopes: dict[str, TokenScope] = field(default_factory=dict)

    @classmethod
    def build(
        cls, token: str | None, scoped: Mapping[str, Any] | None = None, names: Any = None
    ) -> "TokenTable":
        """The table of an all-rights ``token`` and the ``scoped`` tokens of a tokens file.

        Parameters
        ----------
        token:
            The all-rights token, or None.
        scoped:
            ``{"TOKEN": {"indexes": [...], "rights": [...]}}``, or None.
        names:
            The served index names (a scope naming another index is refused), or None.

        Raises
        ------
        ConfigError
            For a malformed entry, an unknown right or an index that is not served.
        """
        table = cls()
        if token:
            table.scopes[token] = TokenScope()
        for key, spec in (scoped or {}).items():
            if not isinstance(key, str) or not key or not isinstance(spec, dict):
                raise ConfigError('tokens: each entry must be "TOKEN": {indexes, rights}')
            unknown = set(spec) - {"indexes", "rights"}
            if unknown:
                raise ConfigError(f"tokens: unknown member(s) {sorted(unknown)}")
            rights = spec.get("rights", sorted(RIGHTS))
            indexes = spec.get("indexes", ["*"])
            if not _str_list(rights) or not set(rights) <= RIGHTS:
                raise ConfigError(f"tokens: rights must be a list among {sorted(RIGHTS)}")
            if not _str_list(indexes):
                raise ConfigError("tokens: indexes must be a list of index names")
            scope_names = None if "*" in indexes else frozenset(indexes)
            if scope_names is not None and names is not None:
                missing = scope_names - set(names)
                if missing:
                    raise ConfigError(f"tokens: index(es) not served: {sorted(missing)}")
            table.scopes[key] = TokenScope(scope_names, frozenset(rights))
        return table

    @classmethod
    def read(cls, path: str | Path) -> dict[str, Any]:
        """The scoped tokens of a tokens file (JSON).

        Raises
        ------
        ConfigError
            When the file is missing or not a JSON object.
        """
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"tokens file {p}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"tokens file {p}: must be a JSON object")
        return data

    def __bool__(self) -> bool:
        return bool(self.scopes)

    def scope(self, credentials: str | None) -> TokenScope | None:
        """The scope of a presented token (compared in constant time), or None if unknown."""
        if credentials is None:
            return None
        given = credentials.encode("utf-8", "surrogateescape")
        found = None
        for token, scope in self.scopes.items():
            if hmac.compare_digest(given, token.encode()):
                found = scope
        return found

    def scope_of_header(self, authorization: str | None) -> TokenScope | None:
        """The scope of an ``Authorization: Bearer <token>`` header value, or None."""
        if authorization is None:
            return None
        scheme, _, credentials = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.scope(credentials.strip())

    def require(self, authorization: str | None, index: str | None, right: str) -> None:
        """Raise 401/403 unless the header's token may use ``right`` on ``index``.

        A service without tokens allows everything.

        Raises
        ------
        ApiError
            401 ``unauthorized`` (unknown token) or 403 ``forbidden``.
        """
        if not self.scopes:
            return
        scope = self.scope_of_header(authorization)
        if scope is None:
            raise ApiError(
                401,
                "unauthorized",
                "missing or wrong bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if not scope.allows(index, right):
            where = f" on index {index!r}" if index else ""
            raise ApiError(403, "forbidden", f"this token has no {right} right{where}")


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


@dataclass(frozen=True)
class Guard:
    """What the guarded routers add: the token dependency and the 401 they may answer.

    Attributes
    ----------
    dependencies:
        FastAPI dependencies of every guarded route (empty without a token).
    statuses:
        ``(401,)`` with tokens (``(401, 403)`` when some are scoped), else ``()``
        (documented in the OpenAPI responses).
    """

    dependencies: list[Any] = field(default_factory=list)
    statuses: tuple[int, ...] = ()


def bearer_guard(tokens: TokenTable | str | None) -> Guard:
    """The guard that requires ``Authorization: Bearer <token>`` with a known token.

    Parameters
    ----------
    tokens:
        The service's tokens (a string: one all-rights token), or None / empty for an open
        service.

    Returns
    -------
    Guard
        The dependencies and statuses to give the guarded routers.
    """
    if isinstance(tokens, str) or tokens is None:
        tokens = TokenTable.build(tokens or None)
    if not tokens:
        return Guard()
    table = tokens
    bearer = HTTPBearer(auto_error=False)

    async def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    ) -> None:
        if credentials is None or table.scope(credentials.credentials) is None:
            raise ApiError(
                401,
                "unauthorized",
                "missing or wrong bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    scoped = any(scope != TokenScope() for scope in table.scopes.values())
    return Guard(dependencies=[Depends(require_token)], statuses=(401, 403) if scoped else (401,))
