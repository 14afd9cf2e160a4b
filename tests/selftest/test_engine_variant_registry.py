"""The engine-variant registry: selecting a variant, installing and removing its seams."""

from __future__ import annotations

import pytest

from dw_testing.kit.clock import FakeClock
from dw_testing.selftest.engine_variants import (
    ENGINE_VARIANTS,
    ENV_VAR,
    VARIANTS,
    SignalWritesRunRecord,
    selected_variant,
    variant_named,
)
from reference_engine import engine as engine_module
from reference_engine.runs import consume as consume_module
from reference_engine.runs import executor as executor_module
from reference_engine.stores.memory import MemoryStore

# The engine imports FencedSaver and apply_outcomes from these modules when a method runs.
SEAMS = ((executor_module, "FencedSaver"), (consume_module, "apply_outcomes"),
         (executor_module, "create_then_read"))


def _seams() -> list[object]:
    return [vars(module)[name] for module, name in SEAMS]


def test_installing_a_variant_replaces_its_seams_and_puts_them_back() -> None:
    originals = _seams()
    for variant in VARIANTS.values():
        with variant.installed():
            replaced = [vars(module)[attr] is new for module, attr, new in variant.patches]
            assert all(replaced), variant.name
        assert _seams() == originals, f"{variant.name} left a seam replaced"


def test_a_variant_builds_its_own_engine_class() -> None:
    clock = FakeClock()
    built = VARIANTS["signal_writes_run_record"].engine(MemoryStore(), clock)
    assert isinstance(built, SignalWritesRunRecord)
    assert type(VARIANTS["boolean_decision"].engine(MemoryStore(), clock)) is engine_module.Engine


def test_variants_are_selected_by_name_or_import_path() -> None:
    assert variant_named("replay_journals_twice") is VARIANTS["replay_journals_twice"]
    by_path = variant_named("dw_testing.selftest.engine_variants:resume_ignores_fence")
    assert by_path is VARIANTS["resume_ignores_fence"]
    assert selected_variant({}) is None
    assert selected_variant({ENV_VAR: " consume_in_two_saves "}) is VARIANTS[
        "consume_in_two_saves"]


def test_an_unknown_variant_is_refused_with_the_known_names() -> None:
    with pytest.raises(ValueError, match="boolean_decision") as refused:
        variant_named("no_such_variant")
    assert ENV_VAR in str(refused.value)
    with pytest.raises(ValueError, match="not an EngineVariant"):
        variant_named("dw_testing.selftest.engine_variants:ENV_VAR")


def test_the_kill_matrix_registry_lists_every_variant_at_engine_level() -> None:
    assert set(ENGINE_VARIANTS) == set(VARIANTS)
    for name, info in ENGINE_VARIANTS.items():
        assert info.level == "engine" and info.target.endswith(f":{name}")
        assert variant_named(info.target) is VARIANTS[name]
