"""A fake Claude Code CLI speaking the Claude Agent SDK's stream-json control protocol (stdlib only).

Spawn it through the real SDK with ``ClaudeAgentOptions(cli_path=write_fake_cli(tmp_path))`` (see
``harness/cli.py``). It answers ``initialize``, runs one scripted turn per user message on stdin and
exits promptly on stdin EOF or SIGTERM. No model, no network.

Directive grammar (directives may appear anywhere in the prompt, any number, run left to right)::

    [tool:<name> <json-object>]   call a tool, e.g. [tool:mcp__billing__invoice {"id": 7}]; args optional ({})
    [bash:<command>]              call the built-in Bash tool with {"command": <command>}
    [read:<path>]                 call the built-in Read tool with {"file_path": <path>}
    [slow:<ms>]                   sleep <ms> (interruptible) before going on; logs a ``slow`` event first
    [big:<n>]                     make the final reply exactly <n> characters (reply padded with "." or cut)
    [crash]                       emit one assistant text, then exit(1) mid-turn without a result
    [hang]                        emit one assistant text, then wait until stdin EOF / interrupt / SIGTERM
    [error]                       end the turn with result subtype error_during_execution (is_error true)
    [max_turns]                   end the turn with result subtype error_max_turns
    [max_budget]                  end the turn with result subtype error_max_budget_usd
    [api_retry:<status>]          report a failed model call the CLI retries (system ``api_retry``, attempt 1
                                  of 10, as CLI 2.1.330 sends it), then go on
    [api_error:<status> <text>]   fail the model call as the real CLI does: a synthetic assistant message
                                  (model "<synthetic>", error set, text "API Error: <status> <text>", no
                                  stream events), then result subtype success with is_error true, the same
                                  text as its result and api_error_status <status>
    [garbage]                     write one line that is not JSON to stdout, then go on
    [longline:<n>]                write one valid JSON line of about <n> bytes to stdout, then go on
    [half_emoji]                  add to the reply half of a UTF-16 pair (the lone surrogate U+D83D, escaped
                                  as ``\ud83d`` in the JSON line, as Node writes a string a tool output cut)

A malformed directive (bad JSON, unterminated) ends the turn with error_during_execution.

Turn order (as observed from the real CLI 2.1.330 against a Bedrock stand-in): ``session_state_changed``
running -> UserPromptSubmit hooks -> ``system/init`` (every turn; lists SDK MCP tools after the first
connect) -> per tool directive: assistant ``tool_use`` -> PreToolUse hooks (matcher vs tool name;
``permissionDecision`` deny/allow and ``updatedInput`` honoured; a deny skips the permission step; a deny with
``"continue": false`` ends the turn after the tool result with no further model call: result success, ``result``
"", ``stop_reason`` tool_use, ``terminal_reason`` hook_stopped, as CLI 2.1.330 does) ->
permission (``--disallowedTools`` deny; ``--allowedTools`` or ``bypassPermissions`` allow; else
``can_use_tool`` with state requires_action when ``--permission-prompt-tool stdio``, else deny) -> the tool
(SDK MCP servers from ``--mcp-config`` through ``mcp_message`` JSON-RPC: initialize,
notifications/initialized and tools/list once per server per process, then tools/call; ``Bash`` replies
``ran: <command>``, ``Read`` replies ``read: <path>``; ``Write`` {file_path, content} and ``Edit`` {file_path,
old_string, new_string, replace_all?} really change the file, relative paths against the cwd, and fail like the
real tools when the old string is missing or not unique) -> PostToolUse, or PostToolUseFailure when the tool
result is an error -> ``user`` message with the ``tool_result`` -> final assistant text -> ``result`` ->
``session_state_changed`` idle. With ``--include-partial-messages`` each assistant message is preceded by
``stream_event`` frames (message_start, content_block_start/delta/stop, message_delta, message_stop).

Final reply text (one assistant text block; the result's ``result`` carries the same text)::

    echo: <prompt> | pid=<pid> | turn=<n> | history=<k> | resumed=<true|false>
        [ | context=<first 40 chars of the first UserPromptSubmit additionalContext>]
        [ | tool=<name> <ok|error|denied>: <first 120 chars of the tool result / denial message>]...

``<prompt>`` is the prompt text with newlines replaced by spaces; ``turn`` counts user turns in this
process (1-based); ``history`` counts user prompts already in the session transcript before this one
(including ones restored with ``--resume``); ``resumed`` is true when the process loaded a transcript.

Usage: every model call reports the FIXED usage ``CALL_*_TOKENS`` below, priced at Sonnet list prices
(``CALL_COST_USD`` = $0.007245). A text turn is 1 call; each tool directive adds 1 (``num_turns`` = calls).
Like the real CLI, the result's ``usage`` covers the calls of that turn while ``total_cost_usd`` and
``modelUsage`` are cumulative over the process (``COST_IS_CUMULATIVE``). ``--max-turns`` ends the turn with
error_max_turns once the calls reach it; ``--max-budget-usd`` with error_max_budget_usd once the process
total reaches it.

Also like the real CLI: an ``interrupt`` control request ends the turn with a ``user`` message
``[Request interrupted by user]`` and a result error_during_execution (``terminal_reason``
aborted_streaming); ``--resume=<id>`` without a local transcript emits an error result ("No conversation
found with session ID: <id>") and exits 1; ``--session-id=<id>`` whose transcript already exists prints
"Error: Session ID <id> is already in use." to stderr and exits 1; stdin EOF finishes queued turns, then
exits (code 1 if the last result was an error); unknown control requests get a ``control_response`` error.

Transcript: JSON lines under ``$CLAUDE_CONFIG_DIR/projects/<sanitized realpath(cwd)>/<session_id>.jsonl``
(``~/.claude`` when unset); with ``--session-mirror`` each new entry is also sent as
``{"type": "transcript_mirror", "filePath": <that path>, "entries": [entry]}``.

Settings files: like the real CLI, without ``--setting-sources`` (or with ``project`` / ``local`` in it) the
project's ``<cwd>/.claude/settings.json`` and ``<cwd>/.claude/settings.local.json`` are read: their
``permissions.allow`` rules are added to ``--allowedTools`` and ``permissions.defaultMode`` becomes the
permission mode; ``--setting-sources ""`` reads none. ``--settings <json>`` is not interpreted.

Env: ``FAKE_CLAUDE_LOG`` (append one JSON line per event: ``start`` {pid, argv, cwd, env (CLAUDE_*,
ANTHROPIC_*, AWS_REGION, AWS_DEFAULT_REGION, DISABLE_*, ENABLE_*; names containing KEY/TOKEN/SECRET/
PASSWORD redacted), session_id, settings_files (the settings files read), permission_mode, allowed}, ``turn`` {pid, turn, prompt, session_id, resumed, history}, ``exit`` {pid,
code, reason, turns, session_id}; every line also has ``event`` and ``time``), ``FAKE_CLAUDE_START_DELAY_MS``
(sleep before reading stdin), ``CLAUDE_CODE_SDK_READS_SESSION_STATE`` (set by the SDK) /
``CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS`` (``session_state_changed`` frames; ``sdk_host_only`` for the SDK).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import sys
import threading
import time
import unicodedata
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

CALL_INPUT_TOKENS = 1000
CALL_OUTPUT_TOKENS = 200
CALL_CACHE_WRITE_TOKENS = 300
CALL_CACHE_READ_TOKENS = 400
PRICE_INPUT_PER_MTOK = 3.0
PRICE_OUTPUT_PER_MTOK = 15.0
PRICE_CACHE_WRITE_PER_MTOK = PRICE_INPUT_PER_MTOK * 1.25
PRICE_CACHE_READ_PER_MTOK = PRICE_INPUT_PER_MTOK * 0.1
CALL_COST_USD = (
    CALL_INPUT_TOKENS * PRICE_INPUT_PER_MTOK
    + CALL_OUTPUT_TOKENS * PRICE_OUTPUT_PER_MTOK
    + CALL_CACHE_WRITE_TOKENS * PRICE_CACHE_WRITE_PER_MTOK
    + CALL_CACHE_READ_TOKENS * PRICE_CACHE_READ_PER_MTOK
) / 1_000_000  # 0.007245
COST_IS_CUMULATIVE = True
CONTEXT_WINDOW = 200_000
MAX_OUTPUT_TOKENS = 32_000
INTERRUPT_TEXT = "[Request interrupted by user]"
DEFAULT_MODEL = "claude-sonnet-4-5-20250929"
VERSION = "2.1.330"
BUILTIN_TOOLS = ["Bash", "Edit", "Glob", "Grep", "Read", "Task", "TodoWrite", "WebFetch", "Write"]
VALUE_FLAGS = {
    "--output-format",
    "--input-format",
    "--system-prompt",
    "--system-prompt-file",
    "--append-system-prompt",
    "--tools",
    "--allowedTools",
    "--disallowedTools",
    "--max-turns",
    "--max-budget-usd",
    "--task-budget",
    "--model",
    "--fallback-model",
    "--betas",
    "--permission-prompt-tool",
    "--permission-mode",
    "--settings",
    "--add-dir",
    "--mcp-config",
    "--plugin-dir",
    "--thinking",
    "--max-thinking-tokens",
    "--thinking-display",
    "--effort",
    "--json-schema",
    "--resume",
    "--session-id",
    "--resume-session-at",
    "--resume-drops-turn",
    "--setting-sources",
}
LOG_ENV_PREFIXES = ("CLAUDE_", "ANTHROPIC_", "AWS_REGION", "AWS_DEFAULT_REGION", "DISABLE_", "ENABLE_")
_DIRECTIVE_RE = re.compile(
    r"\[(tool|bash|read|slow|big|crash|hang|error|max_turns|max_budget|garbage|longline|api_error|api_retry|half_emoji)(?=[:\]])"
)


class HookStopped(Exception):
    """A PreToolUse hook answered ``"continue": false``: the turn ends after the tool's result, no model call."""


