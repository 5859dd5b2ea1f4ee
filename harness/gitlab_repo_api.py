"""Loopback stand-in for the GitLab REST API v4 endpoints the webhook worker uses for repository work and notes.

It validates request shapes against GitLab's API reference (docs.gitlab.com/api) and keeps state
(:class:`harness.repo_standin.GitStore`), so a test can assert what a branch holds and that one draft merge
request exists.

- every call needs ``PRIVATE-TOKEN: <token>`` (401 otherwise); the project only by its numeric id;
- ``GET /projects/:id``, ``GET .../repository/commits/:ref``, ``GET .../repository/branches/:branch``,
  ``GET .../repository/archive.tar.gz?sha=`` (``sha`` required here: the worker asks by commit id);
- ``POST .../repository/commits``: ``branch``, ``commit_message``, ``actions`` (non-empty) required; a new
  branch needs ``start_sha`` (an existing commit) or ``start_branch``; giving one for an existing branch is a
  400, as on GitLab. Actions run in order: ``create`` (path must not exist), ``update``/``delete``/``chmod``
  (must exist), ``move`` (``previous_path``); ``content`` required for create/update, ``encoding``
  ``text``|``base64`` (strict), ``execute_filemode`` a boolean for ``chmod``;
- ``GET .../merge_requests?source_branch=&state=opened``, ``POST .../merge_requests`` (``source_branch``,
  ``target_branch``, ``title`` required; both branches must exist; 409 when an open merge request of the
  source branch exists; a draft is a title starting ``Draft:``, ``[Draft]`` or ``(Draft)``),
  ``GET .../merge_requests/:iid``;
- forks: ``POST .../fork`` (201 with ``import_status``; 409 once the fork exists), ``GET .../forks``; a fork is
  served under its own id with its own branches and the shared objects, reports ``import_status: started``
  ``fork_import_polls`` times, takes ``start_project`` in commits and ``target_project_id`` in merge requests;
  ``start_sha``/``start_branch`` are looked up in ``start_project`` when it is given ("the project to start the
  new branch from. Defaults to the value of ``id``", docs.gitlab.com/api/commits), else in the project itself:
  with ``fork_reads_network`` false a fork knows only commits its branches reach or that were written in it,
  so a fork behind its parent cannot start a branch at the parent's newer commit without ``start_project``;
- notes: ``POST .../issues/:iid/notes`` and ``PUT .../{issues|merge_requests}/:iid/notes/:note_id``
  (``body``: 1-1,000,000 characters).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from harness.github_repo_api import diff_files
from harness.repo_standin import Files, GitStore, JsonStandIn, field_errors

NOTE_LIMIT = 1_000_000
_PROJECT = r"/api/v4/projects/(?P<id>\d+)"
_DRAFT = re.compile(r"^\s*(\[draft\]|\(draft\)|draft:)", re.IGNORECASE)


class GitLabRepoApi(JsonStandIn):
    """Project ``project_id`` (``path``) with ``files`` on ``default_branch``, served to ``token``."""

    def __init__(
        self,
        *,
        token: str,
        project_id: int = 42,
        path: str = "group/app",
        files: Files | None = None,
        default_branch: str = "main",
    ) -> None:
        super().__init__()
        self.token = token
        self.project_id = project_id
        self.path = path
        self.default_branch = default_branch
        self.git = GitStore()
        self.base_commit = self.git.commit_files(dict(files or {}), [], "initial commit")
        self.git.refs[default_branch] = self.base_commit
        self.merge_requests: list[dict[str, Any]] = []
        self.notes: dict[int, dict[str, Any]] = {}
        self._next_id = 7000
        self.base_project_id, self.base_path, self.base_git = project_id, path, self.git
        #: Forks (``POST .../fork``): project id → (path, refs sharing this project's objects: GitLab keeps one
        #: object pool per fork network). A new fork answers ``import_status: started`` this many times first.
        self.fork_namespace = "agentkit-bot"
        self.forks: dict[int, tuple[str, GitStore]] = {}
        self.fork_import_polls = 0
        self._import_pending: dict[int, int] = {}
        #: Whether a fork knows every commit of its network or only those its branches reach and those written
        #: in it (``fork_written``); the API reference promises nothing either way.
        self.fork_reads_network = True
        self.fork_written: dict[int, set[str]] = {}

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/v4"

    @property
    def web_url(self) -> str:
        return f"https://gitlab.example/{self.path}"

    def authorized(self, request: dict[str, Any]) -> bool:
        return request["headers"].get("private-token") == self.token

    def routes(self) -> list[tuple[str, str, Any]]:
        return [
            ("GET", _PROJECT, self._project),
            ("GET", _PROJECT + r"/repository/commits/(?P<ref>.+)", self._get_commit),
            ("GET", _PROJECT + r"/repository/branches/(?P<branch>.+)", self._get_branch),
            ("GET", _PROJECT + r"/repository/archive\.tar\.gz", self._archive),
            ("POST", _PROJECT + r"/repository/commits", self._create_commit),
            ("POST", _PROJECT + r"/fork", self._fork),
            ("GET", _PROJECT + r"/forks", self._list_forks),
            ("GET", _PROJECT + r"/merge_requests", self._list_mrs),
            ("POST", _PROJECT + r"/merge_requests", self._create_mr),
            ("GET", _PROJECT + r"/merge_requests/(?P<iid>\d+)", self._get_mr),
            ("POST", _PROJECT + r"/(?P<kind>issues|merge_requests)/(?P<iid>\d+)/notes", self._post_note),
            (
                "PUT",
                _PROJECT + r"/(?P<kind>issues|merge_requests)/(?P<iid>\d+)/notes/(?P<nid>\d+)",
                self._edit_note,
            ),
        ]

    def dispatch(self, request: dict[str, Any]) -> tuple[int, Any]:
        match = re.match(_PROJECT, request["path"])
        if not match or int(match["id"]) == self.project_id:
            return super().dispatch(request)
        fork = self.forks.get(int(match["id"]))
        if fork is None:
            return 404, {"message": "404 Project Not Found"}
        # Served as the fork: its path and refs, the shared objects (called under the stand-in's lock).
        saved = (self.git, self.project_id, self.path)
        self.git, self.project_id, self.path = fork[1], int(match["id"]), fork[0]
        try:
            return super().dispatch(request)
        finally:
            self.git, self.project_id, self.path = saved

    def _fork_doc(self, fork_id: int) -> dict[str, Any]:
        pending = self._import_pending.get(fork_id, 0)
        return {
            "id": fork_id,
            "path_with_namespace": self.forks[fork_id][0],
            "default_branch": self.default_branch,
            "web_url": f"https://gitlab.example/{self.forks[fork_id][0]}",
            "import_status": "started" if pending else "finished",
            "forked_from_project": {"id": self.base_project_id},
        }

    def _fork(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if self.project_id != self.base_project_id:
            return 403, {"message": "a fork of a fork is not used here"}
        if self.forks:  # the namespace holds the fork already: GitLab answers 409, name taken
            return 409, {"message": {"name": ["has already been taken"]}}
        fork_id = self.base_project_id + 1000
        git = GitStore()
        git.objects, git.commits = self.git.objects, self.git.commits
        git.refs = dict(self.git.refs)
        self.forks[fork_id] = (f"{self.fork_namespace}/{self.base_path.rsplit('/', 1)[-1]}", git)
        self._import_pending[fork_id] = self.fork_import_polls
        self.fork_written[fork_id] = set()
        return 201, self._fork_doc(fork_id)

    def _knows(self, sha: str) -> bool:
        """Whether the project being served knows commit ``sha`` (see ``fork_reads_network``)."""
        if sha not in self.git.commits or self.project_id not in self.forks or self.fork_reads_network:
            return sha in self.git.commits
        if sha in self.fork_written[self.project_id]:
            return True
        todo, seen = list(self.git.refs.values()), set()
        while todo:
            head = todo.pop()
            if head == sha:
                return True
            if head not in seen:
                seen.add(head)
                todo.extend(self.git.commits[head].parents)
        return False

    def _list_forks(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if request["query"].get("owned") not in (None, "true", "false"):
            return 400, {"error": "owned is invalid"}
        return 200, [self._fork_doc(fork_id) for fork_id in self.forks]

    def _commit_doc(self, sha: str) -> dict[str, Any]:
        commit = self.git.commits[sha]
        return {
            "id": sha,
            "short_id": sha[:8],
            "parent_ids": list(commit.parents),
            "message": commit.message,
            "web_url": f"{self.web_url}/-/commit/{sha}",
        }

    # ---- reads
    def _project(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        if self.project_id in self.forks:
            if self._import_pending.get(self.project_id, 0) > 0:
                self._import_pending[self.project_id] -= 1
                return 200, {**self._fork_doc(self.project_id), "import_status": "started"}
            return 200, self._fork_doc(self.project_id)
        return 200, {
            "id": self.project_id,
            "path_with_namespace": self.path,
            "default_branch": self.default_branch,
            "web_url": self.web_url,
        }

    def _get_commit(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        sha = self.git.resolve(m["ref"])
        if sha is None:
            return 404, {"message": "404 Commit Not Found"}
        return 200, self._commit_doc(sha)

    def _get_branch(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        sha = self.git.refs.get(m["branch"])
        if sha is None:
            return 404, {"message": "404 Branch Not Found"}
        return 200, {"name": m["branch"], "commit": self._commit_doc(sha)}

    def _archive(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        ref = request["query"].get("sha")
        sha = self.git.resolve(ref) if ref else None
        if sha is None:
            return 404, {"message": "404 Not Found"}
        name = self.path.rsplit("/", 1)[-1]
        return 200, self.git.tarball(sha, f"{name}-{sha}-{sha}")

    # ---- commits with actions
    def _create_commit(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        spec = {
            "branch": (str, True),
            "commit_message": (str, True),
            "actions": (list, True),
            "start_sha": (str, False),
            "start_branch": (str, False),
            "start_project": (int, False),
        }
        errors = field_errors(doc, spec)
        if errors or not doc["actions"]:
            return 400, {"error": "; ".join(errors) or "actions is empty"}
        branch = doc["branch"]
        start = doc.get("start_sha") or doc.get("start_branch")
        source, from_self = self.git, True
        start_project = doc.get("start_project")
        if start_project is not None and start_project != self.project_id:
            if start_project != self.base_project_id or self.project_id not in self.forks:
                return 404, {"message": "404 Project Not Found"}
            source, from_self = self.base_git, False  # the fork's parent: its branches, the shared objects
        parent: str | None
        if branch in self.git.refs:
            if start:
                return 400, {"message": f"A branch called '{branch}' already exists. Switch to that branch."}
            parent = self.git.refs[branch]
        else:
            if not start:
                return 400, {"message": "You can only create or edit files when you are on a branch"}
            parent = source.resolve(start) if doc.get("start_sha") else source.refs.get(start)
            if (
                parent is None
                or (doc.get("start_sha") and parent != doc["start_sha"])
                or (from_self and not self._knows(parent))
            ):
                return 400, {"message": f"Invalid start {start!r}"}
        files = self.git.files(parent)
        for action in doc["actions"]:
            problem = _apply_action(files, action)
            if problem:
                return 400, {"message": problem}
        sha = self.git.commit_files(files, [parent], doc["commit_message"])
        self.git.refs[branch] = sha
        if self.project_id in self.forks:
            self.fork_written[self.project_id].add(sha)
        return 201, self._commit_doc(sha)

    # ---- merge requests
    def _list_mrs(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        source = request["query"].get("source_branch")
        state = request["query"].get("state", "all")
        return 200, [
            mr
            for mr in self.merge_requests
            if (not source or mr["source_branch"] == source) and state in ("all", mr["state"])
        ]

    def _create_mr(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        doc = request["json"]
        spec = {
            "source_branch": (str, True),
            "target_branch": (str, True),
            "title": (str, True),
            "description": (str, False),
            "remove_source_branch": (bool, False),
            "target_project_id": (int, False),
        }
        errors = field_errors(doc, spec)
        if errors:
            return 400, {"error": "; ".join(errors)}
        source, target = doc["source_branch"], doc["target_branch"]
        target_project = doc.get("target_project_id", self.project_id)
        if target_project not in (self.project_id, self.base_project_id):
            return 400, {"message": ["target project is not this project or the one it was forked from"]}
        # A fork's merge request into the project it was forked from: the target branch is the base's.
        target_refs = self.base_git.refs if target_project != self.project_id else self.git.refs
        if source not in self.git.refs or target not in target_refs:
            return 400, {"message": ["Source branch or target branch does not exist"]}
        opened = [
            mr
            for mr in self.merge_requests
            if mr["source_branch"] == source
            and mr["state"] == "opened"
            and mr["source_project_id"] == self.project_id
        ]
        if opened:
            return 409, {
                "message": [
                    f"Another open merge request already exists for this source branch: !{opened[0]['iid']}"
                ]
            }
        iid = len(self.merge_requests) + 1
        draft = bool(_DRAFT.match(doc["title"]))
        mr = {
            "iid": iid,
            "web_url": f"https://gitlab.example/{self.base_path}/-/merge_requests/{iid}",
            "state": "opened",
            "title": doc["title"],
            "description": doc.get("description"),
            "draft": draft,
            "work_in_progress": draft,
            "source_branch": source,
            "target_branch": target,
            "source_project_id": self.project_id,
            "target_project_id": target_project,
            "sha": self.git.refs[source],
        }
        self.merge_requests.append(mr)
        return 201, mr

    def _get_mr(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        iid = int(m["iid"])
        if not 1 <= iid <= len(self.merge_requests):
            return 404, {"message": "404 Not found"}
        return 200, self.merge_requests[iid - 1]

    # ---- notes
    def _note_body(self, request: dict[str, Any]) -> str | None:
        body = request["json"].get("body")
        return body if isinstance(body, str) and body.strip() and len(body) <= NOTE_LIMIT else None

    def _post_note(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        body = self._note_body(request)
        if body is None:
            return 400, {"message": {"body": ["can't be blank"]}}
        self._next_id += 1
        note = {"id": self._next_id, "body": body, "noteable": m["kind"], "iid": int(m["iid"]), "edits": 0}
        self.notes[self._next_id] = note
        return 201, {k: v for k, v in note.items() if k != "edits"}

    def _edit_note(self, request: dict[str, Any], m: re.Match[str]) -> tuple[int, Any]:
        note = self.notes.get(int(m["nid"]))
        if note is None or note["noteable"] != m["kind"] or note["iid"] != int(m["iid"]):
            return 404, {"message": "404 Note Not Found"}
        body = self._note_body(request)
        if body is None:
            return 400, {"message": {"body": ["can't be blank"]}}
        note.update(body=body, edits=note["edits"] + 1)
        return 200, {k: v for k, v in note.items() if k != "edits"}

    # ---- for assertions
    def branch_files(self, branch: str) -> Files:
        """The files of ``branch``: of this project, else of a fork's (forks share the object store)."""
        for refs in (self.git.refs, *(git.refs for _, git in self.forks.values())):
            if branch in refs:
                return self.git.files(refs[branch])
        raise KeyError(branch)

    def branch_changes(self, branch: str, base: str | None = None) -> dict[str, tuple[str, bytes] | None]:
        return diff_files(self.git.files(base or self.base_commit), self.branch_files(branch))


