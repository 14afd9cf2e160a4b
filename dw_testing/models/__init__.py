"""Hypothesis state machines that compare a store under test with a model.

Import one, hand it a store, and subclass it to add rules of your own::

    from dw_testing.models import StoreStateMachine

    TestMyStore = StoreStateMachine.for_store(make_store).TestCase
"""

from dw_testing.models.store_machine import StoreStateMachine
from dw_testing.models.wait_machine import WaitStateMachine

__all__ = ["StoreStateMachine", "WaitStateMachine"]
