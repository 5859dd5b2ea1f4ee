"""A small POSIX shell command parser for the permission policy.

It does not execute anything. It splits a command line into the *simple commands* a shell would run —
across pipelines, ``;``, ``&&``, ``||``, ``&``, subshells ``( … )``, brace groups, command substitutions
``$( … )`` and backticks (also inside double quotes), and process substitutions ``<( … )`` — and reports
the constructs a policy cannot reason about (here-docs, arithmetic, parameter expansion with commands) as
:class:`UnsupportedShell`, so the policy fails closed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class UnsupportedShell(ValueError):
    """The command uses shell syntax the policy cannot analyse safely."""


@dataclass
class SimpleCommand:
    """One command a shell would execute: its words, and its redirections as ``(operator, target)``."""

    words: list[str] = field(default_factory=list)
    redirects: list[tuple[str, str]] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    globbed: set[int] = field(default_factory=set)
    """Indexes of ``words`` with unquoted glob characters (``*``, ``?``, ``[``): the shell expands them."""

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""


#: Placeholders for expansions in parsed words. They contain a NUL, which literal shell text cannot.
VAR = "\x00VAR"
SUBST = "\x00SUBST"

_SEPARATORS = (";", "&&", "||", "|&", "|", "&", "\n")
_REDIRECTS = (">>", ">&", "<&", "<>", ">|", "&>", "<", ">")


def parse_commands(command: str, *, _depth: int = 0) -> list[SimpleCommand]:
    """Every simple command in ``command``, including those inside substitutions and subshells."""
    if _depth > 8:
        raise UnsupportedShell("command nesting is too deep")
    parser = _Parser(command, _depth)
    parser.run()
    return parser.commands


class _Parser:
    def __init__(self, text: str, depth: int) -> None:
        self.text = text
        self.depth = depth
        self.pos = 0
        self.commands: list[SimpleCommand] = []
        self.current = SimpleCommand()
        self.pending_redirect: str | None = None
        self._glob = False  # the word being read has an unquoted glob character

    # -- driver ----------------------------------------------------------------------------------------------

    def run(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t":
                self.pos += 1
            elif self.text.startswith("\\\n", self.pos):  # line continuation: the shell drops both
                self.pos += 2
            elif ch == "#" and self._at_word_start():
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif ch in "()":
                # Subshell or group boundaries: both sides are separate command lists.
                self._end_command()
                self.pos += 1
            elif ch in "{}" and self._standalone(ch):
                self._end_command()
                self.pos += 1
            elif self._match_any(_SEPARATORS):
                self._end_command()
            elif ch in "<>" and self.text.startswith(("<(", ">("), self.pos):
                inner, self.pos = self._balanced(self.pos + 2, "(", ")")
                self.commands.extend(parse_commands(inner, _depth=self.depth + 1))
                self._add_word(SUBST)
            elif self._redirect_operator():
                pass
            else:
                self._add_word(self._read_word())
        self._end_command()
        if self.pending_redirect:
            raise UnsupportedShell(f"redirection '{self.pending_redirect}' has no target")

    # -- pieces ----------------------------------------------------------------------------------------------

    def _at_word_start(self) -> bool:
        return self.pos == 0 or self.text[self.pos - 1] in " \t\n;&|()"

    def _standalone(self, ch: str) -> bool:
        nxt = self.text[self.pos + 1 : self.pos + 2]
        return self._at_word_start() and (nxt == "" or nxt in " \t\n;")

    def _match_any(self, tokens: tuple[str, ...]) -> bool:
        for token in tokens:
            if self.text.startswith(token, self.pos):
                self.pos += len(token)
                return True
        return False

    def _redirect_operator(self) -> bool:
        start = self.pos
        # Optional file-descriptor number before the operator (2>, 1>>, …).
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if self.text.startswith("<<", self.pos):
            raise UnsupportedShell("here-documents are not supported; pass the text as an argument")
        for op in _REDIRECTS:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                self.pending_redirect = op
                return True
        self.pos = start
        return False

    def _add_word(self, word: str) -> None:
        globbed, self._glob = self._glob, False
        if globbed and (self.pending_redirect is not None or not self.current.words):
            raise UnsupportedShell("glob patterns are allowed only in arguments")
        if globbed:
            self.current.globbed.add(len(self.current.words))
        if self.pending_redirect is not None:
            self.current.redirects.append((self.pending_redirect, word))
            self.pending_redirect = None
        elif not self.current.words and _is_assignment(word):
            self.current.assignments.append(word)
        else:
            self.current.words.append(word)

    def _end_command(self) -> None:
        if self.pending_redirect is not None:
            raise UnsupportedShell(f"redirection '{self.pending_redirect}' has no target")
        if self.current.words or self.current.redirects or self.current.assignments:
            self.commands.append(self.current)
        self.current = SimpleCommand()

    def _read_word(self) -> str:
        text = self.text
        out: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\n;&|()<>":
                break
            if ch == "\\":
                if text[self.pos + 1 : self.pos + 2] != "\n":  # backslash-newline is removed
                    out.append(text[self.pos + 1 : self.pos + 2])
                self.pos += 2
            elif ch == "{" and self._brace_expansion():
                raise UnsupportedShell(
                    "brace expansion ({a,b} or {1..9}) is not supported; write the words out"
                )
            elif ch == "'":
                end = text.find("'", self.pos + 1)
                if end < 0:
                    raise UnsupportedShell("unterminated single quote")
                out.append(text[self.pos + 1 : end])
                self.pos = end + 1
            elif ch == '"':
                out.append(self._double_quoted())
            elif ch in "`$":
                out.append(self._expansion(ch))
            else:
                if ch in "*?[":
                    self._glob = True
                out.append(ch)
                self.pos += 1
        return "".join(out)

    def _brace_expansion(self) -> bool:
        """Whether the unquoted ``{`` at ``self.pos`` opens a brace expansion (a ``,`` or ``..`` before ``}``)."""
        end = self.text.find("}", self.pos)
        if end < 0:
            return False
        body = self.text[self.pos + 1 : end]
        return not any(c in body for c in " \t\n;&|") and ("," in body or ".." in body)

    def _double_quoted(self) -> str:
        text = self.text
        self.pos += 1
        out: list[str] = []
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == '"':
                self.pos += 1
                return "".join(out)
            if ch == "\\" and text[self.pos + 1 : self.pos + 2] in ('"', "\\", "$", "`", "\n"):
                if text[self.pos + 1] != "\n":  # backslash-newline is removed
                    out.append(text[self.pos + 1])
                self.pos += 2
            elif ch in "`$":
                out.append(self._expansion(ch))
            else:
                out.append(ch)
                self.pos += 1
        raise UnsupportedShell("unterminated double quote")

    def _expansion(self, ch: str) -> str:
        """A backtick substitution or a ``$`` expansion at ``self.pos`` (also valid inside double quotes)."""
        if ch == "`":
            inner, self.pos = self._backtick(self.pos + 1)
            self.commands.extend(parse_commands(inner, _depth=self.depth + 1))
            return SUBST
        return self._dollar()

    def _dollar(self) -> str:
        text = self.text
        if text.startswith(("$'", '$"'), self.pos):
            raise UnsupportedShell("$'...' and $\"...\" quoting are not supported; use plain quotes")
        if text.startswith("$((", self.pos):
            raise UnsupportedShell("arithmetic expansion is not supported")
        if text.startswith("$(", self.pos):
            inner, self.pos = self._balanced(self.pos + 2, "(", ")")
            self.commands.extend(parse_commands(inner, _depth=self.depth + 1))
            return SUBST
        if text.startswith("${", self.pos):
            inner, self.pos = self._balanced(self.pos + 2, "{", "}")
            if any(c in inner for c in "$`(:=?/#%"):
                raise UnsupportedShell("parameter expansion with operators is not supported")
            return VAR
        self.pos += 1
        start = self.pos
        while self.pos < len(text) and (text[self.pos].isalnum() or text[self.pos] == "_"):
            self.pos += 1
        if self.pos == start and self.pos < len(text) and text[self.pos] in "?$!#@*-0123456789":
            self.pos += 1
        return VAR if self.pos > start else "$"

    def _balanced(self, start: int, opener: str, closer: str) -> tuple[str, int]:
        depth, i, quote = 1, start, ""
        text = self.text
        while i < len(text):
            ch = text[i]
            if quote:
                if ch == "\\" and quote == '"':
                    i += 2
                    continue
                if ch == quote:
                    quote = ""
            elif ch in "'\"":
                quote = ch
            elif ch == "\\":
                i += 2
                continue
            elif ch == opener:
                depth += 1
            elif ch == closer:
                depth -= 1
                if depth == 0:
                    return text[start:i], i + 1
            i += 1
        raise UnsupportedShell(f"unbalanced '{opener}'")

    def _backtick(self, start: int) -> tuple[str, int]:
        end = self.text.find("`", start)
        if end < 0:
            raise UnsupportedShell("unterminated backtick")
        return self.text[start:end], end + 1


def _is_assignment(word: str) -> bool:
    name, sep, _ = word.partition("=")
    return bool(sep) and name.isidentifier()
