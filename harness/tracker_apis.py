"""Loopback stand-ins for the GitLab and Jira Cloud REST APIs: record replies, check their format.

``GitLabApi``: ``GET /api/v4/projects/:id/members/all/:user_id`` answers from ``members`` (404 for a
non-member, as GitLab does); ``POST /api/v4/projects/:id/issues/:iid/notes`` needs ``PRIVATE-TOKEN`` and a
JSON ``{"body": <non-empty string ≤ 1,000,000 chars>}`` (GitLab's note limit) and answers 201 with the note.

``JiraApi``: ``POST /rest/api/3/issue/:key/comment`` needs the expected ``Authorization`` and a JSON
``{"body": <valid ADF>}`` (checked with :func:`harness.adf_check.adf_errors`) and answers 201;
``PUT /rest/api/3/issue/:key/comment/:id`` edits a comment it made (same checks; 404 for another id) and
counts the edits in the reply's ``edits``.

Both record every request (``requests``; header names lower-cased) and every accepted reply (``replies``); ``script`` holds
``(status, json)`` answers to give first (failure tests). Start with ``start()``, stop with ``stop()``
(or use them as context managers).
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.adf_check import adf_errors
from harness.loopback import LoopbackServer, send_reply

GITLAB_NOTE_LIMIT = 1_000_000


def _adf_comment(request: dict[str, Any]) -> tuple[Any, tuple[int, Any] | None]:
    """A comment request's JSON, or Jira's 400 answer when it is not JSON or its ``body`` is not valid ADF."""
    try:
        doc = json.loads(request["body"])
    except json.JSONDecodeError:
        return None, (400, {"errorMessages": ["Unexpected character"]})
    errors = adf_errors(doc.get("body") if isinstance(doc, dict) else None)
    if errors:
        return None, (
            400,
            {"errorMessages": ["Comment body is not valid ADF"], "errors": {"body": "; ".join(errors)}},
        )
    return doc, None


class _StandIn(LoopbackServer):
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.replies: list[dict[str, Any]] = []
        self.script: list[tuple[int, Any]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, payload: Any) -> None:
                send_reply(self, status, json.dumps(payload).encode())

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                request = {
                    "method": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                }
                with standin.lock:
                    standin.requests.append(request)
                    scripted = standin.script.pop(0) if standin.script else None
                if scripted is not None:
                    self._answer(*scripted)
                    return
                self._answer(*standin.route(request))

            do_GET = do_POST = do_PUT = _handle

        super().__init__(Handler, poll_interval=0.05, daemon_threads=True)

    def route(self, request: dict[str, Any]) -> tuple[int, Any]:
        raise NotImplementedError


class GitLabApi(_StandIn):
    _MEMBER = re.compile(r"^/api/v4/projects/([^/]+)/members/all/(\d+)$")
    _NOTES = re.compile(r"^/api/v4/projects/([^/]+)/issues/(\d+)/notes$")

    def __init__(self, *, token: str, members: dict[tuple[str, int], int] | None = None) -> None:
        super().__init__()
        self.token = token
        self.members = dict(members or {})
        self.next_id = 5000

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v4"

    def route(self, request: dict[str, Any]) -> tuple[int, Any]:
        if request["headers"].get("private-token") != self.token:
            return 401, {"message": "401 Unauthorized"}
        path = request["path"]
        member = self._MEMBER.match(path)
        if request["method"] == "GET" and member:
            project, user_id = urllib.parse.unquote(member.group(1)), int(member.group(2))
            level = self.members.get((project, user_id))
            if level is None:
                return 404, {"message": "404 Not found"}
            return 200, {
                "id": user_id,
                "username": f"user{user_id}",
                "state": "active",
                "access_level": level,
            }
        notes = self._NOTES.match(path)
        if request["method"] == "POST" and notes:
            try:
                doc = json.loads(request["body"])
            except json.JSONDecodeError:
                return 400, {"message": "body is not JSON"}
            text = doc.get("body") if isinstance(doc, dict) else None
            if not isinstance(text, str) or not text.strip():
                return 400, {"message": {"body": ["can't be blank"]}}
            if len(text) > GITLAB_NOTE_LIMIT:
                return 400, {"message": {"body": ["is too long (maximum is 1000000 characters)"]}}
            self.next_id += 1
            note = {
                "id": self.next_id,
                "body": text,
                "project": urllib.parse.unquote(notes.group(1)),
                "noteable_iid": int(notes.group(2)),
                "noteable_type": "Issue",
            }
            self.replies.append(note)
            return 201, note
        return 404, {"message": "404 Not found"}


class JiraApi(_StandIn):
    _COMMENT = re.compile(r"^/rest/api/3/issue/([A-Z][A-Z0-9_]*-\d+)/comment$")
    _EDIT = re.compile(r"^/rest/api/3/issue/([A-Z][A-Z0-9_]*-\d+)/comment/(\d+)$")

    def __init__(self, *, authorization: str) -> None:
        super().__init__()
        self.authorization = authorization
        self.next_id = 10100
        #: ``GET /rest/api/3/user/groups?accountId=``: account id → group names.
        self.groups: dict[str, list[str]] = {}

    def route(self, request: dict[str, Any]) -> tuple[int, Any]:
        if request["headers"].get("authorization") != self.authorization:
            return 401, {"errorMessages": ["Client must be authenticated to access this resource."]}
        path, _, query = request["path"].partition("?")
        if request["method"] == "GET" and path == "/rest/api/3/user/groups":
            account = dict(urllib.parse.parse_qsl(query)).get("accountId", "")
            if not account:
                return 400, {"errorMessages": ["accountId is required"]}
            return 200, [{"name": g, "groupId": f"id-{g}"} for g in self.groups.get(account, [])]
        edit = self._EDIT.match(request["path"])
        if request["method"] == "PUT" and edit:
            return self._edit(request, edit)
        match = self._COMMENT.match(request["path"])
        if request["method"] != "POST" or not match:
            return 404, {"errorMessages": ["Not found"]}
        doc, refused = _adf_comment(request)
        if refused is not None:
            return refused
        self.next_id += 1
        comment = {"id": str(self.next_id), "issue": match.group(1), "body": doc["body"]}
        self.replies.append(comment)
        return 201, {
            "id": comment["id"],
            "self": f"{self.url}/rest/api/3/issue/{match.group(1)}/comment/{self.next_id}",
        }

    def _edit(self, request: dict[str, Any], match: re.Match[str]) -> tuple[int, Any]:
        found = [c for c in self.replies if c["id"] == match.group(2) and c["issue"] == match.group(1)]
        if not found:
            return 404, {"errorMessages": ["Can not find a comment for the id"]}
        doc, refused = _adf_comment(request)
        if refused is not None:
            return refused
        found[0]["body"] = doc["body"]
        found[0]["edits"] = found[0].get("edits", 0) + 1
        return 200, {"id": found[0]["id"], "body": doc["body"]}
