"""docs/theorems.md maps each theorem to its code and its test: every function it names
must import, and every test it names must exist, so a move or a rename cannot leave the
map pointing at nothing."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "theorems.md"

_CODE = re.compile(r"`((?:dpconvex\.)?[a-z_][a-z_0-9]*(?:\.[a-z_][a-z_0-9]*)*):([A-Za-z_][\w]*)`")
_BARE = re.compile(r"`([A-Za-z_]\w*)`")
_TEST = re.compile(r"`(tests/[\w/]+\.py)?::(test_\w+)`")


def _rows():
    for line in PAGE.read_text().splitlines():
        if line.startswith("|") and not set(line) <= set("|- "):
            yield line


def _code_refs():
    """`module:name` refs, and bare `name`s after one in the same ;-separated part of a cell
    (or before a `dpconvex.module` given in parentheses, as in "events `A` (`dpconvex.x`)")."""
    refs = set()
    for row in _rows():
        for part in re.split(r"[|;]", row):
            module, bare = None, []
            for token in re.findall(r"`[^`]+`", part):
                code, name = _CODE.fullmatch(token), _BARE.fullmatch(token)
                if code:
                    module = code.group(1).removeprefix("dpconvex.")
                    refs.add((module, code.group(2)))
                elif token.startswith("`dpconvex.") and ":" not in token:
                    refs.update((token.strip("`").removeprefix("dpconvex."), b) for b in bare)
                elif name and module:
                    refs.add((module, name.group(1)))
                elif name:
                    bare.append(name.group(1))
    return sorted(refs)


def _test_refs():
    refs = set()
    for row in _rows():
        last = None
        for match in _TEST.finditer(row):
            last = match.group(1) or last
            if last is not None:
                refs.add((last, match.group(2)))
    return sorted(refs)


def test_the_page_names_code_and_tests():
    assert len(_code_refs()) > 40 and len(_test_refs()) > 60


@pytest.mark.parametrize("module,name", _code_refs())
def test_every_named_function_exists(module, name):
    mod = importlib.import_module(f"dpconvex.{module}")
    assert hasattr(mod, name), f"docs/theorems.md names {module}:{name}, which does not exist"


@pytest.mark.parametrize("path,name", _test_refs())
def test_every_named_test_exists(path, name):
    source = ROOT / path
    assert source.is_file(), f"docs/theorems.md names {path}, which does not exist"
    assert re.search(rf"^def {name}\(", source.read_text(), re.M), f"{path}::{name} is missing"
