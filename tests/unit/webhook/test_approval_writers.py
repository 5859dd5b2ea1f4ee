"""Who may answer an approval is always checked: an :class:`Approver` has no default that admits everyone."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.fix import approvals
from webhook.fix.approvals import Approver


def test_an_approver_cannot_be_built_without_a_check_of_who_answers() -> None:
    parts: dict[str, Any] = dict.fromkeys(
        ("invoker", "jobs", "replies", "comments", "trackers", "metrics", "logger")
    )
    with pytest.raises(TypeError, match="writers"):
        Approver(**parts)
    # The old fallback that answered "yes" for every commenter the receiver admitted is gone.
    assert not hasattr(approvals, "AdmittedByReceiver")
