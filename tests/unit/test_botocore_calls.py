"""Every boto3 call the kit makes names an operation and parameters that exist in botocore's service models.

Stubber tests validate the calls they stub; this check covers every call in the source, stubbed or not, so a
call that no test happens to reach cannot name a parameter the service does not have. It reads the code (AST):
for each unit (the runtime, the client, each Lambda), the services it builds clients for (``.client("svc")``
with a literal name), then every ``<expr>.<operation>(...)`` call whose name is an operation of one of those
services, ``get_paginator("<operation>")``, and any call whose first argument is a string naming an operation
(a wrapper such as ``self._call("create_event", extractionMode=...)`` that does ``getattr(client, action)``):
a call is found whatever its spelling. Each call's keyword arguments must be members of the operation's input
shape in at least one of the unit's services.

The same walk runs against the botocore release of the client's declared floor in
``tests/client/test_boto3_floor.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

ROOT = Path(__file__).resolve().parents[2]
#: The code units and the directories they live in. A unit is checked against the services it creates.
UNITS: dict[str, tuple[str, ...]] = {
    "runtime": ("runtime",),
    "client": ("client/agentkit",),
    "webhook": ("webhook",),
    "invoices": ("infra/functions/invoices",),
    "image_build_trigger": ("infra/functions/image_build_trigger",),
    "runtime_mmds": ("infra/functions/runtime_mmds",),
}


@dataclass(frozen=True)
class Call:
    where: str
    operation: str
    keywords: tuple[str, ...]


def unit_files(unit: str, root: Path = ROOT) -> list[Path]:
    return sorted(p for d in UNITS[unit] for p in (root / d).rglob("*.py"))


def _parsed(files: list[Path]) -> Iterator[tuple[Path, ast.AST]]:
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            yield path, node


def _callee(node: ast.Call) -> str:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return node.func.id if isinstance(node.func, ast.Name) else ""


def services_of(files: list[Path]) -> set[str]:
    """Service names passed as a literal to a client factory: ``<x>.client(...)``, ``<x>.resource(...)`` or a
    helper named like one (``_client("cloudwatch", ...)``), when the literal is a botocore service name."""
    known = set(botocore.session.get_session().get_available_services())
    return {
        str(node.args[0].value)
        for _, node in _parsed(files)
        if isinstance(node, ast.Call)
        and (_callee(node).endswith("client") or _callee(node) == "resource")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in known
    }


def _known(session: Any, service: str) -> bool:
    return service in session.get_available_services()


def operations(session: Any, service: str) -> dict[str, Any]:
    """snake_case operation name → botocore OperationModel."""
    model = session.get_service_model(service)
    return {xform_name(name): model.operation_model(name) for name in model.operation_names}


def _imported_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def calls_of(files: list[Path], ops: set[str]) -> Iterator[Call]:
    """Attribute calls whose name is one of ``ops`` (with their literal keyword names), and paginators.

    A call with positional arguments is not a client operation (boto3 takes keyword arguments only): the SDK's
    ``store.list_sessions(project_key)`` is not ``ListSessions``.
    ``module.function(...)`` is not a client call even when the function is named like an operation (the
    client's own ``cloudwatch.get_metric_data(client, ...)`` helper), so calls on imported names are skipped.
    """
    imported: dict[Path, set[str]] = {}
    for path, node in _parsed(files):
        if path not in imported:
            imported[path] = _imported_names(ast.parse(path.read_text(encoding="utf-8")))
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if isinstance(node.func.value, ast.Name) and node.func.value.id in imported[path]:
            continue
        where = f"{path.name}:{node.lineno}"
        keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
        if node.func.attr in ops and not node.args:  # boto3 operations take keyword arguments only
            yield Call(where, node.func.attr, keywords)
        elif (  # a wrapper given the operation's name: self._call("create_event", memoryId=..., ...)
            node.func.attr != "get_paginator"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in ops
        ):
            yield Call(where, str(node.args[0].value), keywords)
        elif node.func.attr == "get_paginator" and node.args and isinstance(node.args[0], ast.Constant):
            yield Call(where, str(node.args[0].value), ())
        elif (  # client.get_paginator("op").paginate(Param=...): the parameters are the operation's
            node.func.attr == "paginate"
            and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Attribute)
            and node.func.value.func.attr == "get_paginator"
            and node.func.value.args
            and isinstance(node.func.value.args[0], ast.Constant)
        ):
            yield Call(where, str(node.func.value.args[0].value), keywords)


def problems(session: Any, files: list[Path], *, found_with: Any = None) -> list[str]:
    """What is wrong with the calls in ``files`` against ``session``'s botocore models.

    Calls are recognised by the operation names of ``found_with`` (default ``session``): checking an older
    botocore, pass the installed one, so a call of an operation the old release lacks is found, not missed.
    """
    services = sorted(services_of(files))
    models = {s: operations(session, s) for s in services if _known(session, s)}
    finder = found_with or session
    all_ops = {op for s in services if _known(finder, s) for op in operations(finder, s)}
    found: list[str] = [f"service {s} is unknown to this botocore" for s in services if s not in models]
    for call in calls_of(files, all_ops):
        candidates = [models[s][call.operation] for s in services if call.operation in models[s]]
        if not candidates:
            found.append(f"{call.where}: {call.operation} is not an operation of {services}")
            continue
        inputs = [set(op.input_shape.members) if op.input_shape else set() for op in candidates]
        if not any(set(call.keywords) <= members for members in inputs):
            unknown = sorted(set(call.keywords) - inputs[0])
            found.append(
                f"{call.where}: {call.operation}({', '.join(unknown)}) not in its input {sorted(inputs[0])}"
            )
    return found


@pytest.mark.parametrize("unit", sorted(UNITS))
def test_every_boto3_call_exists_in_the_pinned_botocore(unit: str) -> None:
    session = botocore.session.get_session()
    files = unit_files(unit)
    services = services_of(files)
    assert services, f"no boto3 clients found in {unit}: the scan is broken"
    assert list(calls_of(files, {op for s in services for op in operations(session, s)})), unit
    assert problems(session, files) == []


def test_the_scan_finds_a_misnamed_parameter_and_an_unknown_paginator(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import boto3\n"
        "c = boto3.client('bedrock-agentcore')\n"
        "c.stop_runtime_session(agentRuntimeArn='a', sessionId='s')\n"
        "c.get_paginator('list_events').paginate(memoryId='m', actorId='a', sessionId='s', Color=1)\n"
        "c.get_paginator('list_everything')\n"
        "boto3.client('sqs').send_message(QueueUrl='q', MessageBody='b', Urgent=True)\n"
        "c.create_event(memoryId='m', actorId='a', eventTimestamp=0, payload=[], sessionId='s')\n"
        "class S:\n"
        "    def w(self):\n"
        "        self._call('create_event', actorId='a', eventTimestamp=0, payload=[], extractionModes='SKIP')\n"
    )
    found = problems(botocore.session.get_session(), [module])
    assert len(found) == 5, found
    assert any("create_event(extractionModes)" in p for p in found)
    assert any("list_events(Color)" in p for p in found)
    assert any("stop_runtime_session(sessionId)" in p for p in found)
    assert any("send_message(Urgent)" in p for p in found)
    assert any("list_everything is not an operation" in p for p in found)
