"""When a race test fails on an emulator known to race, the failure says so.

moto's S3 ``PutObject`` (``IfNoneMatch``) and DynamoDB ``PutItem`` (``ConditionExpression``)
check and write with no lock between, so two creates of one key can both win on the plain
server, and the store is blamed for it. A provider that ran the probes names what they
showed in ``StoreSpec.emulator_bugs``; a store author's own provider that started moto in
the test process (``ThreadedMotoServer``) is recognised by moto being imported here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

# Probe name (dw_testing.emulators.probes) -> what races on that emulator.
RACING_EMULATOR_BUGS = {
    "moto-put-race": "moto's S3 PutObject checks If-None-Match and writes with no lock between",
    "moto-dynamodb-race": ("moto's DynamoDB PutItem checks its ConditionExpression and writes "
                           "with no lock between"),
}
# Clauses of the tests that two creates both winning would fail.
CREATE_CLAUSES = frozenset({"C-CREATE-2", "C-CREATE-3", "C-CREATE-4"})
FIX = ("serve the emulator with dw_testing.emulators.moto.serve_moto('serialized', service), "
       "which answers one request at a time (docs/how-to/s3-gcs-emulators.md)")


def race_hint(emulator_bugs: Iterable[str], clauses: Iterable[str], *,
              engine_level: bool) -> str | None:
    """A hint for a failed test, or ``None`` when no racing emulator can explain it."""
    shown = [RACING_EMULATOR_BUGS[name] for name in sorted(emulator_bugs)
             if name in RACING_EMULATOR_BUGS]
    if shown:
        return (f"this store's emulator showed a known race when its provider probed it: "
                f"{'; '.join(shown)}, so two creates of one key can both win whatever the "
                f"store does; {FIX}")
    races = engine_level or bool(CREATE_CLAUSES & set(clauses))
    if races and "moto" in sys.modules:
        return ("moto is loaded in this test process: if this store runs on a moto server "
                f"started without a lock, {RACING_EMULATOR_BUGS['moto-put-race']} (and its "
                "DynamoDB PutItem its ConditionExpression), so two creates can both win; "
                f"{FIX}")
    return None
