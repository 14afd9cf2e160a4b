"""Static rules over the engine's source (docs/explanation/engine.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import reference_engine

PACKAGE = Path(reference_engine.__file__).resolve().parent
KEYS_MODULE = PACKAGE / "records" / "keys.py"
DELIVERY = PACKAGE / "waits" / "delivery.py"
# A key is built from a string that starts with its family; prose that merely mentions
# a key as an example (an InvalidKey message saying "like 'runs/r1'") is not a key.
FAMILIES = ("runs", "waits", "wait-outcomes", "claims", "ready-runs", "wait-deadlines")


def _builds_a_key(text: str) -> bool:
    if text.startswith(tuple(f"{family}/" for family in FAMILIES)) or text == "wait-outcomes":
        return True
    return "/rev/" in text and " " not in text


def _string_constants(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            found.extend(v.value for v in node.values
                         if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return found


def _docstring_free_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                docs.add(doc)
    return [s for s in _string_constants(path) if s not in docs]


def _prefix_users() -> list[str]:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == KEYS_MODULE:
            continue
        for text in _docstring_free_strings(path):
            if _builds_a_key(text):
                offenders.append(f"{path.relative_to(PACKAGE)}: {text[:60]!r}")
    return offenders


def test_only_the_keys_module_names_the_key_prefixes() -> None:
    assert not _prefix_users(), (
        "build keys through reference_engine.records.keys, never by hand:\n"
        + "\n".join(_prefix_users())
    )


def test_the_prefix_check_sees_a_hand_built_key(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('def k(w):\n    """Docs may say waits/<id>."""\n    return f"waits/{w}"\n')
    strings = _docstring_free_strings(sample)
    assert any(_builds_a_key(s) for s in strings)
    assert all("Docs may say" not in s for s in strings)
    assert _builds_a_key("wait-outcomes") and _builds_a_key("x/rev/0000000001")
    assert not _builds_a_key("keys are relative, like 'runs/r1'")


def _imports_and_calls(path: Path) -> tuple[set[str], set[str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    return modules, names


FORBIDDEN_MODULES = {"reference_engine.runs.claims", "reference_engine.runs.executor",
                     "reference_engine.runs.lifecycle", "reference_engine.engine"}
FORBIDDEN_NAMES = {"ClaimBook", "Claim", "FencedSaver", "revision_key", "take", "end_run",
                   "put"}


def _delivery_violations(path: Path) -> list[str]:
    modules, names = _imports_and_calls(path)
    return sorted((modules & FORBIDDEN_MODULES) | (names & FORBIDDEN_NAMES))


def test_delivery_never_takes_a_claim_nor_saves_a_run() -> None:
    assert _delivery_violations(DELIVERY) == [], (
        "signal/answer delivery must write only the outcome record (docs/explanation/engine.md)"
    )


def test_the_delivery_check_sees_a_claim_and_a_save(tmp_path: Path) -> None:
    sample = tmp_path / "bad_delivery.py"
    sample.write_text("from reference_engine.runs.claims import ClaimBook\n"
                      "def deliver(store, saver, r):\n    saver(r)\n"
                      "    store.put('k', b'')\n")
    assert _delivery_violations(sample) == ["ClaimBook", "put", "reference_engine.runs.claims"]
