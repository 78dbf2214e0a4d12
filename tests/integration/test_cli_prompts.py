"""``graphstrata prompts show|export`` and ``index --prompts FILE``; the yield in the
command line's write report and in ``stats`` (a subprocess, the extractive backend)."""

from __future__ import annotations

import json
import tomllib

import pytest

from graphstrata.engine.prompts import DEFAULT_TEMPLATES, PromptConfig
from tests.helpers.cli import run

pytestmark = pytest.mark.integration


def test_export_edit_and_index_with_domain_prompts(tmp_path):
    shown = json.loads(run("prompts", "show", "--json").stdout)
    assert shown["templates"] == DEFAULT_TEMPLATES and shown["sha256"] == PromptConfig().sha256
    out = tmp_path / "prompts.toml"
    assert "wrote" in run("prompts", "export", "--out", str(out)).stdout
    data = tomllib.loads(out.read_text())
    assert data["templates"] == DEFAULT_TEMPLATES  # the export reads back as the defaults
    data["entity_types"] = "telescopes, observatories"
    data["templates"] = {"community": DEFAULT_TEMPLATES["community"].replace("main", "key")}
    custom = tmp_path / "custom.json"
    custom.write_text(json.dumps(data))

    index = tmp_path / "idx"
    built = run("index", "examples/sample", "--out", str(index), "--prompts", str(custom))
    assert "llm yield" in built.stdout and "decompose:" in built.stdout
    assert "inputs held entity" in built.stdout
    expected = PromptConfig(**data)
    shown = json.loads(run("prompts", "show", str(index), "--json").stdout)
    assert shown["sha256"] == expected.sha256 and shown["entity_types"] == data["entity_types"]
    stats = run("stats", str(index)).stdout
    assert "last write yield" in stats and "yield floor" in stats and expected.sha256 in stats


def test_bad_prompt_files_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[templates]\ndecompose = "no placeholder"\n')
    proc = run("index", "examples/sample", "--out", str(tmp_path / "i"), "--prompts", str(bad),
               check=False)  # fmt: skip
    assert proc.returncode == 1 and "must contain {text}" in proc.stderr
    assert "Traceback" not in proc.stderr
    unknown = tmp_path / "unknown.json"
    unknown.write_text('{"entity_type": "x"}')
    proc = run("index", "examples/sample", "--out", str(tmp_path / "j"), "--prompts",
               str(unknown), check=False)  # fmt: skip
    assert proc.returncode == 1 and "unknown key(s) ['entity_type']" in proc.stderr
    proc = run("prompts", "show", "--prompts", check=False)
    assert proc.returncode == 2
