"""Hypothesis effort profiles ``dw-quick``, ``dw-ci`` and ``dw-thorough``.

They are registered under ``dw-`` names and never loaded globally: the plugin applies the
active one per test (``settings(profile)`` on ``@given`` tests that set no settings of their
own), so a user's own Hypothesis profile keeps governing everything else. Suite authors who
need their own settings write ``@dw_settings(max_examples=...)``, which keeps the active
profile as the parent.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import seed as hypothesis_seed

PROFILE_NAMES = ("quick", "ci", "thorough")
DEFAULT_PROFILE = "ci"
T = TypeVar("T")

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture]
# database=None: a conformance run must leave no .hypothesis/ directory in the user's tree.
# print_blob=False: the blob encodes every drawn byte, a record's value included (a 1 MiB
# value prints as a long base64 payload); --dw-seed replays the run instead.
_PROFILES: dict[str, dict[str, Any]] = {
    "quick": {"max_examples": 10, "stateful_step_count": 10},
    "ci": {"max_examples": 50, "stateful_step_count": 25},
    "thorough": {"max_examples": 500, "stateful_step_count": 60},
}

_active: dict[str, Any] = {"profile": DEFAULT_PROFILE, "seed": None}


def profile_key(name: str) -> str:
    return f"dw-{name}"


def register() -> None:
    """Register the three profiles (idempotent); the current profile is left alone."""
    for name, values in _PROFILES.items():
        settings.register_profile(
            profile_key(name), deadline=None, database=None, print_blob=False,
            suppress_health_check=_SLOW_OK, **values,
        )


def activate(profile: str, seed: int | None) -> None:
    """Remember the run's profile and seed for ``active_settings`` and ``apply``."""
    if profile not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_NAMES)}")
    register()
    _active["profile"] = profile
    _active["seed"] = seed


def active_profile() -> str:
    return str(_active["profile"])


def session_seed() -> int | None:
    seed: int | None = _active["seed"]
    return seed


def active_settings(**overrides: Any) -> settings:
    """The active dw profile, with ``overrides`` on top (for ``run_state_machine_as_test``)."""
    register()
    parent = settings.get_profile(profile_key(active_profile()))
    return settings(parent, **overrides) if overrides else parent


def dw_settings(**overrides: Any) -> settings:
    """``@dw_settings(max_examples=20)``: like ``@settings`` but inheriting the dw profile."""
    return active_settings(**overrides)


def apply(test: T) -> T:
    """Put the active profile (and the seed, if any) on a ``@given`` test at collection."""
    if not getattr(test, "is_hypothesis_test", False):
        return test
    if not hasattr(test, "_hypothesis_internal_settings_applied"):
        test = active_settings()(test)
    seed = session_seed()
    if seed is not None and getattr(test, "_hypothesis_internal_use_seed", None) is None:
        test = hypothesis_seed(seed)(test)  # type: ignore[type-var]
    return test


def seeded(factory: Callable[[], T]) -> Callable[[], T]:
    """Seed a state-machine factory for ``run_state_machine_as_test`` when a seed is set."""
    seed = session_seed()
    if seed is not None:
        factory = hypothesis_seed(seed)(factory)
    return factory


def rng(label: str) -> random.Random:
    """A ``random.Random`` fixed by the session seed and ``label`` (random if no seed)."""
    seed = session_seed()
    return random.Random() if seed is None else random.Random(f"{seed}:{label}")
