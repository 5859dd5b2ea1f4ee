"""Workspace snapshots too large to send inline: read from one S3 location the runtime is configured with.

The trusted side uploads the tar.gz archive under the configured ``s3://<bucket>/<prefix>``
(``AGENTKIT_WORKSPACE_S3_URI``; the stack's workspace bucket and stage prefix) and sends
``{"workspace": {"s3_uri": "s3://<bucket>/<prefix>..."}}``. The runtime reads only objects under that location (any
other URI is refused before a call is made), only up to ``AGENTKIT_WORKSPACE_MAX_S3_BYTES`` (checked on the
reported length and again while reading), and never writes or deletes: the bucket's lifecycle rule removes the
object. The archive is then unpacked like an inline one (:mod:`runtime.workspace.archive`).

IAM actions: ``s3:GetObject`` on ``arn:aws:s3:::<bucket>/<prefix>*``. Environment variables: none read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from runtime.errors import InvalidWorkspace, WorkspaceError, WorkspaceTooLarge

# Bucket names: 3-63 of lowercase letters, digits, '.', '-' (S3 naming rules); keys: anything, but not '..' parts.
_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_CHUNK = 1024 * 1024
_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound", "NoSuchBucket"})


@dataclass(frozen=True)
class S3Location:
    """``s3://<bucket>/<prefix>``: a bucket and a key prefix (``""`` = the whole bucket)."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, uri: str) -> S3Location:
        """Raises ValueError naming what is wrong."""
        if not uri.startswith("s3://"):
            raise ValueError(f"{uri!r} is not an s3://<bucket>/<key> URI")
        bucket, _, key = uri[5:].partition("/")
        if not _BUCKET_RE.match(bucket):
            raise ValueError(f"{uri!r}: {bucket!r} is not a valid S3 bucket name")
        if any(part in (".", "..") for part in key.split("/")):
            raise ValueError(f"{uri!r}: '.' and '..' are not allowed in the key")
        return cls(bucket, key)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


class S3Snapshots:
    """Reads snapshot archives from the one allowed location.

    Args:
        client: a boto3 S3 client (:func:`runtime.aws.s3_client`).
        allowed: where snapshots may be read from.
        max_bytes: the largest archive read.
    """

    def __init__(self, *, client: Any, allowed: S3Location, max_bytes: int) -> None:
        self.client, self.allowed, self.max_bytes = client, allowed, max_bytes

    def check(self, uri: str) -> S3Location:
        """The object's bucket and key, if ``uri`` lies under the allowed location.

        Raises:
            InvalidWorkspace: a malformed URI, or one outside the allowed location.
        """
        try:
            location = S3Location.parse(uri)
        except ValueError as exc:
            raise InvalidWorkspace(f"workspace.s3_uri: {exc}") from None
        if (
            location.bucket != self.allowed.bucket
            or not location.prefix.startswith(self.allowed.prefix)
            or location.prefix == self.allowed.prefix
        ):
            raise InvalidWorkspace(
                f"workspace.s3_uri {uri!r} is outside the runtime's snapshot location {self.allowed}; upload the "
                "archive under it (the stack output WorkspaceBucketName and the stage prefix)"
            )
        return location

    def fetch(self, uri: str) -> bytes:
        """The archive's bytes. Blocking: run it in a thread.

        Raises:
            InvalidWorkspace: outside the allowed location, or no such object.
            WorkspaceTooLarge: over ``max_bytes``.
            WorkspaceError: the runtime may not read it, or S3 failed.
        """
        location = self.check(uri)
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            reply = self.client.get_object(Bucket=location.bucket, Key=location.prefix)
            length = int(reply.get("ContentLength") or 0)
            if length > self.max_bytes:
                reply["Body"].close()
                raise self._too_large(uri, length)
            body = reply["Body"]
            parts: list[bytes] = []
            size = 0
            while chunk := body.read(_CHUNK):
                size += len(chunk)
                if size > self.max_bytes:
                    body.close()
                    raise self._too_large(uri, size)
                parts.append(chunk)
            return b"".join(parts)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _NOT_FOUND:
                raise InvalidWorkspace(f"no workspace archive at {uri} ({code}); upload it first") from None
            raise WorkspaceError(
                f"the runtime could not read {uri} ({code or type(exc).__name__}); its role needs s3:GetObject on "
                f"{self.allowed}*"
            ) from exc
        except BotoCoreError as exc:
            raise WorkspaceError(
                f"reading {uri} failed ({type(exc).__name__}); retry the invocation"
            ) from exc

    def _too_large(self, uri: str, size: int) -> WorkspaceTooLarge:
        return WorkspaceTooLarge(
            f"the workspace archive {uri} is {size} bytes or more; the limit is {self.max_bytes} "
            "(AGENTKIT_WORKSPACE_MAX_S3_BYTES). Send fewer files or raise the limit."
        )
