"""What every reply the Lambdas post carries, so the bot recognises its own text wherever it shows up again:
the markers, the visible footer (session, cost) and the check the loop guard uses.
"""

from __future__ import annotations

#: Hidden marker the GitHub and GitLab replies end with.
AGENT_REPLY_MARKER = "<!-- agentkit:reply -->"
#: The start of the last line of every Jira reply.
JIRA_REPLY_MARKER = "agentkit reply ·"
#: The visible footer of the GitHub and GitLab replies (``agentkit · session …``).
FOOTER_MARKER = "agentkit · session "
#: Every adapter ignores text carrying any of these: a sync integration that copies a reply from one
#: tracker to another (Jira ↔ GitHub, say) must not make the agent answer itself across trackers.
REPLY_MARKERS = (AGENT_REPLY_MARKER, JIRA_REPLY_MARKER, FOOTER_MARKER)


def reply_footer(session_id: str, *parts: str) -> str:
    """The visible footer of every reply the Lambdas post: :data:`FOOTER_MARKER` (which the loop guard looks
    for), the start of the runtime session id, then ``parts`` (``"fix job"``, ``"cost $0.0100"``, ...)."""
    return " · ".join([f"{FOOTER_MARKER}{session_id[:15]}…", *parts])


def cost_text(cost_usd: float | None) -> str:
    """A cost as replies show it: ``$0.0412``, or ``n/a`` when unknown."""
    return f"${cost_usd:.4f}" if cost_usd is not None else "n/a"


def is_agent_reply(text: str) -> bool:
    """Does ``text`` carry the reply marker or footer of any tracker's agent reply?"""
    return any(marker in text for marker in REPLY_MARKERS)
