"""The webhook's errors: each names its machine-readable ``code`` and the HTTP status the receiver answers with.

Raised by the adapters (a delivery refused: bad request, stale, bad signature, too large, wrong media type; a
tracker API call failed) and by the settings (:class:`TrackerConfigError`, a 500-class configuration error). One
module, one import name: an ``except`` naming one of these catches it wherever it was raised.
"""

from __future__ import annotations


class WebhookError(Exception):
    """Base error: ``code`` (machine-readable), ``http_status`` and a human message."""

    code = "webhook_error"
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequestError(WebhookError):
    code, http_status = "bad_request", 400


class StaleDeliveryError(WebhookError):
    """The signed payload is older than the replay window (a captured delivery sent again)."""

    code, http_status = "stale_delivery", 400


class SignatureError(WebhookError):
    code, http_status = "invalid_signature", 401


class NotFoundError(WebhookError):
    code, http_status = "not_found", 404


class PayloadTooLargeError(WebhookError):
    code, http_status = "payload_too_large", 413


class UnsupportedMediaTypeError(WebhookError):
    code, http_status = "unsupported_media_type", 415


class TrackerConfigError(WebhookError):
    code, http_status = "misconfigured", 500


class TrackerApiError(WebhookError):
    """A call to the tracker's API failed (``retryable`` tells the worker to let SQS retry)."""

    code, http_status = "tracker_api_error", 502

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
