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
  ``post_comment_lost_answers`` makes a POST create the comment and answer an error (a lost 201);
  ``GET .../issues/{n}/comments`` (``since``, ``per_page``);
- ``GET .../collaborators/{user}/permission`` from ``permissions``;
- ``POST .../forks``: ``fork_owner``'s fork (202, the same one again), served under its own name with its own
  refs and the shared object store, after ``fork_delay_requests`` requests answered 404 (forking is
  asynchronous); a pull request's ``head`` may then be ``owner:branch`` of the fork. With ``fork_reads_network``
  false a fork answers only for commits its own branches reach or that were written through it (the
  conservative reading of GitHub's reference, which promises nothing about the rest of the fork network);
- ``POST {fork}/merge-upstream`` (``branch``; branches#sync-a-fork-branch-with-the-upstream-repository): 200 with
  ``merge_type`` ``none`` (up to date), ``fast-forward``, or ``merge`` (a merge commit when the fork's branch has
  commits of its own that touch other files); 409 when both sides changed a file differently (a merge
  conflict); 422 when the repository is not a fork or either side lacks the branch.

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
        fork_owner: str = "agentkit-bot",
    ) -> None:
        super().__init__()
        self.token = token
        self.repository = repository
        self.base_name = repository
        self.default_branch = default_branch
        self.drafts_supported = drafts_supported
        self.git = GitStore()
        self.base_git = self.git
        self.base_commit = self.git.commit_files(dict(files or {}), [], "initial commit")
        self.git.refs[default_branch] = self.base_commit
        self.pulls: list[dict[str, Any]] = []
        self.comments: dict[int, dict[str, Any]] = {}
        self.codeload_requests: list[dict[str, Any]] = []
        #: Statuses answered to the next comment POSTs *after* the comment was created (a proxy that loses
        #: GitHub's 201 and answers 502): one per POST, popped.
        self.post_comment_lost_answers: list[int] = []
        #: ``GET .../collaborators/{user}/permission``: login → ``admin`` | ``maintain`` | ``write`` | ``triage`` |
        #: ``read``; anyone else is not a collaborator (``none``).
        self.permissions: dict[str, str] = {}
        #: Forks (``POST .../forks``): the fork's full name → its refs. A fork shares this repository's object
        #: store (GitHub keeps one per fork network), so the base commit is readable in it once it exists.
        self.fork_owner = fork_owner
        self.forks: dict[str, GitStore] = {}
        #: How many requests to a new fork answer 404 before it exists (forking is asynchronous on GitHub).
        self.fork_delay_requests = 0
        self._fork_pending: dict[str, int] = {}
        #: Whether a fork answers for every commit of the network (what GitHub does in practice) or only for
        #: commits its branches reach or that were written through it (``fork_written``).
        self.fork_reads_network = True
        self.fork_written: dict[str, set[str]] = {}
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
            ("GET", _REPO + r"/issues/(?P<n>\d+)/comments", self._list_comments),
            ("GET", _REPO + r"/collaborators/(?P<user>[^/]+)/permission", self._permission),
            ("POST", _REPO + r"/forks", self._fork),
            ("POST", _REPO + r"/merge-upstream", self._merge_upstream),
            ("POST", _REPO + r"/issues/(?P<n>\d+)/comments", self._post_comment),
            ("PATCH", _REPO + r"/issues/comments/(?P<id>\d+)", self._edit_comment),
        ]

    def dispatch(self, request: dict[str, Any]) -> tuple[int, Any]:
        match = re.match(_REPO, request["path"])
        name = f"{match['o']}/{match['r']}".lower() if match else ""
        if not match or name == self.repository.lower():
            return super().dispatch(request)
        fork = self.forks.get(name)
        if fork is None:
            return 404, {"message": "Not Found"}
        if self._fork_pending.get(name, 0) > 0:
            self._fork_pending[name] -= 1
            return 404, {"message": "Not Found"}
        # Served as the fork: its refs, the shared objects (called under the stand-in's lock).
        base_git, base_name = self.git, self.repository
        self.git, self.repository = fork, f"{match['o']}/{match['r']}"
        try:
            return super().dispatch(request)
        finally:
            self.git, self.repository = base_git, base_name

    def _fork(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if self.repository != self.base_name:
            return 403, {"message": "a fork of a fork is not used here"}
        errors = field_errors(
            request["json"],
            {"organization": (str, False), "name": (str, False), "default_branch_only": (bool, False)},
        )
        if errors:
            return 422, {"message": "Validation Failed", "errors": errors}
        name = f"{self.fork_owner}/{self.repository.split('/')[1]}"
        if name.lower() not in self.forks:
            fork = GitStore()
            fork.objects, fork.commits = self.git.objects, self.git.commits
            fork.refs = {self.default_branch: self.git.refs[self.default_branch]}
            self.forks[name.lower()] = fork
            self.fork_written[name.lower()] = set()
            self._fork_pending[name.lower()] = self.fork_delay_requests
        return 202, {
            "full_name": name,
            "owner": {"login": self.fork_owner},
            "fork": True,
            "default_branch": self.default_branch,
            "html_url": f"https://github.example/{name}",
        }

    def _in_fork(self) -> bool:
        return self.repository != self.base_name

    def _visible(self, sha: str) -> bool:
        """Whether the repository being served answers for commit ``sha`` (see ``fork_reads_network``)."""
        if sha not in self.git.commits:
            return False
        if not self._in_fork() or self.fork_reads_network:
            return True
        if sha in self.fork_written.get(self.repository.lower(), set()):
            return True
        return any(self._reaches(head, sha) for head in self.git.refs.values())

    def _reaches(self, head: str, sha: str) -> bool:
        """Whether ``sha`` is ``head`` or one of its ancestors."""
        return sha in self._ancestors(head)

    def _ancestors(self, head: str) -> set[str]:
        seen: set[str] = set()
        todo = [head]
        while todo:
            sha = todo.pop()
            if sha not in seen:
                seen.add(sha)
                todo.extend(self.git.commits[sha].parents)
        return seen

    def fork_of(self, name: str) -> GitStore:
        """A fork's refs (``owner/name``), for a test to make it stale or diverged."""
        return self.forks[name.lower()]

    def _merge_upstream(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if not self._in_fork():
            return 422, {"message": "This repository is not a fork."}
        errors = field_errors(request["json"], {"branch": (str, True)})
        if errors:
            return 422, {"message": "Invalid request", "errors": errors}
        branch = request["json"]["branch"]
        mine, theirs = self.git.refs.get(branch), self.base_git.refs.get(branch)
        if mine is None or theirs is None:
            return 422, {"message": f"branch {branch!r} is missing in the fork or upstream"}
        answer = {"message": "Successfully fetched and fast-forwarded from upstream.", "base_branch": branch}
        if self._reaches(mine, theirs):
            return 200, {**answer, "message": "This branch is not behind the upstream.", "merge_type": "none"}
        if self._reaches(theirs, mine):
            self.git.refs[branch] = theirs
            return 200, {**answer, "merge_type": "fast-forward"}
        merged = self._three_way(mine, theirs)
        if merged is None:
            return 409, {"message": "There are merge conflicts"}
        self.git.refs[branch] = self.git.commit_files(merged, [mine, theirs], f"Merge branch '{branch}'")
        self.fork_written[self.repository.lower()].add(self.git.refs[branch])
        return 200, {
            **answer,
            "message": "Successfully fetched and merged from upstream.",
            "merge_type": "merge",
        }

    def _three_way(self, mine: str, theirs: str) -> Files | None:
        """File-level three-way merge of two commits; ``None`` when both changed a path differently."""
        common = self._ancestors(mine) & self._ancestors(theirs)
        # a merge base: a common ancestor no other common ancestor descends from
        base = next(c for c in common if not any(c != o and self._reaches(o, c) for o in common))
        old, ours, other = self.git.files(base), self.git.files(mine), self.git.files(theirs)
        out: Files = {}
        for path in set(old) | set(ours) | set(other):
            was, a, b = old.get(path), ours.get(path), other.get(path)
            if a == b or b == was:
                value = a
            elif a == was:
                value = b
            else:
                return None
            if value is not None:
                out[path] = value
        return out

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
        if not self._visible(m["sha"]):
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
        if any(not isinstance(p, str) or not self._visible(p) for p in parents):
            return 422, {"message": "parents must be existing commit ids"}
        sha = self.git.commit(doc["tree"], parents, doc["message"])
        if self._in_fork():
            self.fork_written[self.repository.lower()].add(sha)
        return 201, self._commit_doc(sha)

    def _create_ref(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        errors = field_errors(doc, {"ref": (str, True), "sha": (str, True)})
        if errors:
            return 422, {"message": "Invalid request", "errors": errors}
        ref = doc["ref"]
        if not ref.startswith("refs/heads/") or ref.count("/") < 2 or ".." in ref:
            return 422, {"message": "ref must be fully qualified (refs/heads/...)"}
        if not self._visible(doc["sha"]):
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

    def _head_repo(self, pull: dict[str, Any]) -> str:
        return str(self._pull_doc(pull)["head"]["repo"]["full_name"])

    def _list_pulls(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        head = request["query"].get("head", "")
        state = request["query"].get("state", "open")
        found = [
            self._pull_doc(p)
            for p in self.pulls
            if (not head or f"{self._head_repo(p).split('/')[0]}:{p['head']['ref']}".lower() == head.lower())
            and (state == "all" or p["state"] == state)
        ]
        return 200, found

    def _create_pull(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        spec = {"title": (str, True), "head": (str, True), "base": (str, True), "body": (str, False)}
        errors = field_errors(doc, {**spec, "draft": (bool, False)})
        if errors:
            return 422, {"message": "Validation Failed", "errors": errors}
        owner, _, head = doc["head"].rpartition(":")
        base = doc["base"]
        head_repo = self.repository
        head_refs = self.git.refs
        if owner and owner.lower() != self.repository.split("/")[0].lower():
            head_repo = f"{owner}/{self.repository.split('/')[1]}"
            fork = self.forks.get(head_repo.lower())
            head_refs = fork.refs if fork is not None else {}
        if head not in head_refs or base not in self.git.refs:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"field": "head or base", "code": "invalid"}],
            }
        if head_refs[head] == self.git.refs[base]:
            return 422, {"message": f"No commits between {base} and {head}"}
        if any(
            p["head"]["ref"] == head and p["state"] == "open" and self._head_repo(p) == head_repo
            for p in self.pulls
        ):
            return 422, {"message": f"A pull request already exists for {head_repo.split('/')[0]}:{head}."}
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
            "head": {"ref": head, "sha": head_refs[head], "repo": {"full_name": head_repo}},
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

    def _post_comment(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        body = self._comment_body(request)
        if body is None:
            return 422, {"message": "body must be a non-empty string of at most 65536 characters"}
        cid = self._id()
        self.comments[cid] = {"id": cid, "issue": int(m["n"]), "body": body, "edits": 0}
        if self.post_comment_lost_answers:
            return self.post_comment_lost_answers.pop(0), {"message": "Bad Gateway"}
        return 201, {
            "id": cid,
            "html_url": f"{self.html_url}/issues/{m['n']}#issuecomment-{cid}",
            "body": body,
        }

    def _permission(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        """As GitHub answers: ``permission`` is admin/write/read/none (maintain reads as write, triage as read),
        ``role_name`` the role itself."""
        role = self.permissions.get(m["user"].lower(), "none")
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return 200, {"permission": legacy, "role_name": role, "user": {"login": m["user"]}}

    def _list_comments(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        """``GET …/issues/{n}/comments`` (``since``, ``per_page`` ≤ 100): oldest first, as GitHub lists them.
        The stand-in keeps no times, so ``since`` is checked for its ISO 8601 form only."""
        since = request["query"].get("since")
        if since is not None and not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", since):
            return 422, {"message": "since must be an ISO 8601 timestamp"}
        per_page = int(request["query"].get("per_page", "30"))
        if not 1 <= per_page <= 100:
            return 422, {"message": "per_page must be 1-100"}
        issue = int(m["n"])
        listed = [c for c in self.comments.values() if c["issue"] == issue][:per_page]
        return 200, [
            {
                "id": c["id"],
                "body": c["body"],
                "html_url": f"{self.html_url}/issues/{issue}#issuecomment-{c['id']}",
            }
            for c in listed
        ]

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
        """The files of ``branch``: of this repository, else of a fork's (forks share the object store)."""
        for refs in (self.git.refs, *(fork.refs for fork in self.forks.values())):
            if branch in refs:
                return self.git.files(refs[branch])
        raise KeyError(branch)

    def base_branches(self) -> set[str]:
        """This repository's own branches (a fix in the fork path must add none)."""
        return set(self.git.refs)

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
