"""Stored agent replies: a paid turn runs once per task, even when posting its answer fails.

The worker stores the finished comment (and the turn's cost/turns) under the task's idempotency key
*before* posting it. A redelivered SQS record then finds the stored reply and only posts it again
(status ``answered``), or does nothing once it was posted (``posted``) or possibly posted
(``unconfirmed``: GitHub never answered the POST).

Before the turn runs, the worker *claims* the key with a conditional write (status ``running``,
``attribute_not_exists(id)``): of two concurrent deliveries of the same task (SQS delivers at least
once) only one invokes the agent; the other sees the claim and is retried later, when the reply is
stored. A claim is released (status ``released``, claimable again) when the invocation failed before
any turn ran.

Items live in the receiver's idempotency table (partition key ``id``, TTL attribute ``expiration``)
under ``id = "reply#<key>"``, which never collides with Powertools' ``<function>#<hash>`` records.
Attributes: ``status``, ``comment`` (the exact text posted), ``cost_usd``, ``num_turns``,
``error_code``, ``request_id``, ``session_id``, ``delivery_id``, ``comment_url``, ``stored_at``,
``expiration`` (epoch seconds). A reply is at most ~65 KB of text (GitHub's comment limit), well under
DynamoDB's 400 KB item limit.

IAM: ``dynamodb:GetItem``, ``dynamodb:PutItem``, ``dynamodb:UpdateItem`` on the table (the construct
narrows them to ``reply#*`` keys with ``dynamodb:LeadingKeys``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from botocore.exceptions import BotoCoreError, ClientError

from webhook.settings import DEFAULT_REPLY_TTL_SECONDS

KEY_PREFIX = "reply#"
ReplyStatus = Literal["running", "released", "answered", "posted", "unconfirmed"]
RUNNING: Final = "running"
RELEASED: Final = "released"
ANSWERED: Final = "answered"
POSTED: Final = "posted"
UNCONFIRMED: Final = "unconfirmed"


class ReplyStoreError(Exception):
    """DynamoDB could not be read or written (the message names the operation and the cause)."""


@dataclass(frozen=True)
class StoredReply:
    """One finished turn: the comment to post and the result fields reported with it."""

    comment: str
    session_id: str
    delivery_id: str = ""
    cost_usd: float | None = None
    num_turns: int | None = None
    error_code: str | None = None
    request_id: str | None = None
    status: ReplyStatus = ANSWERED
    comment_url: str = ""
    #: Epoch seconds the item was written (for a ``running`` claim: when the turn started).
    stored_at: int = 0


def _opt_n(value: float | int | None) -> dict[str, str] | None:
    return {"N": repr(value)} if value is not None else None


def _opt_s(value: str | None) -> dict[str, str] | None:
    return {"S": value} if value else None


class ReplyTable:
    """The reply table on an injected low-level ``dynamodb`` client: what :class:`ReplyStore` and the fix jobs'
    store (:mod:`fix_jobs`) share — the table, the items' TTL, the clock, and conditional writes."""

    def __init__(
        self,
        *,
        client: Any,
        table_name: str,
        ttl_seconds: int = DEFAULT_REPLY_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Raises ``ValueError`` on an empty table name or a non-positive TTL."""
        if not table_name:
            raise ValueError("table_name is required")
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be > 0")
        self._client = client
        self.table_name = table_name
        self.ttl_seconds = ttl_seconds
        self._clock = clock

    def _conditional(self, what: str, write: Callable[[], object]) -> bool:
        """Run ``write`` (one PutItem/UpdateItem with a ``ConditionExpression``); ``False`` when the condition
        failed. Raises :class:`ReplyStoreError` (naming ``what``) on any other failure."""
        try:
            write()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise ReplyStoreError(f"{what} on {self.table_name} failed: {exc}") from exc
        except BotoCoreError as exc:
            raise ReplyStoreError(f"{what} on {self.table_name} failed: {exc}") from exc
        return True


class ReplyStore(ReplyTable):
    """Reads and writes stored replies on an injected low-level ``dynamodb`` client."""

    @staticmethod
    def item_id(key: str) -> str:
        if not key:
            raise ValueError("an idempotency key is required")
        return KEY_PREFIX + key

    def get(self, key: str) -> StoredReply | None:
        """The stored reply for ``key`` (strongly consistent read), or ``None``.

        Raises:
            ReplyStoreError: DynamoDB failed or the item is malformed.
        """
        try:
            out = self._client.get_item(
                TableName=self.table_name, Key={"id": {"S": self.item_id(key)}}, ConsistentRead=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"GetItem on {self.table_name} failed: {exc}") from exc
        item = out.get("Item")
        if not item:
            return None
        try:
            status = item["status"]["S"]
            if status not in (RUNNING, RELEASED, ANSWERED, POSTED, UNCONFIRMED):
                raise ValueError(f"unknown status {status!r}")
            stored_at = int(item.get("stored_at", {}).get("N", "0"))
            if status == RELEASED:
                return None
            if status == RUNNING:
                return StoredReply(comment="", session_id="", status=RUNNING, stored_at=stored_at)
            return StoredReply(
                comment=item["comment"]["S"],
                session_id=item.get("session_id", {}).get("S", ""),
                delivery_id=item.get("delivery_id", {}).get("S", ""),
                cost_usd=float(item["cost_usd"]["N"]) if "cost_usd" in item else None,
                num_turns=int(item["num_turns"]["N"]) if "num_turns" in item else None,
                error_code=item.get("error_code", {}).get("S"),
                request_id=item.get("request_id", {}).get("S"),
                status=status,  # type: ignore[arg-type]
                comment_url=item.get("comment_url", {}).get("S", ""),
                stored_at=stored_at,
            )
        except (KeyError, ValueError) as exc:
            raise ReplyStoreError(f"stored reply {self.item_id(key)!r} is malformed: {exc}") from exc

    def claim(self, key: str) -> bool:
        """Claim ``key`` for one turn (status ``running``); ``False`` when another claim or a reply exists.

        Raises:
            ReplyStoreError: DynamoDB failed.
        """
        now = int(self._clock())
        return self._conditional(
            "PutItem (claim)",
            lambda: self._client.put_item(
                TableName=self.table_name,
                Item={
                    "id": {"S": self.item_id(key)},
                    "status": {"S": RUNNING},
                    "stored_at": {"N": str(now)},
                    "expiration": {"N": str(now + self.ttl_seconds)},
                },
                ConditionExpression="attribute_not_exists(id) OR #s = :released",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":released": {"S": RELEASED}},
            ),
        )

    def release(self, key: str) -> None:
        """Give up a ``running`` claim (no turn ran), so a redelivery can claim it; other items stay.

        Raises:
            ReplyStoreError: DynamoDB failed (other than the item not being a claim).
        """
        self._conditional(
            "UpdateItem (release)",
            lambda: self._client.update_item(
                TableName=self.table_name,
                Key={"id": {"S": self.item_id(key)}},
                UpdateExpression="SET #s = :released",
                ConditionExpression="#s = :running",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":released": {"S": RELEASED}, ":running": {"S": RUNNING}},
            ),
        )

    def put(self, key: str, reply: StoredReply, *, over_claim_from: int | None = None) -> bool:
        """Store ``reply`` as ``answered`` (not yet posted), expiring after ``ttl_seconds``.

        ``over_claim_from``: only replace the ``running`` claim written at that time (``stored_at``);
        returns ``False`` when the item is no longer that claim (another delivery took it over).

        Raises:
            ReplyStoreError: DynamoDB failed.
        """
        now = int(self._clock())
        fields: dict[str, dict[str, str] | None] = {
            "id": {"S": self.item_id(key)},
            "status": {"S": ANSWERED},
            "comment": {"S": reply.comment},
            "session_id": _opt_s(reply.session_id),
            "delivery_id": _opt_s(reply.delivery_id),
            "cost_usd": _opt_n(reply.cost_usd),
            "num_turns": _opt_n(reply.num_turns),
            "error_code": _opt_s(reply.error_code),
            "request_id": _opt_s(reply.request_id),
            "stored_at": {"N": str(now)},
            "expiration": {"N": str(now + self.ttl_seconds)},
        }
        item = {name: value for name, value in fields.items() if value is not None}
        condition: dict[str, Any] = {}
        if over_claim_from is not None:
            condition = {
                "ConditionExpression": "#s = :running AND stored_at = :at",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":running": {"S": RUNNING}, ":at": {"N": str(over_claim_from)}},
            }
        # Without a condition DynamoDB never answers ConditionalCheckFailedException: every failure raises.
        return self._conditional(
            "PutItem", lambda: self._client.put_item(TableName=self.table_name, Item=item, **condition)
        )

    def mark(self, key: str, *, status: Literal["posted", "unconfirmed"], comment_url: str = "") -> None:
        """Record that the reply was posted (or may have been); a redelivery then does nothing.

        Raises:
            ReplyStoreError: DynamoDB failed, or no reply is stored under ``key``.
        """
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"id": {"S": self.item_id(key)}},
                UpdateExpression="SET #s = :s, comment_url = :u, posted_at = :t",
                # Never create a partial item (no comment, no TTL) when the reply was not stored.
                ConditionExpression="attribute_exists(id)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":s": {"S": status},
                    ":u": {"S": comment_url},
                    ":t": {"N": str(int(self._clock()))},
                },
            )
        except (ClientError, BotoCoreError) as exc:
            raise ReplyStoreError(f"UpdateItem on {self.table_name} failed: {exc}") from exc