class Interrupted(Exception):
    """The SDK sent an ``interrupt`` control request during the turn."""


def parse_args(argv: list[str]) -> dict[str, Any]:
    """Parse the CLI flags the SDK passes; unknown ``--x`` flags take a value unless the next is a flag."""
    opts: dict[str, Any] = {"_unknown": []}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("--"):
            continue
        name, eq, raw_value = arg.partition("=")
        value: str | bool = raw_value
        if not eq and (name in VALUE_FLAGS or name not in _BOOL_FLAGS):
            if i < len(argv) and (name in VALUE_FLAGS or not argv[i].startswith("--")):
                value, i = argv[i], i + 1
            elif name in VALUE_FLAGS:
                value = ""
            else:
                value = True
        elif not eq:
            value = True
        if name not in VALUE_FLAGS and name not in _BOOL_FLAGS:
            opts["_unknown"].append(name)
        opts[name] = value
    return opts


_BOOL_FLAGS = {
    "--verbose",
    "--continue",
    "--include-partial-messages",
    "--include-hook-events",
    "--strict-mcp-config",
    "--fork-session",
    "--session-mirror",
    "--print",
    "-p",
}


def sanitize_path(path: str) -> str:
    """The CLI's project directory name for ``path`` (non-alphanumerics -> '-', long paths hashed)."""
    sanitized = re.sub(r"[^a-zA-Z0-9]", "-", path)
    if len(sanitized) <= 200:
        return sanitized
    h = 0
    for ch in path:
        h = ((h << 5) - h + ord(ch)) & 0xFFFFFFFF
    h = abs(h - 0x100000000 if h >= 0x80000000 else h)
    digits, out = "0123456789abcdefghijklmnopqrstuvwxyz", ""
    while h:
        h, r = divmod(h, 36)
        out = digits[r] + out
    return f"{sanitized[:200]}-{out or '0'}"


