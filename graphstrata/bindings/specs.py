"""Backend spec strings: ``NAME[:BODY][?key=value&...]`` split into their parts, and options
converted to typed keyword arguments. Shared by the registry and each backend's
``from_spec``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from graphstrata.engine import ConfigError

#: Where ``openai:`` and ``openai-embed:`` go without ``@URL`` (and no variable says where).
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"

#: Option name -> (canonical name, converter), per backend.
OptionTable = Mapping[str, tuple[str, Callable[[Any], Any]]]


def to_bool(value: Any) -> bool:
    """``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off`` (or a bool)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true/false, got {value!r}")


def optional_int(value: Any) -> int | None:
    """An int, or None for ``""``/``none``."""
    return None if value in (None, "", "none", "None") else int(value)


def split_options(spec: str) -> tuple[str, dict[str, str]]:
    """``"vllm:/m?dtype=half&tp=2"`` -> ``("vllm:/m", {"dtype": "half", "tp": "2"})``."""
    head, sep, query = spec.partition("?")
    if not sep:
        return spec, {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError as exc:
        raise ConfigError(f"bad options in spec {spec!r}: expected ?key=value&key=value") from exc
    return head, dict(pairs)


def convert_options(
    what: str,
    raw: Mapping[str, Any],
    table: OptionTable,
) -> dict[str, Any]:
    """Map option names to their canonical names and types; unknown names are an error."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in table:
            raise ConfigError(
                f"unknown option {key!r} for {what}; known: {', '.join(sorted(table))}"
            )
        name, convert = table[key]
        try:
            out[name] = convert(value)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"bad value {value!r} for option {key!r} of {what}: {exc}") from exc
    return out


def split_model_url(spec_body: str, what: str, default_url: str | None) -> tuple[str, str]:
    """``"MODEL@http://host/v1"`` -> ``(MODEL, URL)``; without ``@URL`` the default is used."""
    model, sep, url = spec_body.rpartition("@")
    if sep and "://" in url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"bad server URL {url!r} for {what}: expected http(s)://HOST[:PORT]/v1")
    if not sep or not url.startswith(("http://", "https://")):
        model, url = spec_body, ""
    if not model:
        raise ConfigError(f"{what} needs a model name: {what}:MODEL@URL")
    if not url:
        if not default_url:
            raise ConfigError(f"{what} needs a server URL: {what}:MODEL@http://HOST:PORT/v1")
        url = default_url
    return model, url
