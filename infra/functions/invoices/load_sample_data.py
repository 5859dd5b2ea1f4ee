"""Load sample invoices into the deployed invoices table.

Usage (after ``cdk deploy``; the table name is the stack output ``InvoicesTableName``):

    python -m infra.functions.invoices.load_sample_data --table-name <InvoicesTableName> [--region us-east-1]

Due dates are relative to today, so "analyze my overdue invoices" always finds some. Re-running overwrites the
same invoice ids. IAM needed: dynamodb:BatchWriteItem on the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
from decimal import Decimal
from typing import Any

CUSTOMERS = ("acme", "globex", "initech", "umbrella")


def sample_invoices(*, today: dt.date, count: int = 24) -> list[dict[str, Any]]:
    """Deterministic invoices: a third paid, the rest open, due from 60 days ago to 30 days ahead."""
    invoices = []
    for n in range(count):
        due = today + dt.timedelta(days=30 - (n * 90) // count)
        invoices.append(
            {
                "invoice_id": f"INV-{1000 + n}",
                "customer_id": CUSTOMERS[n % len(CUSTOMERS)],
                "amount": Decimal(str(round(250 + n * 137.5, 2))),
                "currency": "USD",
                "issued_date": (due - dt.timedelta(days=30)).isoformat(),
                "due_date": due.isoformat(),
                "status": "paid" if n % 3 == 0 else "open",
            }
        )
    return invoices


def load(table: Any, invoices: list[dict[str, Any]]) -> int:
    """Write ``invoices`` with a batch writer; returns how many were written."""
    with table.batch_writer(overwrite_by_pkeys=["invoice_id"]) as batch:
        for invoice in invoices:
            batch.put_item(Item=invoice)
    return len(invoices)


def main(argv: list[str] | None = None) -> int:
    import boto3

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table-name", required=True)
    parser.add_argument("--region", default=None)
    args = parser.parse_args(argv)
    table = boto3.resource("dynamodb", region_name=args.region).Table(args.table_name)
    written = load(table, sample_invoices(today=dt.datetime.now(dt.UTC).date()))
    print(f"wrote {written} invoices to {args.table_name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
