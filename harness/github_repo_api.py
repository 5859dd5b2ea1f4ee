"""Loopback stand-in for the GitHub REST endpoints the webhook worker uses for repository work and comments.

It validates request shapes against GitHub's REST reference (docs.github.com/rest, version 2022-11-28) and
keeps state (:class:`harness.repo_standin.GitStore`: real git object ids), so a test can assert "the branch
now holds exactly this change" (:meth:`GitHubRepoApi.branch_changes`) and "one draft pull request exists".

- every call needs ``Authorization: Bearer <token>`` (401 otherwise);
- ``GET /repos/{o}/{r}``, ``GET .../commits/{ref}``, ``GET .../pulls/{n}``;
- ``GET .../tarball/{ref}`` answers ``302`` to ``http://localhost:<port>/codeload/...`` (another host, as
  GitHub's ``codeload.github.com``): ``codeload_requests`` records whether a token followed it there;
- ``POST .../git/blobs`` (``content`` str, ``encoding`` ``utf-8``|``base64``, strict base64),
  ``POST .../git/trees`` (``tree`` entries with ``path``, ``mode``, ``type`` and exactly one of ``sha``
  (null deletes; deleting a missing path is an error, as GitHub documents) or ``content``; ``base_tree``),
  ``POST .../git/commits`` (``message``, ``tree``, ``parents`` of existing objects), ``GET .../git/commits/{sha}``,
  ``GET .../git/ref/heads/{branch}``, ``POST .../git/refs`` (``refs/heads/...``; 422 when it exists);
- ``GET .../pulls?head=owner:branch&state=open``, ``POST .../pulls`` (``title``, ``head``, ``base``,
  ``body``, ``draft`` bool; 422 for a second open pull request of a head, for a draft when
  ``drafts_supported`` is false, and when head and base are the same commit);
- ``POST .../issues/{n}/comments`` and ``PATCH .../issues/comments/{id}`` (``body``: 1-65,536 characters);
- ``GET .../collaborators/{user}/permission`` from ``permissions``.

A test opens pull requests of its own with :meth:`GitHubRepoApi.open_pull_request`: from a branch of this
repository, or from a fork (``head.repo.full_name`` is then the fork's, as GitHub's "Get a pull request" answers;
its commits are reachable here, as GitHub keeps them under ``refs/pull/<n>/head``, but no branch of this
repository holds them).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from harness.repo_standin import FILE_MODES, Files, GitStore, JsonStandIn, field_errors

COMMENT_LIMIT = 65_536
_REPO = r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)"


class GitHubRepoApi(JsonStandIn):
    """One repository ``owner/name`` with ``files`` on ``default_branch``, served to ``token``."""

    def __init__(
        self,
        *,
        token: str,
        repository: str = "octo/app",
        files: Files | None = None,
        default_branch: str = "main",
        drafts_supported: bool = True,
    ) -> None:
        super().__init__()
        self.token = token
        self.repository = repository
        self.default_branch = default_branch
        self.drafts_supported = drafts_supported
        self.git = GitStore()
        self.base_commit = self.git.commit_files(dict(files or {}), [], "initial commit")
        self.git.refs[default_branch] = self.base_commit
        self.pulls: list[dict[str, Any]] = []
        self.comments: dict[int, dict[str, Any]] = {}
        self.codeload_requests: list[dict[str, Any]] = []
        #: ``GET .../collaborators/{user}/permission``: login → ``admin`` | ``maintain`` | ``write`` | ``triage`` |
        #: ``read``; anyone else is not a collaborator (``none``).
        self.permissions: dict[str, str] = {}
        self._next_id = 1000

    @property
    def html_url(self) -> str:
        return f"https://github.example/{self.repository}"

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def authorized(self, request: dict[str, Any]) -> bool:
        if request["path"].startswith("/codeload/"):
            self.codeload_requests.append(request)
            return True  # the temporary URL itself is the credential, as on codeload.github.com
        return request["headers"].get("authorization") == f"Bearer {self.token}"

    def routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("GET", _REPO, self._repo),
            ("GET", _REPO + r"/commits/(?P<ref>.+)", self._get_commit),
            ("GET", _REPO + r"/tarball/(?P<ref>.+)", self._tarball),
            ("GET", r"/codeload/(?P<sha>[0-9a-f]{40})", self._codeload),
            ("POST", _REPO + r"/git/blobs", self._blob),
            ("POST", _REPO + r"/git/trees", self._tree),
            ("POST", _REPO + r"/git/commits", self._commit),
            ("GET", _REPO + r"/git/commits/(?P<sha>[0-9a-f]{40})", self._git_commit),
            ("GET", _REPO + r"/git/ref/heads/(?P<branch>.+)", self._get_ref),
            ("POST", _REPO + r"/git/refs", self._create_ref),
            ("GET", _REPO + r"/pulls", self._list_pulls),
            ("POST", _REPO + r"/pulls", self._create_pull),
            ("GET", _REPO + r"/pulls/(?P<n>\d+)", self._get_pull),
            ("GET", _REPO + r"/collaborators/(?P<user>[^/]+)/permission", self._permission),
            ("POST", _REPO + r"/issues/(?P<n>\d+)/comments", self._post_comment),
            ("PATCH", _REPO + r"/issues/comments/(?P<id>\d+)", self._edit_comment),
        ]

    def dispatch(self, request: dict[str, Any]) -> tuple[int, Any]:
        match = re.match(_REPO, request["path"])
        if match and f"{match['o']}/{match['r']}".lower() != self.repository.lower():
            return 404, {"message": "Not Found"}
        return super().dispatch(request)

    # ---- reads
    def _repo(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        return 200, {
            "full_name": self.repository,
            "default_branch": self.default_branch,
            "html_url": self.html_url,
        }

    def _commit_doc(self, sha: str) -> dict[str, Any]:
        commit = self.git.commits[sha]
        return {
            "sha": sha,
            "message": commit.message,
            "tree": {"sha": commit.tree},
            "parents": [{"sha": p} for p in commit.parents],
        }

    def _get_commit(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        sha = self.git.resolve(m["ref"])
        if sha is None:
            return 422, {"message": f"No commit found for SHA: {m['ref']}"}
        doc = self._commit_doc(sha)
        return 200, {
            "sha": sha,
            "commit": {"tree": doc["tree"], "message": doc["message"]},
            "parents": doc["parents"],
        }

    def _tarball(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        sha = self.git.resolve(m["ref"])
        if sha is None:
            return 404, {"message": "Not Found"}
        port = self.url.rsplit(":", 1)[1]
        request["reply_headers"] = {"Location": f"http://localhost:{port}/codeload/{sha}"}
        return 302, b""

    def _codeload(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if m["sha"] not in self.git.commits:
            return 404, b"not found"
        owner, name = self.repository.split("/")
        return 200, self.git.tarball(m["sha"], f"{owner}-{name}-{m['sha'][:7]}")

    def _git_commit(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if m["sha"] not in self.git.commits:
            return 404, {"message": "Not Found"}
        return 200, self._commit_doc(m["sha"])

    def _get_ref(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        sha = self.git.refs.get(m["branch"])
        if sha is None:
            return 404, {"message": "Not Found"}
        return 200, {"ref": f"refs/heads/{m['branch']}", "object": {"sha": sha, "type": "commit"}}

    # ---- git data writes
    def _blob(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        errors = field_errors(doc, {"content": (str, True), "encoding": (str, False)})
        if errors:
            return 422, {"message": "Invalid request", "errors": errors}
        encoding = doc.get("encoding", "utf-8")
        if encoding == "base64":
            try:
                data = base64.b64decode(doc["content"], validate=True)
            except (binascii.Error, ValueError):
                return 422, {"message": "content is not valid base64"}
        elif encoding == "utf-8":
            data = doc["content"].encode()
        else:
            return 422, {"message": f"encoding {encoding!r} is not utf-8 or base64"}
        return 201, {"sha": self.git.blob(data)}

    def _tree(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        errors = field_errors(doc, {"tree": (list, True), "base_tree": (str, False)})
        if errors:
            return 422, {"message": "Invalid request", "errors": errors}
        base = doc.get("base_tree")
        if base is not None and not self.git.has(base, "tree"):
            return 422, {"message": "base_tree is not a valid tree"}
        entries = dict(self.git.flat(base)) if base else {}
        for item in doc["tree"]:
            problem = self._tree_entry_problem(item, entries)
            if problem:
                return 422, {"message": problem}
            if "content" in item:
                entries[item["path"]] = (item["mode"], self.git.blob(item["content"].encode()))
            elif item["sha"] is None:
                del entries[item["path"]]
            else:
                entries[item["path"]] = (item["mode"], item["sha"])
        return 201, {"sha": self.git.tree(entries)}

    def _tree_entry_problem(self, item: Any, entries: dict[str, tuple[str, str]]) -> str | None:
        if not isinstance(item, dict):
            return "tree entries must be objects"
        errors = field_errors(item, {"path": (str, True), "mode": (str, True), "type": (str, True)})
        if errors:
            return "; ".join(errors)
        path = item["path"]
        if path.startswith("/") or any(p in ("", ".", "..") for p in path.split("/")):
            return f"path {path!r} is not a clean relative path"
        if item["mode"] not in FILE_MODES or item["type"] != "blob":
            return f"mode {item['mode']} / type {item['type']} is not a file (this stand-in takes blobs only)"
        if ("sha" in item) == ("content" in item):
            return "give exactly one of sha and content"
        if "content" in item:
            return None if isinstance(item["content"], str) else "content must be a string"
        sha = item["sha"]
        if sha is None:
            return None if path in entries else f"cannot delete {path!r}: it does not exist"
        if not isinstance(sha, str) or not self.git.has(sha, "blob"):
            return f"sha {sha!r} is not a blob"
        return None

    def _commit(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        errors = field_errors(doc, {"message": (str, True), "tree": (str, True), "parents": (list, False)})
        if errors:
            return 422, {"message": "Invalid request", "errors": errors}
        if not self.git.has(doc["tree"], "tree"):
            return 422, {"message": "tree is not a valid tree"}
        parents = doc.get("parents", [])
        if any(not isinstance(p, str) or p not in self.git.commits for p in parents):
            return 422, {"message": "parents must be existing commit ids"}
        sha = self.git.commit(doc["tree"], parents, doc["message"])
        return 201, self._commit_doc(sha)

    def _create_ref(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        errors = field_errors(doc, {"ref": (str, True), "sha": (str, True)})
        if errors:
            return 422, {"message": "Invalid request", "errors": errors}
        ref = doc["ref"]
        if not ref.startswith("refs/heads/") or ref.count("/") < 2 or ".." in ref:
            return 422, {"message": "ref must be fully qualified (refs/heads/...)"}
        if doc["sha"] not in self.git.commits:
            return 422, {"message": "Object does not exist"}
        branch = ref.removeprefix("refs/heads/")
        if branch in self.git.refs:
            return 422, {"message": "Reference already exists"}
        self.git.refs[branch] = doc["sha"]
        return 201, {"ref": ref, "object": {"sha": doc["sha"], "type": "commit"}}

    # ---- pull requests
    def open_pull_request(
        self,
        branch: str,
        files: Files,
        *,
        number: int | None = None,
        fork: str | None = None,
        title: str = "WIP",
    ) -> dict[str, Any]:
        """A pull request whose head commit (a child of the default branch's) holds exactly ``files``, from
        ``branch`` of this repository, or of the repository ``fork`` (``owner/name``). Returns its document."""
        number = number if number is not None else self._next_pull_number()
        if any(p["number"] == number for p in self.pulls):
            raise ValueError(f"pull request #{number} exists")
        head = self.git.commit_files(dict(files), [self.git.refs[self.default_branch]], title)
        if fork is None:
            self.git.refs[branch] = head
        pull = {
            "number": number,
            "html_url": f"{self.html_url}/pull/{number}",
            "state": "open",
            "draft": False,
            "title": title,
            "body": None,
            "head": {"ref": branch, "sha": head, "repo": {"full_name": fork or self.repository}},
            "base": {"ref": self.default_branch},
        }
        self.pulls.append(pull)
        return self._pull_doc(pull)

    def _next_pull_number(self) -> int:
        return max((p["number"] for p in self.pulls), default=0) + 1

    def pull(self, number: int) -> dict[str, Any]:
        return next(p for p in self.pulls if p["number"] == number)

    def _own_head(self, pull: dict[str, Any]) -> bool:
        return bool(self._pull_doc(pull)["head"]["repo"]["full_name"] == self.repository)

    def _pull_doc(self, pull: dict[str, Any]) -> dict[str, Any]:
        return {**pull, "head": {"repo": {"full_name": self.repository}, **pull["head"]}}

    def _list_pulls(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        head = request["query"].get("head", "")
        state = request["query"].get("state", "open")
        owner = self.repository.split("/")[0]
        found = [
            self._pull_doc(p)
            for p in self.pulls
            if (not head or f"{owner}:{p['head']['ref']}" == head)
            and (state == "all" or p["state"] == state)
            and self._own_head(p)
        ]
        return 200, found

    def _create_pull(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        spec = {"title": (str, True), "head": (str, True), "base": (str, True), "body": (str, False)}
        errors = field_errors(doc, {**spec, "draft": (bool, False)})
        if errors:
            return 422, {"message": "Validation Failed", "errors": errors}
        head, base = doc["head"].split(":")[-1], doc["base"]
        if head not in self.git.refs or base not in self.git.refs:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"field": "head or base", "code": "invalid"}],
            }
        if self.git.refs[head] == self.git.refs[base]:
            return 422, {"message": f"No commits between {base} and {head}"}
        if any(p["head"]["ref"] == head and p["state"] == "open" and self._own_head(p) for p in self.pulls):
            return 422, {
                "message": f"A pull request already exists for {self.repository.split('/')[0]}:{head}."
            }
        if doc.get("draft") and not self.drafts_supported:
            return 422, {"message": "Draft pull requests are not supported in this repository."}
        number = self._next_pull_number()
        pull = {
            "number": number,
            "html_url": f"{self.html_url}/pull/{number}",
            "state": "open",
            "draft": bool(doc.get("draft", False)),
            "title": doc["title"],
            "body": doc.get("body"),
            "head": {"ref": head, "sha": self.git.refs[head]},
            "base": {"ref": base},
        }
        self.pulls.append(pull)
        return 201, self._pull_doc(pull)

    def _get_pull(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        found = [p for p in self.pulls if p["number"] == int(m["n"])]
        if not found:
            return 404, {"message": "Not Found"}
        return 200, self._pull_doc(found[0])

    # ---- comments
    def _comment_body(self, request: dict[str, Any]) -> str | None:
        body = request["json"].get("body")
        return body if isinstance(body, str) and body.strip() and len(body) <= COMMENT_LIMIT else None

    def _permission(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        """As GitHub answers: ``permission`` is admin/write/read/none (maintain reads as write, triage as read),
        ``role_name`` the role itself."""
        role = self.permissions.get(m["user"].lower(), "none")
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return 200, {"permission": legacy, "role_name": role, "user": {"login": m["user"]}}

    def _post_comment(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        body = self._comment_body(request)
        if body is None:
            return 422, {"message": "body must be a non-empty string of at most 65536 characters"}
        cid = self._id()
        self.comments[cid] = {"id": cid, "issue": int(m["n"]), "body": body, "edits": 0}
        return 201, {
            "id": cid,
            "html_url": f"{self.html_url}/issues/{m['n']}#issuecomment-{cid}",
            "body": body,
        }

    def _edit_comment(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        cid = int(m["id"])
        if cid not in self.comments:
            return 404, {"message": "Not Found"}
        body = self._comment_body(request)
        if body is None:
            return 422, {"message": "body must be a non-empty string of at most 65536 characters"}
        self.comments[cid].update(body=body, edits=self.comments[cid]["edits"] + 1)
        issue = self.comments[cid]["issue"]
        return 200, {
            "id": cid,
            "html_url": f"{self.html_url}/issues/{issue}#issuecomment-{cid}",
            "body": body,
        }

    # ---- for assertions
    def branch_files(self, branch: str) -> Files:
        return self.git.files(self.git.refs[branch])

    def branch_changes(self, branch: str, base: str | None = None) -> dict[str, tuple[str, bytes] | None]:
        """What ``branch`` changes against ``base`` (default: the initial commit): path → (mode, bytes),
        or ``None`` for a deleted path."""
        return diff_files(self.git.files(base or self.base_commit), self.branch_files(branch))


def diff_files(before: Files, after: Files) -> dict[str, tuple[str, bytes] | None]:
    out: dict[str, tuple[str, bytes] | None] = {}
    for path in set(before) | set(after):
        if path not in after:
            out[path] = None
        elif before.get(path) != after[path]:
            out[path] = after[path]
    return out
