"""What the GitHub and GitLab repository stand-ins share: a git object store with real object ids, and a
JSON-over-HTTP loopback server that records requests and answers from a route table.

:class:`GitStore` keeps blobs, trees and commits encoded as git encodes them, so their ids are the ids git
gives (a test can compare a stand-in's tree with ``git write-tree`` of the same files), and writes a
repository archive as ``git archive`` does (a top-level directory, the commit id in the pax global
header's ``comment``).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from harness.loopback import LoopbackServer, send_reply

FILE_MODES = ("100644", "100755", "120000")
Files = dict[str, tuple[str, bytes]]  # path → (mode, bytes)


@dataclass(frozen=True)
class Commit:
    tree: str
    parents: tuple[str, ...]
    message: str


class GitStore:
    """Blobs, trees and commits by their git ids; branches as ``refs`` (``name → commit id``)."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[str, bytes]] = {}
        self.commits: dict[str, Commit] = {}
        self.refs: dict[str, str] = {}
        self.clock = 1_700_000_000

    def _put(self, kind: str, data: bytes) -> str:
        sha = hashlib.sha1(f"{kind} {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()
        self.objects[sha] = (kind, data)
        return sha

    def blob(self, data: bytes) -> str:
        return self._put("blob", data)

    def has(self, sha: str, kind: str) -> bool:
        return self.objects.get(sha, ("", b""))[0] == kind

    def tree(self, entries: Mapping[str, tuple[str, str]]) -> str:
        """A tree of flat ``path → (mode, blob id)`` entries (sub-trees made as needed)."""
        top: dict[str, tuple[str, str]] = {}
        subdirs: dict[str, dict[str, tuple[str, str]]] = {}
        for path, (mode, sha) in entries.items():
            head, _, rest = path.partition("/")
            if rest:
                subdirs.setdefault(head, {})[rest] = (mode, sha)
            else:
                top[head] = (mode, sha)
        for name, sub in subdirs.items():
            top[name] = ("40000", self.tree(sub))
        order = sorted(top, key=lambda n: n.encode() + (b"/" if top[n][0] == "40000" else b""))
        data = b"".join(f"{top[n][0]} {n}".encode() + b"\0" + bytes.fromhex(top[n][1]) for n in order)
        return self._put("tree", data)

    def flat(self, tree_sha: str, prefix: str = "") -> dict[str, tuple[str, str]]:
        """``path → (mode, blob id)`` of a tree, recursively."""
        kind, data = self.objects[tree_sha]
        assert kind == "tree"
        out: dict[str, tuple[str, str]] = {}
        pos = 0
        while pos < len(data):
            nul = data.index(b"\0", pos)
            mode, name = data[pos:nul].decode().split(" ", 1)
            sha = data[nul + 1 : nul + 21].hex()
            pos = nul + 21
            if mode == "40000":
                out.update(self.flat(sha, f"{prefix}{name}/"))
            else:
                out[f"{prefix}{name}"] = (mode, sha)
        return out

    def commit(self, tree: str, parents: list[str], message: str) -> str:
        self.clock += 1
        who = f"agent <agent@example.com> {self.clock} +0000"
        text = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents)
        text += f"author {who}\ncommitter {who}\n\n{message}"
        sha = self._put("commit", text.encode())
        self.commits[sha] = Commit(tree, tuple(parents), message)
        return sha

    def commit_files(self, files: Files, parents: list[str], message: str) -> str:
        return self.commit(self.tree({p: (m, self.blob(d)) for p, (m, d) in files.items()}), parents, message)

    def files(self, commit_sha: str) -> Files:
        """``path → (mode, bytes)`` at a commit."""
        return {p: (m, self.objects[s][1]) for p, (m, s) in self.flat(self.commits[commit_sha].tree).items()}

    def resolve(self, ref: str) -> str | None:
        """A branch name, ``heads/<branch>`` or a commit id (full or abbreviated) → commit id."""
        name = ref.removeprefix("refs/").removeprefix("heads/")
        if name in self.refs:
            return self.refs[name]
        if re.fullmatch(r"[0-9a-f]{7,40}", ref):
            found = [sha for sha in self.commits if sha.startswith(ref)]
            return found[0] if len(found) == 1 else None
        return None

    def tarball(self, commit_sha: str, prefix: str) -> bytes:
        """The commit as ``git archive --format=tar.gz --prefix=<prefix>/`` writes it."""
        raw = io.BytesIO()
        with tarfile.open(
            fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT, pax_headers={"comment": commit_sha}
        ) as tar:
            dirs = {prefix}
            for path, (mode, data) in sorted(self.files(commit_sha).items()):
                parts = path.split("/")
                for i in range(1, len(parts)):
                    d = prefix + "/" + "/".join(parts[:i])
                    if d not in dirs:
                        dirs.add(d)
                        info = tarfile.TarInfo(d)
                        info.type, info.mode = tarfile.DIRTYPE, 0o775
                        tar.addfile(info)
                info = tarfile.TarInfo(f"{prefix}/{path}")
                if mode == "120000":
                    info.type, info.linkname, info.mode = tarfile.SYMTYPE, data.decode(), 0o777
                    tar.addfile(info)
                else:
                    info.size, info.mode = len(data), 0o775 if mode == "100755" else 0o664
                    tar.addfile(info, io.BytesIO(data))
        return raw.getvalue()