def _apply_action(files: Files, action: Any) -> str | None:
    """Apply one commits-API action to ``files``; the problem GitLab would report, or ``None``."""
    if not isinstance(action, dict):
        return "actions must be objects"
    spec = {
        "action": (str, True),
        "file_path": (str, True),
        "content": (str, False),
        "encoding": (str, False),
        "previous_path": (str, False),
        "execute_filemode": (bool, False),
    }
    errors = field_errors(action, spec)
    if errors:
        return "; ".join(errors)
    kind, path = action["action"], action["file_path"]
    if path.startswith("/") or any(p in ("", ".", "..") for p in path.split("/")):
        return f"file_path {path!r} is not a clean relative path"
    if kind in ("create", "update"):
        if "content" not in action:
            return f"content is required for {kind}"
        encoding = action.get("encoding", "text")
        if encoding == "base64":
            try:
                data = base64.b64decode(action["content"], validate=True)
            except (binascii.Error, ValueError):
                return "content is not valid base64"
        elif encoding == "text":
            data = action["content"].encode()
        else:
            return f"encoding {encoding!r} is not text or base64"
        if kind == "create" and path in files:
            return "A file with this name already exists"
        if kind == "update" and path not in files:
            return "A file with this name doesn't exist"
        files[path] = (files[path][0] if kind == "update" else "100644", data)
    elif kind == "delete":
        if path not in files:
            return "A file with this name doesn't exist"
        del files[path]
    elif kind == "chmod":
        if path not in files or "execute_filemode" not in action:
            return "chmod needs an existing file_path and execute_filemode"
        files[path] = ("100755" if action["execute_filemode"] else "100644", files[path][1])
    elif kind == "move":
        previous = action.get("previous_path")
        if not previous or previous not in files or path in files:
            return "move needs an existing previous_path and a new file_path"
        mode, data = files.pop(previous)
        files[path] = (mode, data)
    else:
        return f"action {kind!r} is not one of create, delete, move, update, chmod"
    return None
