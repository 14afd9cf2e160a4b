"""docs/how-to/test-a-store-on-a-server.md, run as written: a provider that starts a server,
and a URI scheme the package registers, so the suite's child processes open their own handles.

The guide's code blocks are read from the page itself. A small HTTP key-value server stands
in for ``myserver`` (example_project/myserver.py) and example_project/mystore_client.py is
``MyStore``; the package is "installed" as a dist-info directory on PYTHONPATH, which is all
entry points need.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "how-to" / "test-a-store-on-a-server.md"
EXAMPLE = Path(__file__).resolve().parent / "example_project"
SUITE_TIMEOUT = 600


def _page() -> str:
    return GUIDE.read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _page(), flags=re.S)


def _install_example(site: Path) -> None:
    """mystore (MyStore + the guide's open_uri), mystore.testing (the guide's provider) and
    the dist-info holding the guide's entry point."""
    provider, opener = _blocks("python")
    package = site / "mystore"
    package.mkdir(parents=True)
    client = (EXAMPLE / "mystore_client.py").read_text(encoding="utf-8")
    (package / "__init__.py").write_text(client + "\n\n" + opener, encoding="utf-8")
    (package / "testing.py").write_text(provider, encoding="utf-8")
    table = tomllib.loads(_blocks("toml")[0])["project"]["entry-points"]
    lines = [f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in eps.items())
             for group, eps in table.items()]
    dist = site / "mystore-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mystore\nVersion: 0.1\n",
                                   encoding="utf-8")
    (dist / "entry_points.txt").write_text("\n".join(lines), encoding="utf-8")


def _myserver_on_path(bin_dir: Path) -> None:
    bin_dir.mkdir()
    script = bin_dir / "myserver"
    script.write_text(f"#!{sys.executable}\n" + (EXAMPLE / "myserver.py").read_text(
        encoding="utf-8"), encoding="utf-8")
    script.chmod(0o755)


@pytest.fixture
def example_env(tmp_path: Path) -> dict[str, str]:
    _install_example(tmp_path / "site")
    _myserver_on_path(tmp_path / "bin")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), str(ROOT)])
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def test_the_guide_registers_the_scheme_it_uses() -> None:
    provider = _blocks("python")[0]
    uri = re.search(r'uri = f"(\w+)://', provider)
    assert uri is not None, "the provider no longer builds a uri"
    table = tomllib.loads(_blocks("toml")[0])["project"]["entry-points"]
    assert uri.group(1) in table["dw_testing.schemes"]


@pytest.mark.dw_clause("C-CHILD-1")
def test_the_guides_provider_runs_the_suite_with_child_processes_on_its_scheme(
    example_env: dict[str, str], tmp_path: Path,
) -> None:
    command = next(line for block in _blocks("bash") for line in block.splitlines()
                   if line.startswith("pytest --dw-store="))
    report = tmp_path / "report.json"
    project = tmp_path / "project"
    project.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", *shlex.split(command), "-p", "no:cacheprovider", "-q",
         "-m", "dw_store_contract", "--dw-profile=quick", f"--dw-report={report}"],
        cwd=project, env=example_env, capture_output=True, text=True, timeout=SUITE_TIMEOUT,
        check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    capabilities = json.loads(report.read_text(encoding="utf-8"))["capabilities"]
    assert capabilities["cross_process"]["outcome"] == "PASS", capabilities
    assert capabilities["put_if_absent"]["outcome"] == "PASS", capabilities


def test_dw_opens_the_registered_scheme_in_its_own_process(
    example_env: dict[str, str], tmp_path: Path,
) -> None:
    provider_runs = (
        "import contextlib, json, subprocess, sys\n"
        "from mystore.testing import myserver_provider\n"
        "with myserver_provider() as spec:\n"
        "    put = [sys.executable, '-m', 'reference_engine', 'store', 'put', '--store',"
        " spec.uri, 'k', '--data', 'v']\n"
        "    get = [sys.executable, '-m', 'reference_engine', 'store', 'cat', '--store',"
        " spec.uri, 'k']\n"
        "    subprocess.run(put, check=True, capture_output=True)\n"
        "    print(subprocess.run(get, check=True, capture_output=True, text=True).stdout)\n"
    )
    done = subprocess.run([sys.executable, "-c", provider_runs], cwd=tmp_path, env=example_env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "v"
