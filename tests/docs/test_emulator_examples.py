"""docs/how-to/s3-gcs-emulators.md, run as written: its two providers, on moto and on
fake-gcs-server, each start their emulator, hand out handles that share records, and give a
``uri`` that a fresh process opens with ``open_store``.

The page's ``MyS3Store`` and ``MyGcsStore`` are the built-in S3 and GCS stores behind the
page's constructor signatures (example_project/object_stores.py). The whole suite on these
providers is what ``pytest --dw-store=moto-serialized`` and ``fake-gcs`` already run; here
only the page's own code is checked, in a few seconds per emulator.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "s3-gcs-emulators.md"
EXAMPLE = Path(__file__).resolve().parent / "example_project"
TIMEOUT = 180

# Run in a child so the provider's environment variable and emulator die with it.
PROBE = """
import importlib, subprocess, sys
module_name, provider_name = sys.argv[1], sys.argv[2]
provider = getattr(importlib.import_module(module_name), provider_name)
with provider() as spec:
    first, second = spec.factory(), spec.factory()
    assert first.put_if_absent("docs/k", b"v") is True
    assert second.put_if_absent("docs/k", b"w") is False
    assert second.get("docs/k") == b"v"
    child = ("from reference_engine import open_store; import sys; "
             "sys.stdout.write(open_store(sys.argv[1]).get('docs/k').decode())")
    seen = subprocess.run([sys.executable, "-c", child, spec.uri], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    assert seen == "v", seen
    print(spec.name)
"""


def _page_files() -> dict[str, str]:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    files = {}
    for block in blocks:
        name = re.match(r"# (mystore/\w+\.py)\n", block)
        if name:
            files[name.group(1)] = block
    return files


def _project(tmp_path: Path) -> dict[str, str]:
    package = tmp_path / "mystore"
    package.mkdir()
    (package / "__init__.py").write_text(
        (EXAMPLE / "object_stores.py").read_text(encoding="utf-8"), encoding="utf-8")
    for name, text in _page_files().items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DW_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    return env


def test_the_page_shows_one_provider_per_emulator() -> None:
    assert set(_page_files()) == {"mystore/testing.py", "mystore/gcs_testing.py"}


@pytest.mark.parametrize(("module", "provider", "name", "needs"), [
    ("mystore.testing", "on_moto", "mystore-on-moto", "moto"),
    ("mystore.gcs_testing", "on_fake_gcs", "mystore-on-fake-gcs", "gcsfs"),
])
def test_the_pages_provider_serves_shared_handles_and_a_uri_for_children(
    tmp_path: Path, module: str, provider: str, name: str, needs: str,
) -> None:
    pytest.importorskip(needs, reason=f"pip install 'dw-testing[test]' for {needs}")
    env = _project(tmp_path)
    done = subprocess.run([sys.executable, "-c", PROBE, module, provider], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == name
