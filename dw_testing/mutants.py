"""Public home of the store mutants: ``--dw-store=dw_testing.mutants:<name>``.

The mutants live in :mod:`dw_testing.selftest.mutants`; this module keeps the short
reference that docs, reports and users' command lines use.
"""

from dw_testing.selftest.mutants import *  # noqa: F403
from dw_testing.selftest.mutants import __all__  # noqa: F401
