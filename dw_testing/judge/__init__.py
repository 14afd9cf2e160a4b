"""The judge: every store call of a test recorded, and the test's whole history checked
against the contract's model when the test ends.

Rooms: :mod:`.recording` (the handle wrapper and the test's log), :mod:`.lists` (what the
contract allows of a list that is not a snapshot), :mod:`.blame` and :mod:`.causes` (the
clause of the cause and its fix), :mod:`.trial` (one test's verdict), :mod:`.slot` (the trial
the store's factory hands its handles to), :mod:`.diagnosis` (one text for a red run) and
:mod:`.lasting` (records last until deleted, checked across the session).
"""

from dw_testing.judge.blame import Blame
from dw_testing.judge.recording import JudgedHandle, ListCall, TrialLog, unjudged
from dw_testing.judge.trial import Judgement, Trial

__all__ = ["Blame", "JudgedHandle", "Judgement", "ListCall", "Trial", "TrialLog", "unjudged"]
