"""``graphstrata prompts show|export [INDEX]`` and the prompt file of ``index --prompts FILE``.

A prompt file is TOML (``.toml``) or JSON holding the ``prompts`` section of an index
(``PromptConfig``): ``entity_types``, ``examples`` and a ``templates`` table of task ->
template (docs/guide/llm.md, "Domain prompts"). ``export`` writes the effective prompts of an
index, or the defaults, in that form, ready to edit and pass to ``index --prompts``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from graphstrata.bindings.cli.common import CLIError

#: The keys a prompt file may hold (``PromptConfig``'s, less the computed hash).
FILE_KEYS = ("entity_types", "examples", "templates")


def load_prompts(path: str) -> Any:
    """The ``PromptConfig`` of a prompt file (validated).

    Raises
    ------
    CLIError
        When the file is missing or not TOML/JSON of a mapping.
    ConfigError
        When a key or a template is invalid.
    """
    from graphstrata.bindings.api import ConfigError, PromptConfig

    p = Path(path)
    if not p.is_file():
        raise CLIError(f"prompt file {p} not found")
    try:
        if p.suffix == ".toml":
            import tomllib

            data = tomllib.loads(p.read_text(encoding="utf-8"))
        else:
            data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        kind = p.suffix.lstrip(".") or "JSON"
        raise CLIError(f"prompt file {p} is not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise CLIError(f"prompt file {p} must hold a mapping of {', '.join(FILE_KEYS)}")
    unknown = sorted(set(data) - set(FILE_KEYS) - {"sha256"})
    if unknown:
        raise ConfigError(f"prompt file {p}: unknown key(s) {unknown}; use {', '.join(FILE_KEYS)}")
    prompts = PromptConfig(**{k: v for k, v in data.items() if k in FILE_KEYS})
    prompts.validate(ConfigError)
    return prompts


def _toml_string(text: str) -> str:
    """A TOML multi-line basic string of ``text`` (backslashes and quote runs escaped)."""
    body = text.replace("\\", "\\\\").replace('"""', '""\\"')
    return f'"""\n{body}"""'


def to_toml(effective: dict[str, Any]) -> str:
    """A prompt file in TOML of ``PromptConfig.effective()``."""
    lines = [
        "# graphstrata prompts (docs/guide/llm.md); pass to `graphstrata index --prompts FILE`.",
        "# Templates use str.format: keep each task's {placeholders}, double literal braces.",
        f"entity_types = {_toml_string(effective['entity_types'])}",
        f"examples = {_toml_string(effective['examples'])}",
        "",
        "[templates]",
    ]
    lines += [f"{task} = {_toml_string(t)}" for task, t in effective["templates"].items()]
    return "\n".join(lines) + "\n"


def _effective(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    from graphstrata.bindings.api import PromptConfig

    if args.index is None:
        prompts = PromptConfig()
        return prompts.effective(), prompts.sha256
    from graphstrata.bindings.cli.common import open_index

    prompts = open_index(args).config.prompts
    return prompts.effective(), prompts.sha256


def cmd_prompts(args: argparse.Namespace) -> int:
    """``graphstrata prompts show|export [INDEX]``."""
    effective, digest = _effective(args)
    if args.action == "export":
        fmt = args.format or ("json" if args.out and args.out.endswith(".json") else "toml")
        text = (
            json.dumps(effective, indent=1, ensure_ascii=False) + "\n"
            if fmt == "json"
            else to_toml(effective)
        )
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
            print(f"wrote {args.out} (prompts sha256 {digest})")
        else:
            print(text, end="")
        return 0
    if args.json:
        print(json.dumps({**effective, "sha256": digest}, indent=1, ensure_ascii=False))
        return 0
    print(f"sha256: {digest}")
    print(f"entity_types: {' '.join(effective['entity_types'].split())}")
    print(f"examples: {effective['examples'] or 'none'}")
    for task, template in effective["templates"].items():
        print(f"\n--- {task}\n{template}")
    return 0


def register(sub: Any) -> None:
    """Add ``prompts`` to the ``graphstrata`` subparsers."""
    from graphstrata.bindings.options import add_backend_args

    p = sub.add_parser("prompts", help="show or export the prompts of an index (or the defaults)")
    p.add_argument("action", choices=("show", "export"))
    p.add_argument("index", nargs="?", help="an index (default: the built-in prompts)")
    p.add_argument("--out", help="export: the file to write (default: standard output)")
    p.add_argument("--format", choices=("toml", "json"), help="export: default toml")
    p.add_argument("--json", action="store_true", help="show: as JSON")
    add_backend_args(p)
    p.set_defaults(func=cmd_prompts)
