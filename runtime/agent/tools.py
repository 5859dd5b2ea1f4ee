"""In-process sample tools (an SDK MCP server named ``kit``).

``list_overdue_invoices`` answers "analyze my overdue invoices" from bundled sample data, so the demo and the
tests have a real tool call without AWS. In a deployed stack the same question is answered by the Gateway's
DynamoDB-backed invoice tool (:mod:`runtime.agent.gateway_tools`).
"""

from __future__ import annotations

import datetime as dt
import json
from importlib import resources
from typing import Any

SERVER_NAME = "kit"


def load_sample_invoices() -> list[dict[str, Any]]:
    return json.loads(resources.files("runtime.agent.data").joinpath("sample_invoices.json").read_text())


def overdue_invoices(invoices: list[dict[str, Any]], as_of: dt.date) -> dict[str, Any]:
    """Unpaid invoices due before ``as_of``, oldest first, with totals."""
    overdue = [
        {**inv, "days_overdue": (as_of - dt.date.fromisoformat(inv["due_date"])).days}
        for inv in invoices
        if inv["status"] != "paid" and dt.date.fromisoformat(inv["due_date"]) < as_of
    ]
    overdue.sort(key=lambda inv: inv["due_date"])
    return {
        "as_of": as_of.isoformat(),
        "count": len(overdue),
        "total_usd": round(sum(inv["amount_usd"] for inv in overdue), 2),
        "invoices": overdue,
    }


def build_sample_server(*, today: dt.date | None = None) -> Any:
    """The ``kit`` SDK MCP server config (imports the SDK lazily)."""
    from claude_agent_sdk import create_sdk_mcp_server, tool

    @tool(
        "list_overdue_invoices",
        "List unpaid invoices whose due date has passed, oldest first, with the total amount overdue.",
        {
            "type": "object",
            "properties": {"as_of": {"type": "string", "description": "ISO date, default today"}},
        },
    )
    async def list_overdue_invoices(args: dict[str, Any]) -> dict[str, Any]:
        try:
            as_of = dt.date.fromisoformat(args["as_of"]) if args.get("as_of") else (today or dt.date.today())
        except ValueError:
            return {
                "content": [{"type": "text", "text": "as_of must be an ISO date like 2026-11-22"}],
                "is_error": True,
            }
        report = overdue_invoices(load_sample_invoices(), as_of)
        return {"content": [{"type": "text", "text": json.dumps(report)}]}

    return create_sdk_mcp_server(SERVER_NAME, tools=[list_overdue_invoices])
