"""The invoice tools Lambda against moto's DynamoDB (real boto3 calls, real GSI query)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.functions.invoices import app
from infra.functions.invoices.load_sample_data import load, sample_invoices

TODAY = dt.date(2026, 3, 15)


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        ddb = boto3.resource("dynamodb", region_name="us-east-1")
        created = ddb.create_table(
            TableName="invoices",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "invoice_id", "KeyType": "HASH"}],
            AttributeDefinitions=[
                {"AttributeName": "invoice_id", "AttributeType": "S"},
                {"AttributeName": "status", "AttributeType": "S"},
                {"AttributeName": "due_date", "AttributeType": "S"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": app.STATUS_INDEX,
                    "KeySchema": [
                        {"AttributeName": "status", "KeyType": "HASH"},
                        {"AttributeName": "due_date", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        assert load(created, sample_invoices(today=TODAY)) == 24
        yield created


def context(tool: str | None) -> Any:
    custom = {app.TOOL_NAME_KEY: f"invoices___{tool}"} if tool else {}
    return SimpleNamespace(
        client_context=SimpleNamespace(custom=custom),
        function_name="invoice-tools",
        memory_limit_in_mb=256,
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:invoice-tools",
        aws_request_id="req-1",
    )


def test_overdue_are_open_and_past_due_oldest_first(table: Any) -> None:
    result = app.dispatch({}, "list_overdue_invoices", table=table, today=TODAY)
    invoices = result["invoices"]
    expected = [
        i for i in sample_invoices(today=TODAY) if i["status"] == "open" and i["due_date"] < TODAY.isoformat()
    ]
    assert result["count"] == len(expected) > 0
    assert {i["invoice_id"] for i in invoices} == {i["invoice_id"] for i in expected}
    assert [i["due_date"] for i in invoices] == sorted(i["due_date"] for i in invoices)
    assert all(i["days_overdue"] > 0 for i in invoices)
    assert result["total_amount"] == pytest.approx(float(sum(i["amount"] for i in expected)))


def test_customer_filter_and_limit(table: Any) -> None:
    acme = app.dispatch({"customer_id": "acme"}, "list_overdue_invoices", table=table, today=TODAY)
    assert acme["count"] > 0 and {i["customer_id"] for i in acme["invoices"]} == {"acme"}
    limited = app.dispatch({"limit": 2}, "list_overdue_invoices", table=table, today=TODAY)
    assert limited["count"] == 2


def test_as_of_in_the_past_finds_fewer(table: Any) -> None:
    now = app.dispatch({}, "list_overdue_invoices", table=table, today=TODAY)
    earlier = app.dispatch({"as_of": "2026-02-01"}, "list_overdue_invoices", table=table, today=TODAY)
    assert earlier["count"] < now["count"]


def test_get_invoice_and_not_found(table: Any) -> None:
    found = app.dispatch({"invoice_id": "INV-1001"}, "get_invoice", table=table, today=TODAY)
    assert found["invoice"]["customer_id"] == "globex"
    assert isinstance(found["invoice"]["amount"], float)
    missing = app.dispatch({"invoice_id": "INV-9"}, "get_invoice", table=table, today=TODAY)
    assert missing["error"]["code"] == "not_found"


def test_bad_arguments_and_unknown_tool(table: Any) -> None:
    bad = app.dispatch({"limit": 0}, "list_overdue_invoices", table=table, today=TODAY)
    assert bad["error"]["code"] == "invalid_arguments" and "limit" in bad["error"]["message"]
    extra = app.dispatch({"invoice_id": "x", "sql": "drop"}, "get_invoice", table=table, today=TODAY)
    assert extra["error"]["code"] == "invalid_arguments"
    unknown = app.dispatch({}, "delete_all", table=table, today=TODAY)
    assert unknown["error"]["code"] == "unknown_tool"


def test_handler_reads_tool_name_from_gateway_context(table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INVOICES_TABLE", "invoices")
    monkeypatch.setattr(app, "_table", None)
    result = app.handler({"invoice_id": "INV-1002"}, context("get_invoice"))
    assert result["invoice"]["invoice_id"] == "INV-1002"
    assert app.handler({}, context(None))["error"]["code"] == "unknown_tool"