Route = Callable[[dict[str, Any], re.Match[str]], tuple[int, Any]]


class JsonStandIn(LoopbackServer):
    """Loopback HTTP server: records ``requests`` (method, path, query, lower-cased headers, raw body,
    parsed ``json``); ``script`` answers first (failure tests); then the first matching route of
    :meth:`routes` ``(method, regex on the path) → handler(request, match) → (status, json | bytes)``.

    A handler may answer ``(status, bytes)`` for binary bodies and set ``request["reply_headers"]``."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[tuple[int, Any]] = []
        #: ``(method, path regex, status, json, reply headers)``: the first request matching one gets that
        #: answer instead of its route's (and the fault is used up), e.g. a rate limit with ``retry-after``.
        self.faults: list[tuple[str, str, int, Any, dict[str, str]]] = []
        self.lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                split = urllib.parse.urlsplit(self.path)
                request: dict[str, Any] = {
                    "method": self.command,
                    "path": urllib.parse.unquote(split.path),  # routes match decoded names (a/b branches)
                    "query": dict(urllib.parse.parse_qsl(split.query)),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                    "host": self.headers.get("Host", ""),
                }
                with standin.lock:
                    standin.requests.append(request)
                    scripted = standin.script.pop(0) if standin.script else None
                    fault = standin._fault(request) if scripted is None else None
                    if fault is not None:
                        scripted = fault
                    status, payload = scripted if scripted is not None else standin.dispatch(request)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                kind = "application/octet-stream" if isinstance(payload, bytes) else "application/json"
                send_reply(self, status, data, kind, headers=request.get("reply_headers"))

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        super().__init__(Handler, poll_interval=0.05, daemon_threads=True)

    def _fault(self, request: dict[str, Any]) -> tuple[int, Any] | None:
        for i, (method, pattern, status, payload, headers) in enumerate(self.faults):
            if method == request["method"] and re.fullmatch(pattern, request["path"]):
                del self.faults[i]
                request["reply_headers"] = headers
                return status, payload
        return None

    def routes(self) -> list[tuple[str, str, Route]]:
        raise NotImplementedError

    def authorized(self, request: dict[str, Any]) -> bool:
        raise NotImplementedError

    def dispatch(self, request: dict[str, Any]) -> tuple[int, Any]:
        for method, pattern, handler in self.routes():
            match = re.fullmatch(pattern, request["path"])
            if match and method == request["method"]:
                if not self.authorized(request):
                    return 401, {"message": "Bad credentials"}
                if request["body"]:
                    try:
                        request["json"] = json.loads(request["body"])
                    except json.JSONDecodeError:
                        return 400, {"message": "Problems parsing JSON"}
                    if not isinstance(request["json"], dict):
                        return 400, {"message": "Body should be a JSON object"}
                else:
                    request["json"] = {}
                return handler(request, match)
        return 404, {"message": "Not Found"}

    def calls(self, method: str, pattern: str) -> list[dict[str, Any]]:
        """The recorded requests of ``method`` whose path matches ``pattern``."""
        return [r for r in self.requests if r["method"] == method and re.fullmatch(pattern, r["path"])]


def field_errors(
    doc: Mapping[str, Any], spec: Mapping[str, tuple[type | tuple[type, ...], bool]]
) -> list[str]:
    """Fields of ``doc`` missing (when required) or of the wrong type, per ``spec`` (name → (type, required));
    ``bool`` is never accepted for ``int``."""
    errors = []
    for name, (kind, required) in spec.items():
        if name not in doc:
            if required:
                errors.append(f"{name} is missing")
            continue
        value = doc[name]
        if isinstance(value, bool) and kind is int:
            errors.append(f"{name} must be {kind}")
        elif not isinstance(value, kind):
            errors.append(f"{name} must be {kind}, not {type(value).__name__}")
    return errors
