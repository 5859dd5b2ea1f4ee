"""The build host: with ``image_build=local`` the CDK CLI builds the runtime's linux/arm64 image here.

That needs a reachable Docker daemon and either an arm64 daemon or arm64 emulation registered in the daemon's
kernel (QEMU through binfmt_misc: BuildKit's "multi-platform" docs; Docker Desktop registers it by default,
Docker Engine on an x86 Linux host does not). The emulation is read from ``docker buildx inspect`` (the daemon's
view, so it works for Docker Desktop's VM too), else from the local ``/proc/sys/fs/binfmt_misc/qemu-aarch64``.

IAM actions: none. Runs ``docker info`` and ``docker buildx inspect`` (read-only).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from agentkit.doctor.core import CheckResult

Runner = Callable[[Sequence[str]], tuple[int, str]]
"""Runs a command, returns ``(exit status, stdout + stderr)``; tests pass a fake."""
BINFMT_AARCH64 = Path("/proc/sys/fs/binfmt_misc/qemu-aarch64")
ARM64 = ("aarch64", "arm64")
BINFMT_FIX = (
    "register arm64 emulation once: docker run --privileged --rm tonistiigi/binfmt --install arm64 "
    "(docs/deploy.md), or build in AWS: -c image_build=codebuild"
)


def run_command(command: Sequence[str]) -> tuple[int, str]:
    """:data:`Runner` over ``subprocess``: 20 s at most; a missing binary or a timeout is exit status 127/124."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=20, check=False)
    except FileNotFoundError as exc:
        return 127, str(exc)
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(command)} did not answer within 20 s"
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def _binfmt_enabled(path: Path) -> bool:
    try:
        return path.read_text().splitlines()[:1] == ["enabled"]
    except OSError:
        return False


def check_docker(
    image_build: str,
    which: Callable[[str], str | None] = shutil.which,
    run: Runner = run_command,
    binfmt: Path = BINFMT_AARCH64,
) -> CheckResult:
    """Docker on PATH, its daemon reachable, and able to build linux/arm64 (native or emulated)."""
    if image_build != "local":
        return CheckResult("docker", "ok", f"not needed (image_build={image_build})")
    if not which("docker"):
        return CheckResult(
            "docker",
            "fail",
            "image_build=local needs Docker, none on PATH",
            "install Docker, or -c image_build=codebuild",
        )
    status, output = run(["docker", "info", "--format", "{{.Architecture}}"])
    if status != 0:
        first = (output.strip().splitlines() or ["no answer"])[-1]
        return CheckResult(
            "docker",
            "fail",
            f"the Docker daemon is not reachable ({first})",
            "start Docker (Docker Desktop, or sudo systemctl start docker) and check DOCKER_HOST, or "
            "-c image_build=codebuild",
        )
    architecture = output.strip().splitlines()[-1].strip() if output.strip() else "?"
    if architecture in ARM64:
        return CheckResult("docker", "ok", f"daemon on {architecture}: builds the arm64 image natively")
    status, output = run(["docker", "buildx", "inspect"])
    if status == 0 and "linux/arm64" in output:
        return CheckResult(
            "docker", "ok", f"daemon on {architecture}, arm64 emulated (buildx lists linux/arm64; slower)"
        )
    if _binfmt_enabled(binfmt):
        return CheckResult(
            "docker", "ok", f"daemon on {architecture}, arm64 emulated ({binfmt} enabled; slower)"
        )
    return CheckResult(
        "docker",
        "fail",
        f"daemon on {architecture} with no arm64 emulation: the image build would fail",
        BINFMT_FIX,
    )
