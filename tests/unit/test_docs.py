"""The documents say what the code does: the README's commands parse with the real CLI parser,
its ``make`` targets exist, the HTTP routes it names are served, the repository paths the
documents name exist, and the documents stay within their sizes."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from graphstrata.bindings.cli.main import build_parser
from graphstrata.engine.config import IndexConfig

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DECISIONS = sorted((ROOT / "docs" / "decisions").glob("*.md"))
ROUTES = ROOT / "graphstrata" / "bindings" / "server" / "routes"

#: (document, most lines, longest line): what a reader of each is asked to read.
LIMITS = [(README, 350, 120), (ARCHITECTURE, 350, 200)] + [(d, 80, 120) for d in DECISIONS]

#: First path segments that name a folder of the repository (``core/...`` etc. are short for
#: ``graphstrata/core/...``).
REPO_ROOTS = {"graphstrata", "tests", "benchmarks", "docs", "examples"}
PACKAGE_ROOTS = {"core", "engine", "evaluation", "bindings"}

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`([^`]+)`")
PATH_TOKEN = re.compile(r"^[A-Za-z0-9_.*-]+(/[A-Za-z0-9_.*-]+)*/?$")
METHOD_ROUTE = re.compile(r"\b(GET|POST|DELETE|PUT|PATCH) (/[\w/{}.:-]*)")
URL_ROUTE = re.compile(r"https?://[^/\s'\"]+(/[^\s'\"?]*)")
HTTP_METHODS = {"get", "post", "delete", "put", "patch"}


def fenced(text: str, languages: set[str]) -> list[str]:
    """The bodies of the fenced code blocks whose language is in ``languages``."""
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1) in languages]


def shell_commands(block: str) -> list[list[str]]:
    """The simple commands of a shell block: continuations joined, comments dropped, lists
    (``&&``, ``;``, ``|``) split."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", "||", ";", "|"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(word)
    return commands


def readme_commands(program: str) -> list[list[str]]:
    text = README.read_text()
    blocks = fenced(text, {"bash", "sh", "shell", "console"})
    return [c for b in blocks for c in shell_commands(b) if c[0] == program]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", text, re.M))


def served_routes() -> set[tuple[str, str]]:
    """(method, path template) of every route the app's routers declare, read from the route
    modules with ``ast``: each ``@api.<method>(path)`` under both prefixes a router is built
    with (``/v1`` and ``/v1/indexes/{name}``), and the web page's files."""
    routes: set[tuple[str, str]] = set()
    for module in ROUTES.glob("*.py"):
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "FILES" for t in node.targets
            ):
                routes |= {("GET", p) for p in ast.literal_eval(node.value)}
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in node.decorator_list:
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                    continue
                if call.func.attr not in HTTP_METHODS or not call.args:
                    continue
                code = compile(ast.Expression(call.args[0]), str(module), "eval")
                for base in ("/v1", "/v1/indexes/{name}"):
                    path = eval(code, {"__builtins__": {}}, {"base": base})
                    routes.add((call.func.attr.upper(), path))
    return {(m, template(p)) for m, p in routes}


def template(path: str) -> str:
    """``/v1/documents/{doc_id:path}`` and ``/v1/documents/{id}`` -> ``/v1/documents/{}``."""
    return re.sub(r"\{[^}]*\}", "{}", path.split("?", 1)[0].rstrip(".,;:"))


def named_paths(text: str) -> list[str]:
    """Tokens of inline code spans (outside fenced blocks) that look like repository paths."""
    text = FENCE.sub("", text)
    out = []
    for span in INLINE.findall(text):
        words = span.split()
        for word in words:
            word = word.rstrip(".,;:)")
            if "/" not in word or not PATH_TOKEN.match(word):
                continue
            first = word.split("/", 1)[0]
            if first.isupper() or first in ("", ".", ".."):
                continue  # a placeholder (INDEX/..., HOST/...) or a path outside the repository
            if len(words) > 1 and first not in REPO_ROOTS | PACKAGE_ROOTS:
                continue  # an argument in a command line, e.g. a URL path or an example output
            out.append(word)
    return out


def path_exists(path: str) -> bool:
    """A repository path, a path under ``graphstrata/``, or a path inside the package named by
    its last segments (``state/g2.py``, ``llm/``)."""
    bases = [ROOT, ROOT / "graphstrata"]
    if any(list(base.glob(path.rstrip("/"))) for base in bases):
        return True
    first = path.split("/", 1)[0]
    if first in REPO_ROOTS | PACKAGE_ROOTS:
        return False
    return any((ROOT / "graphstrata").glob("**/" + path.rstrip("/")))


