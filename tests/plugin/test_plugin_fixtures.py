"""The small fixtures and the helper extension authors use for their own conformance tests."""

from __future__ import annotations

import pytest

from dw_testing.plugin.capabilities import conformance_test


def test_dw_clock_is_a_fake_clock_a_cli_process_can_share(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_clock="""
        from pathlib import Path

        def test_clock(dw_clock):
            start = dw_clock.now()
            dw_clock.advance(30)
            assert dw_clock.now() == start + 30
            path = dw_clock.env["DW_CLOCK"].removeprefix("file:")
            assert float(Path(path).read_text()) == start + 30
    """)
    pytester.runpytest("test_clock.py").assert_outcomes(passed=1)


def test_a_cross_process_store_without_a_uri_fails_with_the_fix(
    stores_module: pytest.Pytester,
) -> None:
    stores_module.makepyprojecttoml(
        '[tool.dw-testing.stores.nouri]\nobj = "dwstores:spec_object"\n'
        "capabilities = {cross_process = true}\n"
    )
    stores_module.makepyfile(test_child="""
        def test_child(dw_child_target):
            pass
    """)
    result = stores_module.runpytest("test_child.py", "--dw-store=nouri")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*store nouri has no uri, so a child process cannot open it*"])


def test_conformance_test_marks_level_and_requirements(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine="""
        from dw_testing.plugin.capabilities import conformance_test

        @conformance_test("put_if_absent", "cross_process")
        def test_needs_processes(dw_store):
            pass

        @conformance_test(level="engine")
        def test_engine(dw_store):
            pass
    """)
    result = pytester.runpytest("test_mine.py", "--dw-store=memory", "-m", "dw_engine", "-rs")
    result.assert_outcomes(passed=1, deselected=1)
    result = pytester.runpytest("test_mine.py", "--dw-store=memory", "-m", "dw_store_contract",
                                "-rs")
    result.assert_outcomes(skipped=1, deselected=1)
    result.stdout.fnmatch_lines(["*store memory does not have capability cross_process*"])


def test_conformance_test_refuses_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown capability teleport; known: cross_handle"):
        conformance_test("teleport")
    with pytest.raises(ValueError, match="level must be 'store' or 'engine'"):
        conformance_test(level="disk")


def test_the_plugin_provides_the_engine_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_engine="""
        from reference_engine.engine import Engine
        from reference_engine.stores.memory import MemoryStore

        def test_engine(dw_make_engine, dw_engine_variant, dw_clock):
            assert dw_engine_variant is None
            engine = dw_make_engine(MemoryStore("plugin-engine-fixture"))
            assert isinstance(engine, Engine)
            assert engine.clock is dw_clock
    """)
    pytester.runpytest("test_engine.py").assert_outcomes(passed=1)


def test_a_variant_hook_replaces_the_engine(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import contextlib
        from reference_engine.engine import Engine

        class Marked(Engine):
            pass

        class Variant:
            name = "marked"

            def installed(self):
                return contextlib.nullcontext(self)

            def engine(self, store, clock, **kwargs):
                return Marked(store, clock, **kwargs)

        def pytest_dw_engine_under_test(config):
            return Variant()
    """)
    pytester.makepyfile(test_engine="""
        from reference_engine.stores.memory import MemoryStore

        def test_engine(dw_make_engine, dw_engine_variant):
            assert dw_engine_variant.name == "marked"
            assert type(dw_make_engine(MemoryStore("plugin-variant"))).__name__ == "Marked"
    """)
    pytester.runpytest("test_engine.py").assert_outcomes(passed=1)


def test_a_variant_named_without_its_plugin_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DW_ENGINE_VARIANT", "consume_in_two_saves")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest("test_nothing.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*add -p dw_testing.selftest.variants*"])
    with_plugin = pytester.runpytest("test_nothing.py", "-p", "dw_testing.selftest.variants")
    with_plugin.assert_outcomes(passed=1)
