"""Store names, URIs, import paths, entry points and pyproject entries -> stores under test."""

from __future__ import annotations

import pytest

CAPS_TEST = """
import pytest

def test_caps(dw_caps, dw_spec):
    print("CAPS", dw_spec.name, sorted(k for k, v in dw_caps.items() if v))

@pytest.mark.dw_requires("cross_process")
def test_needs_cross_process(dw_child_target):
    pass
"""


def _entry_point_dist(pytester: pytest.Pytester, name: str, target: str) -> None:
    """A fake installed distribution on sys.path registering one dw_testing.stores entry."""
    dist = pytester.mkdir("dwfake-0.1.dist-info")
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dwfake\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[dw_testing.stores]\n{name} = {target}\n")


def _store_mine(pytester: pytest.Pytester, *lines: str) -> None:
    """pyproject.toml declares the store ``mine``, ``dwstores:dict_factory``, with ``lines``."""
    pytester.makepyprojecttoml("\n".join(
        ["[tool.dw-testing.stores.mine]", 'obj = "dwstores:dict_factory"', *lines, ""]))


def test_dw_stores_lists_builtin_pyproject_and_entry_point_names(
    stores_module: pytest.Pytester,
) -> None:
    _store_mine(stores_module, 'description = "my dict store"')
    _entry_point_dist(stores_module, "fromep", "dwstores:dict_factory")
    result = stores_module.runpytest("--dw-stores")
    assert result.ret == 0
    result.stdout.fnmatch_lines_random([
        "*mine*pyproject.toml*my dict store*", "*fromep*entry point dwstores:dict_factory*",
        "*memory*built-in*", "*file*built-in*", "*sqlite*built-in*", "*moto *built-in*",
        "*moto-serialized*", "*fake-gcs *", "*gcs-open-xb-example*",
        "*exec-memory*built-in*dw-store/1 child*", "*exec-file*built-in*dw-store/1*",
    ])
    result.stdout.no_fnmatch_line("*collected*")


def test_an_entry_point_name_runs_its_factory(stores_module: pytest.Pytester) -> None:
    _entry_point_dist(stores_module, "fromep", "dwstores:dict_factory")
    stores_module.makepyfile(test_caps=CAPS_TEST)
    result = stores_module.runpytest("-s", "test_caps.py", "--dw-store=fromep")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*CAPS fromep *"])


def test_pyproject_capabilities_override_the_factory_s(stores_module: pytest.Pytester) -> None:
    _store_mine(stores_module, 'capabilities = {large_values = false, durable_reopen = true}')
    stores_module.makepyfile(test_caps=CAPS_TEST)
    result = stores_module.runpytest("-s", "test_caps.py", "--dw-store=mine")
    expected = ("CAPS mine ['cross_handle', 'distinguishes_conflict', 'durable_reopen', "
                "'put_if_absent']")
    assert expected in result.stdout.str()


def test_a_pyproject_uri_entry_is_opened_by_uri(stores_module: pytest.Pytester) -> None:
    db = stores_module.path / "x.db"
    stores_module.makepyprojecttoml(
        f'[tool.dw-testing.stores.lite]\nuri = "sqlite:///{db}"\n'
    )
    stores_module.makepyfile(test_caps=CAPS_TEST)
    result = stores_module.runpytest("-s", "test_caps.py", "--dw-store=lite")
    result.assert_outcomes(passed=2)
    assert db.exists()


@pytest.mark.parametrize("store, shown", [
    ("dwstores:dict_factory", "dict_factory"),
    ("dwstores:counted_provider", "counted_provider"),
    ("dwstores:spec_object", "spec_object"),
])
def test_import_paths_name_factories_providers_and_specs(
    stores_module: pytest.Pytester, store: str, shown: str
) -> None:
    stores_module.makepyfile(test_caps=CAPS_TEST)
    result = stores_module.runpytest("-s", "-v", "test_caps.py", f"--dw-store={store}")
    result.stdout.fnmatch_lines([f"*test_caps[[]{shown}[]]*CAPS {shown} *"])
    result.assert_outcomes(passed=1, skipped=1)


