"""One fix on a large repository, on loopback: the worker's snapshot and the reporter's change, measured.

A GitHub repository stand-in (``harness.github_repo_api``: real git objects, a fork network) holds ``--files``
files of ``--mb`` MiB in all; a patch changes ``--changed`` of them (one line each, as the runtime's
``git diff-tree -p`` writes it). Then, each in a child process of its own (so its peak resident memory is its
own, not the stand-in's):

- **worker**: ``TrackerRepos.fetch`` — resolve the default branch, download the archive to a spool file, check
  and repack it from disk into the runtime's snapshot file (what the worker sends when invoking the runtime);
- **reporter**: ``TrackerRepos.propose`` — read the patch, fetch the base commit again (spooled to ``/tmp`` and
  read keeping the bytes of the files the patch reads only), apply the patch strictly, fork (the default
  ``FIX_BRANCHES=fork``), commit and open the draft pull request: the reporter's work from a result to the
  draft, without its DynamoDB and comment calls (two more requests);
- **reporter, whole view** (the way before, for the ratio): the same with the archive downloaded into memory and
  every file's bytes held (``fetch_snapshot(archive=False)`` + ``apply_patch``), on a branch of its own.

Printed: each child's peak RSS (``VmHWM``) next to the same interpreter's peak after the imports alone (the
reporters import ``webhook.reporter``, boto3 included, so their peak is the reporter Lambda's as deployed), the
reporter's growth with the whole view over its growth now (one run, the load average at the start and end of
each child), the tracker API calls of each reporter (all, and the content-creating ones GitHub's secondary rate
limit counts) and the time from result to draft pull request. A worker refusal (``snapshot_too_large`` at
today's ``SnapshotLimits``: 64 MiB unpacked, 50,000 files, 20 MiB compressed snapshot) is printed as such (the
reporter then starts from the stand-in's commit). The worker streams the snapshot through ``/tmp`` and the
reporter reads past every file its patch does not read, so neither peak grows with the repository's size.

    .venv/bin/python benchmarks/fix_scale.py                       # 100k files, 500 MiB, 1,000 changed
    .venv/bin/python benchmarks/fix_scale.py --files 5000 --mb 40  # a quick run
    .venv/bin/python benchmarks/fix_scale.py --files 60000 --mb 300 --changed 200 --lift-limits --no-worker
    .venv/bin/python benchmarks/fix_scale.py --files 5000 --mb 46 --changed 1000 --rewrite --no-worker  # a ~20 MiB patch
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOKEN = "ghp_benchmark_token"
REPOSITORY = "octo/big"


def _files(count: int, total_bytes: int, seed: int = 7) -> dict[str, tuple[str, bytes]]:
    """``count`` text files of about ``total_bytes`` in all: lines of hex (gzip halves them, as source does)."""
    rng = random.Random(seed)
    size = max(16, total_bytes // count)
    out = {}
    for i in range(count):
        lines, length = [], 0
        while length < size:
            line = f"{i:07d} {rng.getrandbits(160):040x}\n"
            lines.append(line)
            length += len(line)
        out[f"src/pkg{i // 1000:03d}/mod{i:06d}.py"] = ("100644", "".join(lines).encode())
    return out


def _patch(files: dict[str, tuple[str, bytes]], changed: int, *, rewrite: bool = False) -> str:
    """One line changed in each of ``changed`` files; with ``rewrite`` every line of them (the largest patch
    those files give: near the runtime's 20 MiB patch cap for 1,000 files of 10 KiB)."""
    from webhook.repo import git_blob_sha

    sections = []
    for path in list(files)[:changed]:
        old = files[path][1]
        if rewrite:
            lines = old.decode().splitlines()
            new = "".join(f"# {line}\n" for line in lines).encode()
            hunk = f"@@ -1,{len(lines)} +1,{len(lines)} @@\n" + "".join(f"-{line}\n" for line in lines)
            hunk += "".join(f"+# {line}\n" for line in lines)
        else:
            first, _, rest = old.partition(b"\n")
            new = b"# changed by the agent\n" + rest
            hunk = f"@@ -1 +1 @@\n-{first.decode()}\n+# changed by the agent\n"
        sections.append(
            f"diff --git a/{path} b/{path}\nindex {git_blob_sha(old)}..{git_blob_sha(new)} 100644\n"
            f"--- a/{path}\n+++ b/{path}\n{hunk}"
        )
    return "".join(sections)


def _peak_mb() -> float:
    """This process's peak resident memory (``VmHWM``). Not ``ru_maxrss``: Linux carries that over ``execve``
    from the parent that forked us, whose stand-in holds the whole repository."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(role: str, api_url: str, work: Path) -> None:
    """One side's work in this process; prints a JSON line."""
    from webhook.fix.jobs import FixJob
    from webhook.fix.repos import TrackerRepos
    from webhook.repo import DEFAULT_LIMITS, SnapshotLimits
    from webhook.trackers.targets import RepoTarget

    if role != "worker":
        import webhook.reporter  # noqa: F401 - the reporter Lambda's own imports (boto3): its peak as deployed

    baseline = _peak_mb()
    limits = DEFAULT_LIMITS
    if os.environ.get("FIX_SCALE_LIMITS") == "lifted":
        big = 4 * 1024 * 1024 * 1024
        limits = SnapshotLimits(big, big, big, 10_000_000, big)
    repos = TrackerRepos(tokens={"github": lambda: TOKEN}, api_urls={"github": api_url}, limits=limits)
    start = time.perf_counter()
    out: dict[str, object] = {"role": role, "baseline_mb": round(baseline, 1)}
    try:
        if role == "worker":
            fetched = repos.fetch(RepoTarget("github", REPOSITORY), pull_request=None)
            out["snapshot_bytes"] = fetched.size  # streamed to a spool file (/tmp), not held in memory
            fetched.discard()
            (work / "base_sha").write_text(fetched.commit_sha)
        else:
            whole = role == "reporter-whole"
            job = FixJob(
                tracker="github",
                repository=REPOSITORY,
                scope_id="1",
                issue_number=7,
                issue_id="7",
                issue_ref="#7",
                title="make it faster",
                session_id="gh-" + "e" * 64,
                target_tracker="github",
                target_repository=REPOSITORY,
                base_branch="main",
                base_sha=(work / "base_sha").read_text(),
                pr_base="main",
            )
            patch = (work / "patch.diff").read_text()
            if whole:
                proposal = _propose_whole(repos, job, patch)
            else:
                proposal = repos.propose(
                    job, "d" * 64, patch, mode="draft_pr", title="Agent fix for #7", body="b"
                )
            out["pull_request"] = proposal.result.url if proposal else None
            out["files"] = proposal.files if proposal else 0
    except Exception as exc:  # reported, not hidden: a refusal at scale is a result
        out["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    out["seconds"] = round(time.perf_counter() - start, 2)
    out["peak_mb"] = round(_peak_mb(), 1)
    print(json.dumps(out))


def _propose_whole(repos: Any, job: Any, patch: str) -> Any:
    """``TrackerRepos.propose`` as it was before the reporter read its view from ``/tmp``: the archive in memory,
    every file's bytes held, the patch applied to that (its own job key: a branch and draft of its own)."""
    from webhook.fix.repos import Proposal
    from webhook.repo import ChangeRequest, apply_patch, branch_name

    repo = repos.repo(job.target_tracker, job.target_repository, job.target_project_id)
    snap = repo.fetch_snapshot(job.base_sha, limits=repos.limits, archive=False)
    changes = apply_patch(snap.files, patch, allow_protected=repos.allow_protected)
    request = ChangeRequest(
        branch=branch_name(job.tracker, job.scope_id, job.issue_id, "c" * 64, label="7"),
        base_branch=job.pr_base,
        base_sha=job.base_sha,
        title="Agent fix for #7",
        body="b",
    )
    return Proposal(result=repo.open_change(request, changes), files=len(changes))


def run_child(role: str, api_url: str, work: Path, env: dict[str, str]) -> dict[str, object]:
    load = os.getloadavg()[0]
    proc = subprocess.run(
        [sys.executable, __file__, "--child", role, "--api-url", api_url, "--work", str(work)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"{role} child failed:\n{proc.stderr[-3000:]}")
    return {**json.loads(lines[-1]), "load": f"{load:.1f} -> {os.getloadavg()[0]:.1f}"}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--mb", type=float, default=500.0)
    parser.add_argument("--changed", type=int, default=1000)
    parser.add_argument(
        "--lift-limits", action="store_true", help="raise SnapshotLimits to measure past them"
    )
    parser.add_argument("--no-worker", action="store_true", help="measure the reporter only")
    parser.add_argument(
        "--rewrite", action="store_true", help="the patch rewrites every line of the changed files"
    )
    parser.add_argument("--child", choices=("worker", "reporter", "reporter-whole"))
    parser.add_argument("--api-url")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.api_url, args.work)
        return 0

    import tempfile

    from harness.github_repo_api import GitHubRepoApi

    print(f"load: {os.getloadavg()}")
    t0 = time.perf_counter()
    files = _files(args.files, int(args.mb * 1024 * 1024))
    changed = min(args.changed, args.files)
    print(
        f"repository: {len(files)} files, {sum(len(d) for _, d in files.values()) / 2**20:.0f} MiB; "
        f"patch changes {changed} (built in {time.perf_counter() - t0:.1f}s)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if args.lift_limits:
        env["FIX_SCALE_LIMITS"] = "lifted"
    with (
        tempfile.TemporaryDirectory() as tmp,
        GitHubRepoApi(token=TOKEN, repository=REPOSITORY, files=files) as api,
    ):
        work = Path(tmp)
        # The stand-in writes its archive in Python (minutes at 500 MiB): made once here, then served from memory,
        # so the worker's 30 s read timeout measures the worker, not the stand-in.
        t1 = time.perf_counter()
        made = api.git.tarball
        cache: dict[tuple[str, str], bytes] = {}

        def tarball(sha: str, prefix: str) -> bytes:
            if (sha, prefix) not in cache:
                cache[sha, prefix] = made(sha, prefix)
            return cache[sha, prefix]

        api.git.tarball = tarball  # type: ignore[method-assign,assignment]
        api.git.tarball(api.base_commit, f"{REPOSITORY.replace('/', '-')}-{api.base_commit[:7]}")
        print(
            f"stand-in archive: {len(next(iter(cache.values()))) / 2**20:.0f} MiB (made in {time.perf_counter() - t1:.1f}s)"
        )
        (work / "patch.diff").write_text(_patch(files, changed, rewrite=args.rewrite))
        print(f"patch: {(work / 'patch.diff').stat().st_size / 2**20:.1f} MiB")
        worker: dict[str, object] = {"error": "not measured (--no-worker)"}
        if not args.no_worker:
            worker = run_child("worker", api.url, work, env)
            print(f"worker:   {worker}")
        if "error" in worker:
            (work / "base_sha").write_text(api.base_commit)
        sides = {"worker": worker} if not args.no_worker else {}
        for role in ("reporter", "reporter-whole"):
            before = len(api.requests)
            side = sides[role] = run_child(role, api.url, work, env)
            calls = api.requests[before:]
            creating = [r for r in calls if r["method"] in ("POST", "PATCH", "PUT")]
            print(f"{role}: {side}")
            print(
                f"  tracker API calls from result to draft: {len(calls)} ({len(creating)} content-creating: "
                + ", ".join(sorted({r["method"] + " " + r["path"].split("/repos/")[-1] for r in creating}))
                + f") for {changed} changed files"
            )
        grown = {}
        for name, side in sides.items():
            grown[name] = float(side["peak_mb"]) - float(side["baseline_mb"])  # type: ignore[arg-type]
            print(
                f"{name} peak RSS {side['peak_mb']} MiB (interpreter and imports {side['baseline_mb']} MiB, "
                f"+{grown[name]:.0f} MiB; load {side['load']})"
            )
        now, was = sides["reporter"], sides["reporter-whole"]
        print(
            f"reporter above its interpreter: whole view +{grown['reporter-whole']:.0f} MiB, now "
            f"+{grown['reporter']:.0f} MiB: {grown['reporter-whole'] / max(grown['reporter'], 1.0):.1f}x less"
        )
        print(
            f"time from result to draft pull request: {now['seconds']}s (whole view {was['seconds']}s); "
            f"load: {os.getloadavg()}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
