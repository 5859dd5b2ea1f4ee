"""What the GitHub and GitLab repository clients share (:mod:`.github_repo`, :mod:`.gitlab_repo`).

A REST client whose token is read on every call (a rotated secret is picked up) and refused when empty, the
repository's description read once per client (``default_branch``, its web URL), and the snapshot archive of
one commit: downloaded within the size limit, repacked (or read into the file view a patch needs), and
checked to be of that commit. Raises
:class:`webhook.errors.TrackerConfigError` (empty token), :class:`webhook.errors.TrackerApiError`,
:class:`repo.errors.SnapshotTooLarge` and :class:`repo.errors.SnapshotError`.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Collection, Mapping
from typing import IO, Any, ClassVar

from webhook.errors import TrackerApiError, TrackerConfigError

from .errors import SnapshotError, SnapshotTooLarge
from .files import SparseView
from .rest import Rest
from .snapshot import DEFAULT_LIMITS, Repacked, SnapshotLimits, read_view, repack, repack_file


class HostedRepo:
    """A repository on a tracker's REST API; subclasses name the service, the token's headers and the
    repository's API path (:attr:`_base`)."""

    service: ClassVar[str]
    #: What the token secret should hold, for the message when it is empty.
    token_kind: ClassVar[str]

    def __init__(
        self,
        *,
        token: Callable[[], str],
        api_url: str,
        timeout: float = 30.0,
        attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        self._token = token
        self.rest = Rest(
            base_url=api_url,
            auth_headers=self._auth,
            service=self.service,
            extra_headers=extra_headers,
            timeout=timeout,
            attempts=attempts,
            sleep=sleep,
        )
        self._info: dict[str, Any] | None = None

    @property
    def _base(self) -> str:
        raise NotImplementedError

    def _token_headers(self, token: str) -> dict[str, str]:
        raise NotImplementedError

    def _auth(self) -> dict[str, str]:
        token = self._token()
        if not token:
            raise TrackerConfigError(f"{self.service} token secret is empty; put {self.token_kind} into it")
        return self._token_headers(token)

    def info(self) -> dict[str, Any]:
        """``GET`` the repository (cached for this client)."""
        if self._info is None:
            self._info = self.rest.call("GET", self._base)
        return self._info

    def default_branch(self) -> str:
        return str(self.info()["default_branch"])

    def _commit_id(self, ref: str) -> str:
        """The commit id of ``ref`` (a branch, tag or commit id)."""
        raise NotImplementedError

    def _archive_path(self, sha: str) -> tuple[str, Mapping[str, str] | None]:
        """The API path and query of the tar archive of commit ``sha``."""
        raise NotImplementedError

    def fetch_view(
        self,
        ref: str,
        *,
        reads: Collection[str],
        limits: SnapshotLimits = DEFAULT_LIMITS,
        spool_dir: str | None = None,
    ) -> SparseView:
        """The file view of ``ref`` that a patch reading ``reads`` is applied to (the reporter): the archive of the
        commit ``ref`` names, with the checks of the subclass's ``fetch_snapshot``, the bytes of ``reads`` kept only
        (:meth:`_view`)."""
        sha = self._commit_id(ref)
        return self._view(sha, reads=reads, limits=limits, spool_dir=spool_dir)

    def _archive(
        self,
        sha: str,
        *,
        limits: SnapshotLimits,
        archive: bool = True,
        into: IO[bytes] | None = None,
        spool_dir: str | None = None,
    ) -> Repacked:
        """The archive of commit ``sha``, repacked; refused when it names another commit (git archive writes the
        commit id into the tar's comment).

        ``into``: stream instead — the tracker's archive is downloaded to a spool file in ``spool_dir``,
        checked from there and the snapshot written to ``into`` (:func:`.snapshot.repack_file`); the result
        then holds no archive and no files."""
        path, query = self._archive_path(sha)
        if into is not None:
            with tempfile.TemporaryFile(dir=spool_dir) as download:
                self._download(path, query, limits, sink=download)
                download.seek(0)
                written = repack_file(download, into, limits=limits, spool_dir=spool_dir)
            repacked = Repacked(archive=b"", files={}, comment=written.comment)
        else:
            repacked = repack(self._download(path, query, limits), limits=limits, archive=archive)
        self._check_commit(repacked.comment, sha)
        return repacked

    def _view(
        self, sha: str, *, reads: Collection[str], limits: SnapshotLimits, spool_dir: str | None = None
    ) -> SparseView:
        """The archive of commit ``sha`` as the file view a patch reading ``reads`` needs: downloaded to a spool
        file in ``spool_dir`` (removed on return) and read from there by :func:`.snapshot.read_view`, so neither
        the archive nor the files the patch does not read are held in memory."""
        path, query = self._archive_path(sha)
        with tempfile.TemporaryFile(dir=spool_dir) as download:
            self._download(path, query, limits, sink=download)
            download.seek(0)
            view, comment = read_view(download, reads=reads, limits=limits)
        self._check_commit(comment, sha)
        return view

    def _check_commit(self, comment: str | None, sha: str) -> None:
        if comment is not None and comment != sha:
            raise SnapshotError(f"{self.service} sent the archive of {comment}, not of commit {sha}")

    def _download(
        self,
        path: str,
        query: Mapping[str, str] | None,
        limits: SnapshotLimits,
        *,
        sink: IO[bytes] | None = None,
    ) -> bytes:
        try:
            return self.rest.download(path, query=query, max_bytes=limits.max_download_bytes, sink=sink)
        except TrackerApiError as exc:
            if exc.status == 413:
                raise SnapshotTooLarge(exc.message) from None
            raise
