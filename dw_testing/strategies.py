"""Public home of the suite's Hypothesis strategies: keys, list prefixes and values drawn
from the whole space the contract allows (they live in :mod:`dw_testing.models.strategies`)."""

from dw_testing.models.strategies import *  # noqa: F403
from dw_testing.models.strategies import __all__  # noqa: F401
