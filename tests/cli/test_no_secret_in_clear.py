"""No secret in clear, anywhere: planted secrets are refused where they enter (inputs,
``--submitted-by``, payloads) or redacted where a step produced them (``log:`` text,
``shell:`` output), and a grep of every byte each built-in store holds and every line
``dw`` printed finds none of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Invoke, refusal_of

from reference_engine.stores.registry import open_store

AWS_KEY = "AKIA" + "QWERTYUIOPASDFGH"
GH_TOKEN = "ghp_" + "Zx9" * 12
CREDENTIAL = "s3cr3t-value-xyz"
PLANTED = (AWS_KEY, GH_TOKEN, CREDENTIAL)

# The workflow text holds none of the planted values: the shell step assembles them, so
# only a step's output can carry them into the store.
LEAKY = r"""
name: leaky
inputs:
  note: "hello"
  api_token: ""
jobs:
  make:
    steps:
      - name: key
        shell: >-
          printf 'AKIA%s\n' QWERTYUIOPASDFGH;
          printf 'gh%s_%s\n' p $(printf 'Zx9%.0s' 1 2 3 4 5 6 7 8 9 10 11 12)
      - name: say
        log: "made ${{ steps.key.outputs.output }}"
  approve:
    depends_on: [make]
    steps:
      - name: approval
        wait_for_signal:
          timeout: 3600
          schema: {type: object}
"""


def _store_bytes(kind: str, uri: str, root: Path) -> bytes:
    if kind == "memory":
        store = open_store(uri)
        return b"\n".join(key.encode() + b"=" + (store.get(key) or b"")
                          for key in store.list(""))
    return b"\n".join(path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file())


@pytest.mark.parametrize("kind", ["memory", "file", "sqlite"])
def test_planted_secrets_reach_no_store_file_and_no_printed_line(
    invoke: Invoke, tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "store"
    uri = {"memory": f"memory://leaky-{tmp_path.name}", "file": f"file://{root}",
           "sqlite": f"sqlite://{root}/dw.db"}[kind]
    flow = tmp_path / "leaky.yaml"
    flow.write_text(LEAKY)
    printed: list[str] = []

    def dw(*args: str) -> object:
        result = invoke([*args, "--store", uri])
        printed.append(result.stdout + result.stderr)
        return result

    # Refused where they enter: nothing is written.
    for given in (f"note={GH_TOKEN}", f"api_token={CREDENTIAL}", f"note={AWS_KEY}"):
        refused = invoke(["run", str(flow), "--input", given, "--store", uri, "--json"])
        printed.append(refused.stdout + refused.stderr)
        assert refusal_of(refused) == "secret_detected"
    # Produced by steps: redacted in the output, the log line and the store.
    suspended = invoke(["run", str(flow), "--store", uri, "--json"])
    printed.append(suspended.stdout + suspended.stderr)
    assert suspended.exit_code == 3, suspended.output
    view = json.loads(suspended.stdout)
    run_id, wait_id = view["runId"], view["waits"][0]["waitId"]
    for submitter in (GH_TOKEN, AWS_KEY):
        refused = invoke(["signal", wait_id, "--payload", "{}", "--submitted-by", submitter,
                          "--store", uri, "--json"])
        printed.append(refused.stdout + refused.stderr)
        assert refusal_of(refused) == "invalid_submitter"
    leaking = json.dumps({"note": f"use {GH_TOKEN}"})
    refused = invoke(["signal", wait_id, "--payload", leaking, "--store", uri, "--json"])
    printed.append(refused.stdout + refused.stderr)
    assert refusal_of(refused) == "secret_detected"
    dw("signal", wait_id, "--payload", "{}", "--submitted-by", "alice", "--json")
    dw("resume", run_id)
    shown = invoke(["show", run_id, "--store", uri, "--json"])
    printed.append(shown.stdout + shown.stderr)
    record = json.loads(shown.stdout)
    assert record["status"] == "succeeded"
    output = record["steps"]["key"]["output"]["output"]
    assert output.splitlines() == ["[redacted:aws_access_key_id]", "[redacted:github_token]"]
    assert "[redacted:aws_access_key_id]" in record["steps"]["say"]["output"]["message"]
    dw("show", run_id)
    dw("runs")
    dw("waits")
    everything = "\n".join(printed).encode() + _store_bytes(kind, uri, root)
    for value in PLANTED:
        assert value.encode() not in everything, f"a planted secret is in clear ({kind})"
    assert b"redacted:" in everything  # the grep looked at the right bytes
