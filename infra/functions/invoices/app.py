"""Invoice tools for the AgentCore Gateway (Lambda target), over one DynamoDB table.

The gateway invokes the function with the tool's arguments as the event and names the tool in
``context.client_context.custom["bedrockAgentCoreToolName"]`` as ``<target>___<tool>``.

Tools:
    list_overdue_invoices(customer_id?: str, as_of?: YYYY-MM-DD, limit?: int) -> open invoices past due
    get_invoice(invoice_id: str) -> one invoice

Table layout: partition key ``invoice_id``; GSI ``by_status`` (``status`` + ``due_date``) answers
"open and due before X" with one Query.

Env vars:
    INVOICES_TABLE (required): table name.
    POWERTOOLS_SERVICE_NAME, POWERTOOLS_LOG_LEVEL: Powertools logger settings.

IAM actions needed: dynamodb:GetItem on the table, dynamodb:Query on the table's ``by_status`` index.

Errors are returned as ``{"error": {"code", "message"}}`` so the model can read them; they never raise.
"""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from typing import Any

import boto3
from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.conditions import Attr, Key
from pydantic import BaseModel, ConfigDict, Field, ValidationError

logger = Logger(service="invoice-tools")
STATUS_INDEX = "by_status"
TOOL_NAME_KEY = "bedrockAgentCoreToolName"
TOOL_SEPARATOR = "___"


class OverdueQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    customer_id: str | None = Field(default=None, min_length=1, max_length=64)
    as_of: dt.date | None = None
    limit: int = Field(default=50, ge=1, le=200)


class InvoiceQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    invoice_id: str = Field(min_length=1, max_length=64)


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def list_overdue_invoices(table: Any, args: OverdueQuery, *, today: dt.date) -> dict[str, Any]:
    """Open invoices whose due date is before ``as_of`` (default today), oldest first, with days overdue."""
    as_of = args.as_of or today
    condition = Key("status").eq("open") & Key("due_date").lt(as_of.isoformat())
    query: dict[str, Any] = {"IndexName": STATUS_INDEX, "KeyConditionExpression": condition}
    if args.customer_id:
        query["FilterExpression"] = Attr("customer_id").eq(args.customer_id)
    items: list[dict[str, Any]] = []
    while True:
        page = table.query(**query)
        items.extend(page.get("Items", []))
        if len(items) >= args.limit or "LastEvaluatedKey" not in page:
            break
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    invoices = []
    for item in sorted(items, key=lambda i: i["due_date"])[: args.limit]:
        invoice = _plain(item)
        invoice["days_overdue"] = (as_of - dt.date.fromisoformat(invoice["due_date"])).days
        invoices.append(invoice)
    total = sum(Decimal(str(i["amount"])) for i in invoices)
    return {
        "as_of": as_of.isoformat(),
        "count": len(invoices),
        "total_amount": float(total),
        "invoices": invoices,
    }


def get_invoice(table: Any, args: InvoiceQuery) -> dict[str, Any]:
    item = table.get_item(Key={"invoice_id": args.invoice_id}).get("Item")
    if item is None:
        return _error("not_found", f"no invoice {args.invoice_id!r}")
    return {"invoice": _plain(item)}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def tool_name_from(context: Any) -> str | None:
    """The bare tool name from the gateway's client context (``target___tool`` -> ``tool``)."""
    client_context = getattr(context, "client_context", None)
    custom = getattr(client_context, "custom", None) or {}
    full = custom.get(TOOL_NAME_KEY)
    if not full:
        return None
    return str(full).split(TOOL_SEPARATOR, 1)[-1]


def dispatch(event: dict[str, Any], tool: str | None, *, table: Any, today: dt.date) -> dict[str, Any]:
    """Run ``tool`` with ``event`` as its arguments against ``table``."""
    try:
        if tool == "list_overdue_invoices":
            return list_overdue_invoices(table, OverdueQuery.model_validate(event or {}), today=today)
        if tool == "get_invoice":
            return get_invoice(table, InvoiceQuery.model_validate(event or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        return _error("invalid_arguments", f"{where}: {first['msg']}")
    return _error("unknown_tool", f"unknown tool {tool!r}; known: list_overdue_invoices, get_invoice")


_table: Any = None


def _default_table() -> Any:
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["INVOICES_TABLE"])
    return _table


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    tool = tool_name_from(context)
    logger.info("tool call", extra={"tool": tool})
    return dispatch(event, tool, table=_default_table(), today=dt.datetime.now(dt.UTC).date())