def parse_directives(prompt: str) -> list[tuple[str, Any]]:
    """Return ``[(kind, arg), ...]`` in prompt order; raises ValueError on a malformed tool directive."""
    out: list[tuple[str, Any]] = []
    pos = 0
    while (m := _DIRECTIVE_RE.search(prompt, pos)) is not None:
        kind, pos = m.group(1), m.end()
        if prompt[pos] == "]":
            out.append((kind, None))
            pos += 1
            continue
        pos += 1  # the ':'
        if kind == "tool":
            name_m = re.compile(r"\s*([^\s\]]+)\s*").match(prompt, pos)
            if name_m is None:
                raise ValueError(f"tool directive without a tool name at {m.start()}")
            name, pos = name_m.group(1), name_m.end()
            args: Any = {}
            if prompt[pos] != "]":
                args, pos = json.JSONDecoder().raw_decode(prompt, pos)
                pos += len(prompt[pos:]) - len(prompt[pos:].lstrip())
                if not isinstance(args, dict) or prompt[pos : pos + 1] != "]":
                    raise ValueError(f"tool directive args must be one JSON object then ']' at {m.start()}")
            out.append((kind, (name, args)))
            pos += 1
            continue
        end = prompt.find("]", pos)
        if end < 0:
            raise ValueError(f"unterminated directive at {m.start()}")
        raw, pos = prompt[pos:end], end + 1
        out.append((kind, int(raw) if kind in ("slow", "big", "longline") else raw))
    return out


def _matches(pattern: str | None, tool: str) -> bool:
    """Hook matcher semantics: empty/None/'*' match all; 'A|B' exact names; otherwise a regex search."""
    if not pattern or pattern == "*":
        return True
    if re.fullmatch(r"[\w|]+", pattern):
        return tool in pattern.split("|")
    return re.search(pattern, tool) is not None


def _rule_matches(rules: list[str], tool: str, tool_input: dict[str, Any]) -> bool:
    """Permission rules: 'Name', 'Name(prefix:*)', 'Name(exact)', 'mcp__server' and 'mcp__server__*'."""
    for rule in rules:
        rule = rule.strip()
        if rule == tool or (tool.startswith("mcp__") and rule.endswith("__*") and tool.startswith(rule[:-1])):
            return True
        if tool.startswith("mcp__") and rule.startswith("mcp__") and tool.split("__")[1] == rule[5:]:
            return True
        paren = re.fullmatch(r"(\w+)\((.*)\)", rule)
        if paren and paren.group(1) == tool:
            subject = str(tool_input.get("command", tool_input.get("file_path", "")))
            spec = paren.group(2)
            if (spec.endswith(":*") and subject.startswith(spec[:-2])) or subject == spec:
                return True
    return False


def _split_list(value: object) -> list[str]:
    return [p for p in re.split(r"[,\s]+", value) if p] if isinstance(value, str) else []


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"