def test_every_graphstrata_command_in_the_readme_parses():
    commands = readme_commands("graphstrata")
    assert len(commands) >= 10
    parser = build_parser()
    for words in commands:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                args = parser.parse_args(words[1:])
            except SystemExit as exc:
                pytest.fail(f"{shlex.join(words)!r} does not parse ({exc.code}): {err.getvalue()}")
        assert isinstance(args, argparse.Namespace) and callable(args.func)


def test_every_make_target_in_the_readme_exists():
    commands = readme_commands("make")
    named = {w for c in commands for w in c[1:] if not w.startswith("-")}
    assert {"demo", "test"} <= named
    assert named <= make_targets(), named - make_targets()


def test_the_two_commands_come_first():
    head = "\n".join(README.read_text().splitlines()[:60])
    assert "make demo" in head and "make test" in head


def test_every_route_the_readme_names_is_served():
    text = README.read_text()
    served = served_routes()
    named = {(m, template(p)) for m, p in METHOD_ROUTE.findall(text)}
    assert len(named) >= 10
    missing = named - served
    assert not missing, f"routes the README names that no router declares: {sorted(missing)}"
    urls = {template(p) for b in fenced(text, {"bash", "sh"}) for p in URL_ROUTE.findall(b)}
    assert urls <= {p for _, p in served}, urls - {p for _, p in served}


def test_the_document_delete_route_takes_the_document_id():
    served = served_routes()
    assert ("DELETE", "/v1/documents/{}") in served
    assert ("DELETE", "/v1/documents") not in served


@pytest.mark.parametrize("doc", [README, ARCHITECTURE, *DECISIONS], ids=lambda p: p.name)
def test_every_path_a_document_names_exists(doc):
    paths = named_paths(doc.read_text())
    missing = [p for p in paths if not path_exists(p)]
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_the_readme_config_examples_are_valid_configs():
    blocks = fenced(README.read_text(), {"toml"})
    assert blocks
    for block in blocks:
        IndexConfig.from_dict(tomllib.loads(block)).validate()


def test_the_readme_python_examples_compile():
    for block in fenced(README.read_text(), {"python"}):
        compile(block, "README.md", "exec")


@pytest.mark.parametrize("doc,most,longest", LIMITS, ids=lambda v: getattr(v, "name", str(v)))
def test_documents_stay_within_their_sizes(doc, most, longest):
    lines = doc.read_text().splitlines()
    assert len(lines) <= most
    long = [(i + 1, len(line)) for i, line in enumerate(lines) if len(line) > longest]
    assert not long, f"{doc.name}: lines over {longest} characters (line, length): {long}"


def test_decision_records_are_numbered_and_cite_their_measurement():
    assert 10 <= len(DECISIONS) <= 40
    numbers = [d.name[:4] for d in DECISIONS]
    assert numbers == [f"{i:04d}" for i in range(1, len(DECISIONS) + 1)]
    for d in DECISIONS:
        text = d.read_text()
        for part in ("**Context.**", "**Decision.**", "**Consequences.**", "**Measurement.**"):
            assert part in text, f"{d.name} has no {part}"


def test_no_document_cites_a_script_that_is_not_in_the_repository():
    docs = [README, *ROOT.glob("docs/**/*.md"), *ROOT.glob("benchmarks/**/README.md")]
    citing = [str(d.relative_to(ROOT)) for d in docs if "build/scratch" in d.read_text()]
    assert not citing
    for doc in docs:
        for script in re.findall(r"\bpython3? ((?:benchmarks|tests)/[\w/]+\.py)", doc.read_text()):
            assert (ROOT / script).exists(), f"{doc.name} runs {script}, which does not exist"


def test_every_architecture_section_the_code_cites_exists():
    sections = set(re.findall(r"^## (.+)$", ARCHITECTURE.read_text(), re.M))
    cite = re.compile(r'architecture\.md[^"\n]{0,40}?((?:"[^"]+"(?:\s*(?:#:)?\s*(?:and|,)\s*)?)+)')
    cited: dict[str, str] = {}
    for module in (ROOT / "graphstrata").rglob("*.py"):
        for match in cite.finditer(module.read_text()):
            for title in re.findall(r'"([^"]+)"', match.group(1)):
                cited[re.sub(r"\s+(?:#:\s*)?", " ", title)] = str(module.relative_to(ROOT))
    assert len(cited) >= 5
    missing = {t: m for t, m in cited.items() if t not in sections}
    assert not missing, f"cited sections that docs/architecture.md lacks: {missing}"
