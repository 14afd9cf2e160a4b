"""Each key family parses back what its builder wrote, and nothing else."""

from __future__ import annotations

import pytest

from reference_engine.records import keys


def test_every_family_parses_what_its_builder_wrote() -> None:
    assert keys.parse_revision_key(keys.revision_key("r1", 7)) == ("r1", 7)
    assert keys.parse_claim_key(keys.claim_key("r1", 3)) == ("r1", 3)
    assert keys.parse_ready_key(keys.ready_key("r1", "w1")) == ("r1", "w1")
    assert keys.parse_due_key(keys.due_key("r1", "w1", 90.5)) == (90_500, "r1", "w1")
    assert keys.parse_run_state_key(keys.run_state_key("running", "a b", "r1")) == (
        "running", "a b", "r1")
    assert keys.wait_id_from_key(keys.wait_key("w1")) == "w1"
    assert keys.wait_id_from_key(keys.outcome_key("w1")) == "w1"


def test_numbers_parse_at_their_width_and_not_one_digit_off() -> None:
    run_prefix = keys.revisions_prefix("r1")
    assert keys.parse_revision_key(f"{run_prefix}{'9' * 10}") == ("r1", 9_999_999_999)
    for width in (9, 11):
        assert keys.parse_revision_key(f"{run_prefix}{'1' * width}") is None
    claim = keys.claim_key("r1", 1)
    assert keys.parse_claim_key(claim[:-1]) is None
    assert keys.parse_claim_key(claim + "0") is None
    due = keys.due_key("r1", "w1", 90.5)
    minute, ms = due.split("/")[1:3]
    assert keys.parse_due_key(due.replace(ms, ms[1:])) is None
    assert keys.parse_due_key(due.replace(ms, "0" + ms)) is None
    assert keys.parse_due_key(due.replace(minute, minute[1:])) is None
    assert keys.parse_due_key(due.replace(ms, ms[:-1] + "x")) is None


@pytest.mark.parametrize("key", [
    keys.revision_key("r1", 1) + "/extra",
    keys.revision_key("r1", 1).rsplit("/", 1)[0],
    keys.claim_key("r1", 1).replace("r1", ""),
    keys.ready_key("r1", "w1") + "/extra",
    keys.ready_key("r1", "w1").replace("w1", ""),
    keys.due_key("r1", "w1", 90.0).replace("/w1", ""),
    keys.run_state_key("running", "wf", "r1") + "/extra",
    keys.wait_key("w1") + "/extra",
    keys.wait_key("w1").replace("w1", ""),
])
def test_a_key_with_a_segment_too_many_too_few_or_empty_is_no_key_of_its_family(
    key: str,
) -> None:
    parsers = (keys.parse_revision_key, keys.parse_claim_key, keys.parse_ready_key,
               keys.parse_due_key, keys.parse_run_state_key, keys.wait_id_from_key)
    assert [parse(key) for parse in parsers] == [None] * len(parsers)


def test_a_family_never_parses_another_familys_key() -> None:
    claim = keys.claim_key("r1", 1)
    ready = keys.ready_key("r1", "w1")
    assert keys.parse_ready_key(claim) is None and keys.parse_claim_key(ready) is None
    assert keys.parse_revision_key(keys.revision_key("r1", 1).replace("/rev/", "/ver/")) is None
    assert keys.wait_id_from_key(keys.claims_prefix("w1")) is None