@pytest.mark.parametrize("workers", [1, 2], ids=["serial", "xdist"])
def test_a_provider_is_entered_once_per_process_and_exited(
    stores_module: pytest.Pytester, workers: int,
) -> None:
    tests = 4 * workers
    stores_module.makepyfile(test_many=f"""
        import pytest

        @pytest.mark.parametrize("n", range({tests}))
        def test_uses_store(dw_store, n):
            dw_store.put("k", b"x")
    """)
    options = ["test_many.py", "--dw-store=dwstores:counted_provider", "-p", "no:cacheprovider"]
    if workers == 1:
        result = stores_module.runpytest(*options)
    else:
        result = stores_module.runpytest_subprocess(*options, "-n", str(workers))
    result.assert_outcomes(passed=tests)
    words = (stores_module.path / "provider.log").read_text().split()
    calls = list(zip(words[0::2], words[1::2], strict=True))
    processes = {pid for _, pid in calls}
    assert 1 <= len(processes) <= workers, calls
    for pid in processes:
        assert [what for what, by in calls if by == pid] == ["enter", "exit"], calls


@pytest.mark.dw_clause("C-CAP-1")
def test_an_unknown_capability_in_pyproject_is_a_usage_error(
    stores_module: pytest.Pytester,
) -> None:
    _store_mine(stores_module, 'capabilities = {cross_proces = true}')
    result = stores_module.runpytest("--dw-store=mine")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*cross_proces*known: cross_handle, cross_process*"])


def test_an_unknown_capability_on_a_factory_is_a_usage_error(
    stores_module: pytest.Pytester,
) -> None:
    result = stores_module.runpytest("--dw-store=dwstores:typo_factory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*teleport*known:*"])


def test_an_unknown_capability_in_dw_requires_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_typo="""
        import pytest

        @pytest.mark.dw_requires("put_if_absnet")
        def test_typo(dw_store):
            pass
    """)
    result = pytester.runpytest("test_typo.py", "--dw-store=memory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*put_if_absnet*known:*put_if_absent*"])


def test_an_unknown_store_name_lists_the_known_ones(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--dw-store=memroy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*unknown store name 'memroy' (close matches: memory*); known names: memory, file,*"])


@pytest.mark.dw_clause("C-CAP-1")
@pytest.mark.parametrize(("store", "told"), [
    ("memory", "*built-in store memory does not have capability cross_process*"),
    ("dwstores:plain_factory",
     "*store plain_factory does not declare capability cross_process; declare it in code: "
     "`factory.capabilities = {'cross_process': True}`*; or name the store in "
     "pyproject.toml, [[]tool.dw-testing.stores.NAME[]] with obj = \"dwstores:plain_factory\"*"
     "--dw-store=NAME*"),
    # dict_factory declares cross_process false on purpose: the skip says so.
    ("dwstores:dict_factory", "*store dict_factory declares capability cross_process false*"),
    ("mine",
     "*store mine does not declare capability cross_process; declare it with "
     "`capabilities = {cross_process = true}` under [[]tool.dw-testing.stores.mine[]]*"),
], ids=["built-in", "import-path", "declared-false", "pyproject-name"])
def test_a_store_without_a_capability_is_told_what_it_lacks_and_how_to_declare_it(
    stores_module: pytest.Pytester, store: str, told: str,
) -> None:
    stores_module.makepyprojecttoml(
        '[tool.dw-testing.stores.mine]\nobj = "dwstores:plain_factory"\n')
    stores_module.makepyfile(test_caps=CAPS_TEST)
    result = stores_module.runpytest("-rs", "test_caps.py", f"--dw-store={store}")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([told])
    # A table named after an import path's factory would be ignored: never suggested.
    assert "tool.dw-testing.stores.plain_factory" not in result.stdout.str()


def test_the_file_store_gives_a_child_process_the_same_prefix(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_child="""
        import subprocess, sys
        import pytest

        @pytest.mark.dw_requires("cross_process")
        def test_child_writes(dw_store, dw_child_target):
            code = (
                "from dw_testing.kit.procs import DwChildTarget; import sys; "
                "DwChildTarget(sys.argv[1], sys.argv[2]).open().put('from-child', b'hi')"
            )
            subprocess.run([sys.executable, "-c", code, dw_child_target.uri,
                            dw_child_target.prefix], check=True)
            assert dw_store.get("from-child") == b"hi"
            assert dw_child_target.prefix.startswith("dwc-")
    """)
    pytester.runpytest("test_child.py", "--dw-store=file").assert_outcomes(passed=1)


def test_a_capability_declared_false_is_skipped_as_declared_not_as_forgotten(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(small_values="""
        from reference_engine.stores.memory import MemoryStore

        def factory():
            return MemoryStore("small")

        factory.capabilities = {"large_values": False}
    """, test_large="""
        import pytest

        @pytest.mark.dw_requires("large_values")
        def test_large(dw_store):
            pass
    """)
    pytester.syspathinsert()
    result = pytester.runpytest("test_large.py", "--dw-store=small_values:factory", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*store factory declares capability large_values false*"])
    assert "does not declare" not in result.stdout.str()
