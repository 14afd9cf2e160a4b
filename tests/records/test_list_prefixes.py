"""The engine and the kit call ``list`` only with ``""`` or a prefix ending in ``/``.

That is the one form every store answers alike (C-LIST-3): swamp's stores match the raw
string, ours match whole segments, and for such a prefix the two agree. Three proofs: the
key functions return such prefixes; every ``.list(`` call site passes one (or passes on,
unchanged, the prefix its own caller gave); and the engine's flows, run on a store that
matches the raw string and keeps write order, ask for nothing else and lose nothing.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

from support.engine_flows import YES, MakeEngine, approval_workflow

from dw_testing.kit.prefixed import PrefixedStore
from reference_engine.records import keys
from reference_engine.stores.keys import validate_key, validate_prefix

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference_engine", "dw_testing")
# A name (or attribute) holding the prefix the function's own caller passed: passing it on
# unchanged keeps the caller's form, which the other two proofs pin down.
FORWARDED = {"prefix", "inner_prefix"}
SAMPLE_ARGUMENTS = {"run_id": "r1", "status": "running", "workflow": "wf", "minute": 7}


def _prefix_functions() -> dict[str, Any]:
    return {name: fn for name, fn in vars(keys).items()
            if inspect.isfunction(fn) and fn.__module__ == keys.__name__
            and (name.endswith(("_root", "_prefix")) or name == "due_bucket")}


def test_every_prefix_function_of_the_keys_module_ends_in_a_slash() -> None:
    functions = _prefix_functions()
    assert {"runs_root", "waits_root", "claims_prefix", "due_bucket"} <= set(functions)
    wrong = {}
    for name, fn in functions.items():
        params = inspect.signature(fn).parameters
        made = fn(**{p: SAMPLE_ARGUMENTS[p] for p in params if p in SAMPLE_ARGUMENTS})
        if not made.endswith("/") or validate_prefix(made) != made[:-1]:
            wrong[name] = made
    assert not wrong, (
        f"these key functions return a prefix not ending in '/': {wrong}; a store that "
        "declares no segment_prefixes may answer such a prefix by name (C-LIST-4)")


def _safe(node: ast.expr) -> bool:
    """Whether ``node`` is ``""``, ends in ``/``, or forwards the caller's own prefix."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and (node.value == "" or node.value.endswith("/"))
    if isinstance(node, ast.JoinedStr):
        last = node.values[-1]
        if isinstance(last, ast.Constant):
            return isinstance(last.value, str) and last.value.endswith("/")
        # "<something>/" followed by a forwarded prefix keeps the prefix's form.
        before = node.values[-2] if len(node.values) > 1 else None
        return (isinstance(last, ast.FormattedValue) and _safe(last.value)
                and isinstance(before, ast.Constant) and str(before.value).endswith("/"))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        return (isinstance(owner, ast.Name) and owner.id == "keys"
                and node.func.attr in _prefix_functions())
    if isinstance(node, ast.IfExp):
        return _safe(node.body) and _safe(node.orelse)
    if isinstance(node, ast.BoolOp):
        return all(_safe(value) for value in node.values)
    if isinstance(node, ast.Name):
        return node.id in FORWARDED
    if isinstance(node, ast.Attribute):
        return node.attr in FORWARDED
    return False


def _list_calls() -> list[tuple[str, int, ast.Call]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == "list"
                        and not (isinstance(node.func.value, ast.Name)
                                 and node.func.value.id == "builtins")):
                    found.append((path.relative_to(ROOT).as_posix(), node.lineno, node))
    return found


def test_every_list_call_site_passes_an_empty_or_slash_ending_prefix() -> None:
    calls = _list_calls()
    assert len(calls) >= 15, "the scan found too few list calls: it no longer sees them"
    wrong = [f"{path}:{line}: list({ast.unparse(call.args[0]) if call.args else ''})"
             for path, line, call in calls if len(call.args) != 1 or not _safe(call.args[0])]
    assert not wrong, (
        "these calls may pass list a prefix without its trailing '/'; pass \"\", a prefix "
        "from reference_engine.records.keys, or f\"{prefix}/\" (C-LIST-3):\n"
        + "\n".join(wrong))


def test_the_scan_tells_a_bare_prefix_from_a_slash_ending_one() -> None:
    def arg(source: str) -> ast.expr:
        expr = ast.parse(source, mode="eval").body
        assert isinstance(expr, ast.Call)
        return expr.args[0]

    assert all(_safe(arg(s)) for s in ('s.list("")', 's.list("a/")', 's.list(f"{p}/")',
                                       "s.list(keys.waits_root())", "s.list(prefix)",
                                       's.list(f"{root}/{prefix}")',
                                       's.list(f"{n}/" if n else "")'))
    assert not any(_safe(arg(s)) for s in ('s.list("a")', 's.list(f"{p}")', "s.list(name)",
                                           "s.list(keys.wait_key(w))",
                                           's.list(f"{root}/{name}")'))


class RawPrefixStore:
    """Lists as swamp's in-memory store does (raw ``startswith``, write order) and records
    every prefix it is asked for."""

    def __init__(self) -> None:
        self.records: dict[str, bytes] = {}
        self.prefixes: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.records[validate_key(key, op="put")] = bytes(data)

    def put_if_absent(self, key: str, data: bytes) -> bool:
        if validate_key(key, op="put_if_absent") in self.records:
            return False
        self.records[key] = bytes(data)
        return True

    def get(self, key: str) -> bytes | None:
        return self.records.get(validate_key(key, op="get"))

    def delete(self, key: str) -> None:
        self.records.pop(validate_key(key, op="delete"), None)

    def list(self, prefix: str) -> list[str]:
        validate_prefix(prefix)
        self.prefixes.append(prefix)
        return [key for key in self.records if key.startswith(prefix)]


def test_the_engines_flows_list_only_slash_ending_prefixes_and_lose_nothing(
    make_engine: MakeEngine,
) -> None:
    # Runs r1 and r10 side by side: r1's prefixes are name prefixes of r10's keys.
    store = RawPrefixStore()
    engine = make_engine(store)
    first = engine.run(approval_workflow(), run_id="r1")
    tenth = engine.run(approval_workflow(), run_id="r10")
    engine.runs()
    engine.runs(statuses=("suspended",), workflow=first.to_json()["workflow"])
    engine.open_waits()
    engine.cancel("r1")
    engine.signal(tenth.waits[0].wait_id, YES)
    engine.serve_once(full_scan=True)
    engine.sweep()
    assert engine.show("r10")["status"] == "succeeded", "r10 lost something to r1's cancel"
    assert engine.show("r1")["status"] == "cancelled"
    engine.delete("r1")
    assert engine.show("r10")["status"] == "succeeded", "deleting r1 touched r10"
    assert store.prefixes, "the flows listed nothing: the test proves nothing"
    bare = sorted({p for p in store.prefixes if p and not p.endswith("/")})
    assert not bare, f"the engine listed these prefixes without their trailing '/': {bare}"


def test_the_kits_prefixed_store_lists_only_slash_ending_prefixes_of_its_own() -> None:
    store = RawPrefixStore()
    prefixed = PrefixedStore(store, "dwc-s-gw0/1")
    PrefixedStore(store, "dwc-s-gw0/10").put("k", b"other test's")
    prefixed.put("k", b"mine")
    assert prefixed.list("") == ["k"]
    prefixed.clear()
    assert store.records == {"dwc-s-gw0/10/k": b"other test's"}
    assert store.prefixes == ["dwc-s-gw0/1/", "dwc-s-gw0/1/"]
