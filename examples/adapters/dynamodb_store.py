"""A ControlPlaneStore over DynamoDB, and providers that run it on a moto server.

Written from docs/how-to/test-your-store.md as a store author would, and run by the slow lane
(``pytest -m slow tests/slow/test_real_servers.py``). Try it yourself::

    pip install 'dw-testing[test]'
    cd examples/adapters && pytest --dw-suite-only --dw-store=dynamodb_store:dynamodb_server

One table, partition key ``ns`` (always ``"dw"`` here) and sort key ``key``, the store's key
as it is. ``put_if_absent`` is a ``PutItem`` with ``attribute_not_exists(#k)``; ``list`` is a
strongly consistent ``Query`` with ``begins_with`` on the sort key, following
``LastEvaluatedKey`` through every page. DynamoDB orders sort keys by their UTF-8 bytes,
which is code-point order, so the keys come back sorted. Values are binary attributes; an
item is capped at 400 KB, so the store declares ``large_values = false``.

``dynamodb_server`` serves DynamoDB on moto behind one lock (``serve_moto("serialized",
"dynamodb")``). ``dynamodb_on_raw_moto`` serves it on plain moto, whose ``PutItem`` checks its
condition and writes with no lock between: the suite catches two creates both winning, and
the provider's probe says so (``emulator_bugs``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from dw_testing import NetworkRoute, StoreSpec
from dw_testing.emulators.moto import FAKE_CREDENTIALS, REGION, serve_moto
from dw_testing.emulators.probes import shown
from reference_engine.errors import StoreUnavailable, TransientStoreError
from reference_engine.stores.keys import validate_key, validate_prefix

# A child process (the suite's cross-process tests, `dw` commands) opens its own handle
# with `open_store("dynamodb_store:factory")`, which finds the server here.
ENDPOINT_VARIABLE = "DW_EXAMPLE_DYNAMODB_URL"
TABLE = "dw-control-plane"
NAMESPACE = "dw"
_BUSY = {"ProvisionedThroughputExceededException", "ThrottlingException",
         "RequestLimitExceeded", "InternalServerError", "ServiceUnavailable",
         "TransactionConflictException"}
T = TypeVar("T")


class DynamoDbStore:
    def __init__(self, endpoint: str, table: str = TABLE) -> None:
        self._client = boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name=REGION,
            config=Config(retries={"max_attempts": 5, "mode": "standard"},
                          connect_timeout=10, read_timeout=20),
            **FAKE_CREDENTIALS)
        self._table = table

    def _call(self, op: str, key: str, run: Callable[[], T]) -> T:
        try:
            return run()
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _BUSY:
                raise TransientStoreError(f"{op} {key!r}: DynamoDB is busy ({code}); retry",
                                          op=op, key=key) from None
            raise StoreUnavailable(f"{op} {key!r}: DynamoDB refused it ({code})", op=op,
                                   key=key) from None
        except BotoCoreError as exc:
            raise TransientStoreError(f"{op} {key!r}: no answer from DynamoDB "
                                      f"({type(exc).__name__}); retry", op=op, key=key) from None

    def _item_key(self, key: str) -> dict[str, Any]:
        return {"ns": {"S": NAMESPACE}, "key": {"S": key}}

    def put(self, key: str, data: bytes) -> None:
        item = {**self._item_key(validate_key(key, op="put")), "value": {"B": bytes(data)}}
        self._call("put", key, lambda: self._client.put_item(TableName=self._table, Item=item))

    def put_if_absent(self, key: str, data: bytes) -> bool:
        item = {**self._item_key(validate_key(key, op="put_if_absent")),
                "value": {"B": bytes(data)}}

        def create() -> bool:
            try:
                self._client.put_item(TableName=self._table, Item=item,
                                      ConditionExpression="attribute_not_exists(#k)",
                                      ExpressionAttributeNames={"#k": "key"})
            except self._client.exceptions.ConditionalCheckFailedException:
                return False
            return True

        return self._call("put_if_absent", key, create)

    def get(self, key: str) -> bytes | None:
        found = self._call("get", key, lambda: self._client.get_item(
            TableName=self._table, Key=self._item_key(validate_key(key, op="get")),
            ConsistentRead=True))
        item = found.get("Item")
        return None if item is None else bytes(item["value"]["B"])

    def delete(self, key: str) -> None:
        self._call("delete", key, lambda: self._client.delete_item(
            TableName=self._table, Key=self._item_key(validate_key(key, op="delete"))))

    def list(self, prefix: str) -> list[str]:
        base = validate_prefix(prefix)

        def query() -> list[str]:
            keys: list[str] = []
            condition = "ns = :ns"
            values: dict[str, Any] = {":ns": {"S": NAMESPACE}}
            if base:
                condition += " AND begins_with(#k, :under)"
                values[":under"] = {"S": base + "/"}
            page: dict[str, Any] = {}
            names = {"ExpressionAttributeNames": {"#k": "key"}} if base else {}
            while True:
                answer = self._client.query(
                    TableName=self._table, KeyConditionExpression=condition,
                    ExpressionAttributeValues=values, ConsistentRead=True, **names, **page)
                keys += [item["key"]["S"] for item in answer.get("Items", [])]
                if "LastEvaluatedKey" not in answer:
                    return keys
                page = {"ExclusiveStartKey": answer["LastEvaluatedKey"]}

        return self._call("list", prefix, query)

    def close(self) -> None:
        self._client.close()


def factory() -> DynamoDbStore:
    """A new handle on the server the provider started (its URL is in the environment)."""
    endpoint = os.environ.get(ENDPOINT_VARIABLE)
    if not endpoint:
        raise StoreUnavailable(f"{ENDPOINT_VARIABLE} is not set: run under pytest "
                               "--dw-store=dynamodb_store:dynamodb_server", op="open")
    return DynamoDbStore(endpoint)


def _create_table(endpoint: str) -> None:
    client = boto3.client("dynamodb", endpoint_url=endpoint, region_name=REGION,
                          **FAKE_CREDENTIALS)
    client.create_table(
        TableName=TABLE, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "ns", "KeyType": "HASH"},
                   {"AttributeName": "key", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "ns", "AttributeType": "S"},
                              {"AttributeName": "key", "AttributeType": "S"}])
    client.close()


@contextlib.contextmanager
def _on_moto(mode: str, name: str) -> Iterator[StoreSpec]:
    with serve_moto(mode, "dynamodb") as endpoint, pytest.MonkeyPatch.context() as env:
        _create_table(endpoint)
        env.setenv(ENDPOINT_VARIABLE, endpoint)  # restored when the session ends
        yield StoreSpec(factory=factory, uri="dynamodb_store:factory", name=name,
                        capabilities={"cross_process": True, "durable_reopen": True,
                                      "segment_prefixes": True, "sorted_list": True,
                                      "large_values": False},
                        network=NetworkRoute(endpoint, DynamoDbStore),
                        emulator_bugs=shown(endpoint, ["moto-dynamodb-race"]))


def dynamodb_server() -> contextlib.AbstractContextManager[StoreSpec]:
    """DynamoDB on moto, one request at a time: conditional writes are atomic."""
    return _on_moto("serialized", "dynamodb")


def dynamodb_on_raw_moto() -> contextlib.AbstractContextManager[StoreSpec]:
    """DynamoDB on plain moto, gated so that two racing creates both pass the condition."""
    return _on_moto("gated", "dynamodb-raw")