class FakeClaude:
    """One fake CLI process: a stdin reader thread plus the turn loop on the main thread."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.opts = parse_args(argv)
        self.pid = os.getpid()
        self._tool_use_id = ""  # the tool_use being run (set before each tool call)
        self.cwd = unicodedata.normalize("NFC", os.path.realpath(os.getcwd()))
        self.model = str(self.opts.get("--model") or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL)
        self.permission_mode = str(self.opts.get("--permission-mode") or "default")
        self.allowed = _split_list(self.opts.get("--allowedTools"))
        self.disallowed = _split_list(self.opts.get("--disallowedTools"))
        self.settings_files = self._load_project_settings()
        self.max_turns = int(self.opts.get("--max-turns") or 0)
        budget = self.opts.get("--max-budget-usd")
        self.max_budget = float(budget) if isinstance(budget, str) and budget else None
        self.partial = bool(self.opts.get("--include-partial-messages"))
        self.mirror = bool(self.opts.get("--session-mirror"))
        self.mcp = self._mcp_config()
        resume = self.opts.get("--resume")
        self.resume_id = resume if isinstance(resume, str) and resume else None
        sid = self.opts.get("--session-id")
        fork = bool(self.opts.get("--fork-session"))
        self.session_id = str(
            (self.resume_id if not fork else None) or (sid if isinstance(sid, str) and sid else uuid.uuid4())
        )
        config_dir = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
        self.project_dir = os.path.join(config_dir, "projects", sanitize_path(self.cwd))
        self.transcript_path = os.path.join(self.project_dir, f"{self.session_id}.jsonl")
        self.last_uuid: str | None = None
        self.user_turns = 0  # user prompts in the transcript
        self.resumed = False
        self.turn = 0
        self.total_cost = 0.0
        self.total_calls = 0
        self.last_is_error = False
        self.hooks: dict[str, list[dict[str, Any]]] = {}
        self.mcp_tools: dict[str, list[str]] = {}
        self.out_lock = threading.Lock()
        self.pending: dict[str, list[Any]] = {}
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.eof = threading.Event()
        self.interrupt = threading.Event()
        self.wake = threading.Event()  # set on eof or interrupt
        self.prompt_id: str | None = None
        state_env = os.environ.get("CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1"
        self.emit_state = state_env or bool(os.environ.get("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"))
        self.state_host_only = state_env and not os.environ.get("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS")

    # -- plumbing -------------------------------------------------------------------------------------
    def log(self, event: str, **fields: object) -> None:
        path = os.environ.get("FAKE_CLAUDE_LOG")
        if not path:
            return
        line = json.dumps({"event": event, "pid": self.pid, "time": time.time(), **fields}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def send(self, obj: dict[str, Any]) -> None:
        self.send_raw((json.dumps(obj) + "\n").encode())

    def send_raw(self, data: bytes) -> None:
        with self.out_lock:
            try:
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
            except (BrokenPipeError, ValueError):
                self.exit(0, reason="stdout closed")

    def exit(self, code: int, *, reason: str) -> None:
        self.log("exit", code=code, reason=reason, turns=self.turn, session_id=self.session_id)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)

    def _mcp_config(self) -> dict[str, dict[str, Any]]:
        raw = self.opts.get("--mcp-config")
        if not isinstance(raw, str) or not raw:
            return {}
        text = raw if raw.lstrip().startswith("{") else open(raw, encoding="utf-8").read()  # noqa: SIM115
        return dict(json.loads(text).get("mcpServers", {}))

    def reader(self) -> None:
        for line in sys.stdin.buffer:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                print(f"fake claude: bad stdin line: {line[:200]!r}", file=sys.stderr)
                continue
            kind = msg.get("type")
            if kind == "control_response":
                resp = msg.get("response", {})
                slot = self.pending.get(resp.get("request_id"))
                if slot is not None:
                    slot.append(resp)
                    slot[0].set()
            elif kind == "control_request":
                self.on_control_request(msg)
            elif kind == "user":
                self.inbox.put(msg)
        self.eof.set()
        self.wake.set()
        for slot in list(self.pending.values()):
            slot[0].set()
        self.inbox.put(None)

    def on_control_request(self, msg: dict[str, Any]) -> None:
        rid, req = msg.get("request_id"), msg.get("request") or {}
        sub = req.get("subtype")
        body: dict[str, Any] = {}
        if sub == "initialize":
            self.hooks = dict(req.get("hooks") or {})
            body = {
                "commands": [],
                "agents": [],
                "output_style": "default",
                "available_output_styles": ["default"],
                "models": [{"value": self.model, "displayName": self.model, "description": "fake"}],
                "account": {},
                "pid": self.pid,
                "fake": True,
                "hook_callback_ids": [
                    i for ms in self.hooks.values() for m in ms for i in m["hookCallbackIds"]
                ],
            }
        elif sub == "interrupt":
            self.interrupt.set()
            self.wake.set()
        elif sub == "set_permission_mode":
            self.permission_mode = str(req.get("mode"))
        elif sub == "set_model":
            self.model = str(req.get("model") or DEFAULT_MODEL)
        elif sub == "mcp_status":
            body = {"mcpServers": [{"name": n, "status": "connected"} for n in self.mcp]}
        else:
            err = f"Unsupported control request subtype: {sub}"
            self.send(
                {
                    "type": "control_response",
                    "response": {"subtype": "error", "request_id": rid, "error": err},
                }
            )
            return
        self.send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": rid, "response": body},
            }
        )

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send a control_request to the SDK and wait for its reply; raises RuntimeError on error/EOF."""
        rid = uuid.uuid4().hex
        slot: list[Any] = [threading.Event()]
        self.pending[rid] = slot
        self.send({"type": "control_request", "request_id": rid, "request": payload})
        slot[0].wait()
        self.pending.pop(rid, None)
        if len(slot) < 2:
            raise RuntimeError("stdin closed before the SDK answered")
        resp: dict[str, Any] = slot[1]
        if resp.get("subtype") == "error":
            raise RuntimeError(str(resp.get("error")))
        return dict(resp.get("response") or {})

    def wait(self, seconds: float | None) -> None:
        """Sleep ``seconds`` or, for None, until stdin EOF (then exit); raise Interrupted on interrupt."""
        if seconds is not None:
            self.interrupt.wait(seconds)
        else:
            self.wake.wait()
        if self.interrupt.is_set():
            raise Interrupted
        if seconds is None:
            self.exit(0, reason="stdin EOF during hang")

    # -- transcript -----------------------------------------------------------------------------------
    def _load_project_settings(self) -> list[str]:
        """Read the project's settings files the way the CLI's setting sources say (see the module docstring)."""
        sources = self.opts.get("--setting-sources")
        wanted = ["project", "local"] if sources is None else _split_list(sources)
        read = []
        for source, name in (("project", "settings.json"), ("local", "settings.local.json")):
            path = os.path.join(self.cwd, ".claude", name)
            if source not in wanted or not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as fh:
                permissions = (json.load(fh) or {}).get("permissions") or {}
            self.allowed += [str(rule) for rule in permissions.get("allow") or []]
            if permissions.get("defaultMode"):
                self.permission_mode = str(permissions["defaultMode"])
            read.append(path)
        return read

    def load_transcript(self) -> bool:
        if not os.path.exists(self.transcript_path):
            return False
        with open(self.transcript_path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    entry = json.loads(line)
                    if entry.get("uuid"):
                        self.last_uuid = entry["uuid"]
                    if _is_prompt(entry):
                        self.user_turns += 1
        return True

    def record(self, kind: str, message: dict[str, Any], **extra: object) -> str:
        entry_uuid = str(uuid.uuid4())
        entry = {
            "parentUuid": self.last_uuid,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": "",
            "type": kind,
            "message": message,
            "uuid": entry_uuid,
            "timestamp": _now(),
            **extra,
        }
        self.last_uuid = entry_uuid
        os.makedirs(self.project_dir, exist_ok=True)
        with open(self.transcript_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
        if self.mirror:
            self.send({"type": "transcript_mirror", "filePath": self.transcript_path, "entries": [entry]})
        return entry_uuid

    # -- hooks, permission, tools ---------------------------------------------------------------------
    def hook_base(self, event: str) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
            "prompt_id": self.prompt_id,
            "permission_mode": self.permission_mode,
            "hook_event_name": event,
        }

    def run_hooks(self, event: str, target: str | None, data: dict[str, Any]) -> list[dict[str, Any]]:
        outputs = []
        for matcher in self.hooks.get(event) or []:
            if target is not None and not _matches(matcher.get("matcher"), target):
                continue
            for cb in matcher.get("hookCallbackIds") or []:
                payload = {
                    "subtype": "hook_callback",
                    "callback_id": cb,
                    "input": {**self.hook_base(event), **data},
                }
                payload["tool_use_id"] = data.get("tool_use_id") or str(uuid.uuid4())
                try:
                    outputs.append(self.request(payload))
                except RuntimeError as exc:
                    print(f"fake claude: hook {cb} failed: {exc}", file=sys.stderr)
        return outputs

    def ensure_mcp(self, server: str) -> None:
        if server in self.mcp_tools:
            return
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "claude-code", "version": VERSION},
            },
        }
        self.mcp_call(server, init)
        self.mcp_call(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = self.mcp_call(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        tools = listed.get("result", {}).get("tools", [])
        self.mcp_tools[server] = [t["name"] for t in tools]

    def mcp_call(self, server: str, message: dict[str, Any]) -> dict[str, Any]:
        resp = self.request({"subtype": "mcp_message", "server_name": server, "message": message})
        return dict(resp.get("mcp_response") or {})

    def execute(self, name: str, args: dict[str, Any]) -> tuple[object, str, bool]:
        """Run a tool; return (tool_result content, summary text, is_error)."""
        if name == "Bash":
            text = f"ran: {args.get('command', '')}"
            return text, text, False
        if name == "Read":
            text = f"read: {args.get('file_path', '')}"
            return text, text, False
        if name in ("Write", "Edit"):
            return self.edit_file(name, args)
        parts = name.split("__")
        if len(parts) >= 3 and parts[0] == "mcp" and parts[1] in self.mcp:
            server, tool = parts[1], "__".join(parts[2:])
            if self.mcp[server].get("type") != "sdk":
                msg = f"fake CLI cannot reach MCP server {server!r} (type {self.mcp[server].get('type')})"
                return msg, msg, True
            try:
                self.ensure_mcp(server)
                rpc = {"jsonrpc": "2.0", "id": 2 + self.total_calls, "method": "tools/call"}
                resp = self.mcp_call(server, {**rpc, "params": {"name": tool, "arguments": args}})
            except RuntimeError as exc:
                return str(exc), str(exc), True
            if "error" in resp:
                msg = str(resp["error"].get("message"))
                return msg, msg, True
            result = resp.get("result") or {}
            content = result.get("content") or []
            text = " ".join(str(c.get("text", "")) for c in content if c.get("type") == "text")
            return content, text, bool(result.get("isError"))
        msg = f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>"
        return msg, msg, True

    def edit_file(self, name: str, args: dict[str, Any]) -> tuple[object, str, bool]:
        """The file tools, for real: ``Write`` creates or replaces a file, ``Edit`` replaces a unique string."""
        path = os.path.join(self.cwd, str(args.get("file_path", "")))
        try:
            if name == "Write":
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(str(args.get("content", "")))
                text = f"File created successfully at: {path}"
                return text, text, False
            with open(path, encoding="utf-8") as fh:
                old = fh.read()
            before, after = str(args.get("old_string", "")), str(args.get("new_string", ""))
            count = old.count(before) if before else 0
            if count == 0 or (count > 1 and not args.get("replace_all")):
                msg = f"<tool_use_error>String to replace {'not found' if not count else 'is not unique'}</tool_use_error>"
                return msg, msg, True
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(
                    old.replace(before, after) if args.get("replace_all") else old.replace(before, after, 1)
                )
        except OSError as exc:
            msg = f"<tool_use_error>{exc}</tool_use_error>"
            return msg, msg, True
        text = f"The file {path} has been updated."
        return text, text, False

    def use_tool(self, name: str, args: dict[str, Any], denials: list[dict[str, Any]]) -> tuple[str, str]:
        """Full tool flow after the tool_use was emitted; returns (status, summary text)."""
        tool_use_id = self._tool_use_id
        decision: tuple[Any, ...] | None = None
        stop = False
        for out in self.run_hooks(
            "PreToolUse", name, {"tool_name": name, "tool_input": args, "tool_use_id": tool_use_id}
        ):
            spec = out.get("hookSpecificOutput") or {}
            stop = stop or out.get("continue") is False
            if out.get("decision") == "block" or spec.get("permissionDecision") == "deny":
                decision = (
                    "deny",
                    str(spec.get("permissionDecisionReason") or out.get("reason") or "Blocked by hook"),
                )
                break
            if spec.get("permissionDecision") == "allow":
                decision = ("allow", "")
            if isinstance(spec.get("updatedInput"), dict):
                args = dict(spec["updatedInput"])
        if decision is None:
            decision = self.permission(name, args, tool_use_id)
            if decision[0] == "allow" and isinstance(decision[2], dict):
                args = dict(decision[2])
        if decision[0] == "deny":
            denials.append({"tool_name": name, "tool_use_id": tool_use_id, "tool_input": args})
            self.tool_result(tool_use_id, decision[1], True, decision[1])
            if len(decision) > 2 and decision[2] == "interrupt":
                raise Interrupted
            if stop:
                raise HookStopped
            return "denied", decision[1]
        started = time.monotonic()
        content, text, is_error = self.execute(name, args)
        duration = int((time.monotonic() - started) * 1000)
        base = {"tool_name": name, "tool_input": args, "tool_use_id": tool_use_id, "duration_ms": duration}
        if is_error:
            self.run_hooks("PostToolUseFailure", name, {**base, "error": text, "is_interrupt": False})
        else:
            self.run_hooks("PostToolUse", name, {**base, "tool_response": content})
        self.tool_result(tool_use_id, content, is_error, text)
        return ("error" if is_error else "ok"), text

    def permission(self, name: str, args: dict[str, Any], tool_use_id: str) -> tuple[Any, ...]:
        if _rule_matches(self.disallowed, name, args):
            return ("deny", f"Permission to use {name} has been denied.")
        if self.permission_mode == "bypassPermissions" or _rule_matches(self.allowed, name, args):
            return ("allow", "", None)
        if self.opts.get("--permission-prompt-tool") != "stdio":
            return ("deny", f"Claude requested permissions to use {name}, but you haven't granted it yet.")
        payload: dict[str, Any] = {"subtype": "can_use_tool", "tool_name": name}
        if name.startswith("mcp__"):
            payload["mcp_server"] = {"name": name.split("__")[1], "source": "sdk"}
        suggestion = {"type": "addRules", "rules": [{"toolName": name}], "behavior": "allow"}
        payload.update(
            display_name=name.split("__")[-1].capitalize(),
            input=args,
            permission_suggestions=[{**suggestion, "destination": "localSettings"}],
            tool_use_id=tool_use_id,
        )
        self.session_state("requires_action")
        try:
            resp = self.request(payload)
        except RuntimeError as exc:
            return ("deny", f"Permission check failed: {exc}")
        finally:
            self.session_state("running")
        if resp.get("behavior") == "allow":
            return ("allow", "", resp.get("updatedInput"))
        return ("deny", str(resp.get("message") or "denied"), "interrupt" if resp.get("interrupt") else None)

    def tool_result(self, tool_use_id: str, content: object, is_error: bool, text: str) -> None:
        block: dict[str, Any] = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        message = {"role": "user", "content": [block]}
        entry_uuid = self.record("user", message, toolUseResult=text)
        self.send({**self._envelope("user", message), "uuid": entry_uuid, "tool_use_result": text})

    # -- model calls and results ----------------------------------------------------------------------
    def model_call(self, blocks: list[dict[str, Any]], stop_reason: str) -> None:
        if (
            self.interrupt.is_set()
        ):  # like the real CLI: an interrupt stops the turn before the next model call
            raise Interrupted
        self.calls += 1
        self.total_calls += 1
        self.total_cost += CALL_COST_USD
        usage = {
            "input_tokens": CALL_INPUT_TOKENS,
            "output_tokens": CALL_OUTPUT_TOKENS,
            "cache_creation_input_tokens": CALL_CACHE_WRITE_TOKENS,
            "cache_read_input_tokens": CALL_CACHE_READ_TOKENS,
            "service_tier": "standard",
        }
        msg_id = f"msg_fake_{uuid.uuid4().hex[:20]}"
        message = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": blocks,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        if self.partial:
            self.stream_events(message)
        entry_uuid = self.record("assistant", message, requestId=f"req_fake_{self.total_calls}")
        self.send({**self._envelope("assistant", message), "uuid": entry_uuid})

    def api_error(self, status: int, detail: str) -> None:
        """A failed model call as CLI 2.1.330 reports it (seen against the Bedrock stand-in answering 400): an
        assistant message the CLI makes up itself, then an error result carrying the same text."""
        text = f"API Error: {status} {detail}".rstrip()
        message = {
            "id": f"msg_fake_{uuid.uuid4().hex[:20]}",
            "type": "message",
            "role": "assistant",
            "model": "<synthetic>",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "stop_sequence",
            "stop_sequence": "",
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        entry_uuid = self.record("assistant", message)
        self.send({**self._envelope("assistant", message), "error": "unknown", "uuid": entry_uuid})
        self.result("success", text, [], is_error=True, api_error_status=status)

    def stream_events(self, message: dict[str, Any]) -> None:
        def ev(event: dict[str, Any]) -> None:
            self.send(
                {
                    "type": "stream_event",
                    "uuid": str(uuid.uuid4()),
                    "session_id": self.session_id,
                    "event": event,
                    "parent_tool_use_id": None,
                }
            )

        start_usage = {**message["usage"], "output_tokens": 1}
        ev(
            {
                "type": "message_start",
                "message": {**message, "content": [], "stop_reason": None, "usage": start_usage},
            }
        )
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                text = block["text"]
                ev(
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    }
                )
                size = max(64, len(text) // 32 + 1)
                for i in range(0, len(text), size):
                    ev(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": text[i : i + size]},
                        }
                    )
            else:
                ev({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                ev({"type": "content_block_delta", "index": index, "delta": delta})
            ev({"type": "content_block_stop", "index": index})
        stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        ev({"type": "message_delta", "delta": stop, "usage": {"output_tokens": CALL_OUTPUT_TOKENS}})
        ev({"type": "message_stop"})

    def result(
        self,
        subtype: str,
        text: str | None,
        denials: list[dict[str, Any]],
        errors: list[str] | None = None,
        *,
        aborted: bool = False,
        is_error: bool | None = None,
        api_error_status: int | None = None,
        terminal_reason: str | None = None,
        stop_reason: str | None = None,
    ) -> None:
        calls = self.calls
        total_calls = self.total_calls if COST_IS_CUMULATIVE else calls
        is_error = subtype != "success" if is_error is None else is_error
        msg: dict[str, Any] = {
            "type": "result",
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": int((time.monotonic() - self.turn_started) * 1000),
            "duration_api_ms": calls * 5,
            "num_turns": calls,
            "session_id": self.session_id,
            "total_cost_usd": round(CALL_COST_USD * total_calls, 9),
            "stop_reason": "end_turn" if not is_error else None,
            "usage": {
                "input_tokens": CALL_INPUT_TOKENS * calls,
                "cache_creation_input_tokens": CALL_CACHE_WRITE_TOKENS * calls,
                "cache_read_input_tokens": CALL_CACHE_READ_TOKENS * calls,
                "output_tokens": CALL_OUTPUT_TOKENS * calls,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
            },
            "modelUsage": {}
            if not total_calls
            else {
                self.model: {
                    "inputTokens": CALL_INPUT_TOKENS * total_calls,
                    "outputTokens": CALL_OUTPUT_TOKENS * total_calls,
                    "cacheReadInputTokens": CALL_CACHE_READ_TOKENS * total_calls,
                    "cacheCreationInputTokens": CALL_CACHE_WRITE_TOKENS * total_calls,
                    "webSearchRequests": 0,
                    "costUSD": round(CALL_COST_USD * total_calls, 9),
                    "contextWindow": CONTEXT_WINDOW,
                    "maxOutputTokens": MAX_OUTPUT_TOKENS,
                    "provider": "bedrock"
                    if os.environ.get("CLAUDE_CODE_USE_BEDROCK") == "1"
                    else "firstParty",
                    "costBasis": "list",
                }
            },
            "permission_denials": denials,
            "uuid": str(uuid.uuid4()),
        }
        if text is not None:
            msg["result"] = text
        if aborted:
            msg["terminal_reason"] = "aborted_streaming"
        if terminal_reason is not None:
            msg["terminal_reason"] = terminal_reason
        if stop_reason is not None:
            msg["stop_reason"] = stop_reason
        if errors:
            msg["errors"] = errors
        if api_error_status is not None:
            msg["api_error_status"] = api_error_status
        self.last_is_error = is_error
        self.send(msg)

    def _envelope(self, kind: str, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": kind, "message": message, "parent_tool_use_id": None, "session_id": self.session_id}

    def session_state(self, state: str) -> None:
        if self.emit_state:
            frame: dict[str, Any] = {
                "type": "system",
                "subtype": "session_state_changed",
                "state": state,
                "session_id": self.session_id,
            }
            if self.state_host_only:
                frame["sdk_host_only"] = True
            self.send({**frame, "uuid": str(uuid.uuid4())})

    def system_init(self) -> None:
        tools = _split_list(self.opts.get("--tools")) if "--tools" in self.opts else list(BUILTIN_TOOLS)
        servers = []
        for name, cfg in self.mcp.items():
            servers.append({"name": name, "status": "connected" if cfg.get("type") == "sdk" else "pending"})
            tools += [f"mcp__{name}__{t}" for t in self.mcp_tools.get(name, [])]
        self.send(
            {
                "type": "system",
                "subtype": "init",
                "cwd": self.cwd,
                "session_id": self.session_id,
                "tools": tools,
                "mcp_servers": servers,
                "model": self.model,
                "permissionMode": self.permission_mode,
                "slash_commands": [],
                "apiKeySource": "none",
                "claude_code_version": VERSION,
                "output_style": "default",
                "agents": [],
                "skills": [],
                "plugins": [],
                "uuid": str(uuid.uuid4()),
                "fake": True,
            }
        )

    # -- turns ----------------------------------------------------------------------------------------
    def run_turn(self, msg: dict[str, Any]) -> None:
        self.turn_started = time.monotonic()
        self.turn += 1
        self.calls = 0
        self.interrupt.clear()
        if not self.eof.is_set():
            self.wake.clear()
        content = msg.get("message", {}).get("content", "")
        prompt = (
            content
            if isinstance(content, str)
            else " ".join(
                str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
            )
        )
        history = self.user_turns
        self.log(
            "turn",
            turn=self.turn,
            prompt=prompt,
            session_id=self.session_id,
            resumed=self.resumed,
            history=history,
        )
        for server, cfg in self.mcp.items():
            if cfg.get("type") == "sdk":
                try:
                    self.ensure_mcp(server)
                except RuntimeError as exc:
                    print(f"fake claude: MCP server {server} failed: {exc}", file=sys.stderr)
        self.prompt_id = str(uuid.uuid4())
        self.session_state("running")
        self.record("user", {"role": "user", "content": content}, promptId=self.prompt_id)
        self.user_turns += 1
        denials: list[dict[str, Any]] = []
        context, blocked = "", None
        for out in self.run_hooks("UserPromptSubmit", None, {"prompt": prompt}):
            spec = out.get("hookSpecificOutput") or {}
            if out.get("decision") == "block":
                blocked = str(out.get("reason", ""))
            if not context and spec.get("additionalContext"):
                context = str(spec["additionalContext"])
        self.system_init()
        try:
            if blocked is not None:
                self.result("success", f"blocked: {blocked}", denials)
            else:
                self._turn_body(prompt, history, context, denials)
        except Interrupted:
            message = {"role": "user", "content": [{"type": "text", "text": INTERRUPT_TEXT}]}
            entry_uuid = self.record("user", message)
            self.send({**self._envelope("user", message), "uuid": entry_uuid})
            self.result("error_during_execution", None, denials, [INTERRUPT_TEXT], aborted=True)
        self.session_state("idle")

    def _turn_body(self, prompt: str, history: int, context: str, denials: list[dict[str, Any]]) -> None:
        try:
            directives = parse_directives(prompt)
        except (ValueError, json.JSONDecodeError) as exc:
            self.result("error_during_execution", None, denials, [f"fake claude: bad directive: {exc}"])
            return
        flat = prompt.replace("\n", " ").strip()
        resumed = str(self.resumed).lower()
        reply = f"echo: {flat} | pid={self.pid} | turn={self.turn} | history={history} | resumed={resumed}"
        if context:
            reply += f" | context={context[:40]}"
        big = None
        for kind, arg in directives:
            if kind == "slow":
                self.log("slow", ms=int(arg), prompt=prompt)  # tests wait for this, not for time to pass
                self.wait(int(arg) / 1000)
            elif kind in ("crash", "hang"):
                self.model_call([{"type": "text", "text": f"about to {kind} (pid={self.pid})"}], "end_turn")
                if kind == "crash":
                    self.exit(1, reason="crash directive")
                self.wait(None)
            elif kind in ("error", "max_turns", "max_budget"):
                sub = {"error": "error_during_execution", "max_turns": "error_max_turns"}.get(
                    kind, "error_max_budget_usd"
                )
                self.result(sub, None, denials, [f"fake claude: {kind} requested by directive"])
                return
            elif kind == "api_retry":
                retry_status = int(arg)
                self.send(
                    {
                        "type": "system",
                        "subtype": "api_retry",
                        "attempt": 1,
                        "max_retries": 10,
                        "retry_delay_ms": 549,
                        "error_status": retry_status,
                        "error": "rate_limit" if retry_status == 429 else "server_error",
                        "session_id": self.session_id,
                        "uuid": str(uuid.uuid4()),
                    }
                )
            elif kind == "api_error":
                error_status, _, detail = str(arg).partition(" ")
                self.api_error(int(error_status), detail)
                return
            elif kind == "big":
                big = int(arg)
            elif kind == "half_emoji":
                reply += "\ud83d"
            elif kind == "garbage":  # a line that is not JSON, then the turn goes on
                self.send_raw(b"this is not json {\n")
            elif kind == "longline":  # one valid JSON line of <n> bytes (a huge tool result, say)
                pad = max(0, int(arg) - 64)
                self.send({"type": "system", "subtype": "fake_padding", "pad": "x" * pad})
            else:
                name, args = (
                    arg
                    if kind == "tool"
                    else (("Bash", {"command": arg}) if kind == "bash" else ("Read", {"file_path": arg}))
                )
                if self.max_turns and self.calls >= self.max_turns:
                    self.result(
                        "error_max_turns",
                        None,
                        denials,
                        [f"Reached maximum number of turns ({self.max_turns})"],
                    )
                    return
                self._tool_use_id = f"toolu_fake_{uuid.uuid4().hex[:20]}"
                self.model_call(
                    [{"type": "tool_use", "id": self._tool_use_id, "name": name, "input": args}], "tool_use"
                )
                if self.over_budget(denials):
                    return
                try:
                    status, text = self.use_tool(name, args, denials)
                except HookStopped:  # like the real CLI: no further model call, an empty success result
                    self.result(
                        "success", "", denials, terminal_reason="hook_stopped", stop_reason="tool_use"
                    )
                    return
                reply += f" | tool={name} {status}: {text[:120]}"
        if self.max_turns and self.calls >= self.max_turns:
            self.result(
                "error_max_turns", None, denials, [f"Reached maximum number of turns ({self.max_turns})"]
            )
            return
        if big is not None:
            reply = (reply + "." * big)[:big]
        self.model_call([{"type": "text", "text": reply}], "end_turn")
        if not self.over_budget(denials):
            self.result("success", reply, denials)

    def over_budget(self, denials: list[dict[str, Any]]) -> bool:
        if self.max_budget is None or self.total_cost < self.max_budget:
            return False
        self.result("error_max_budget_usd", None, denials, [f"Reached maximum budget (${self.max_budget})"])
        return True

    def main(self) -> int:
        self.log(
            "start",
            argv=self.argv,
            # the parsed flags, so a test reads an option whatever its spelling (``--flag=value`` or two args)
            opts={k: v for k, v in self.opts.items() if k != "_unknown"},
            cwd=self.cwd,
            env=_selected_env(),
            session_id=self.session_id,
            settings_files=self.settings_files,
            permission_mode=self.permission_mode,
            allowed=self.allowed,
        )
        signal.signal(signal.SIGTERM, lambda *_: self.exit(143, reason="SIGTERM"))
        delay = os.environ.get("FAKE_CLAUDE_START_DELAY_MS")
        if delay:
            time.sleep(int(delay) / 1000)
        if self.resume_id:
            self.resumed = self.load_transcript()
            if not self.resumed:
                self.turn_started, self.calls = time.monotonic(), 0
                self.result(
                    "error_during_execution",
                    None,
                    [],
                    [f"No conversation found with session ID: {self.resume_id}"],
                )
                self.exit(1, reason="resume transcript not found")
        elif isinstance(self.opts.get("--session-id"), str) and os.path.exists(self.transcript_path):
            print(f"Error: Session ID {self.session_id} is already in use.", file=sys.stderr)
            self.exit(1, reason="session id already in use")
        threading.Thread(target=self.reader, daemon=True).start()
        while (msg := self.inbox.get()) is not None:
            self.run_turn(msg)
        self.exit(1 if self.last_is_error else 0, reason="stdin EOF")
        return 0


def _is_prompt(entry: dict[str, Any]) -> bool:
    if entry.get("type") != "user" or entry.get("isSidechain"):
        return False
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return not content.startswith(INTERRUPT_TEXT)
    return isinstance(content, list) and not any(
        isinstance(b, dict)
        and (b.get("type") == "tool_result" or str(b.get("text", "")).startswith(INTERRUPT_TEXT))
        for b in content
    )


def _selected_env() -> dict[str, str]:
    out = {}
    for key, value in os.environ.items():
        if key.startswith(LOG_ENV_PREFIXES):
            secret = any(s in key for s in ("KEY", "TOKEN", "SECRET", "PASSWORD"))
            out[key] = "<redacted>" if secret else value
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the fake CLI with ``argv`` (default ``sys.argv[1:]``)."""
    return FakeClaude(list(sys.argv[1:] if argv is None else argv)).main()


if __name__ == "__main__":
    sys.exit(main())
