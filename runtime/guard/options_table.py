"""Per-program option tables: the options each allowlisted program may take. Anything else is refused.

The policy used to list forbidden options; a list of forbidden things always misses one (``sort --files0-from=-``,
``date -f``, ``file -f``, ``uniq``'s output operand). Here each program names what it MAY take, fail closed:

- short options are single letters, clustered (``-la``); a letter that takes a value takes the rest of the
  cluster or the next word (``-n5``, ``-n 5``); a letter not in the table refuses the whole command;
- long options must be spelled in full (no GNU abbreviations), ``--name=value`` or ``--name value``;
- ``--`` ends the options; ``-`` is an operand (stdin);
- ``max_operands`` bounds the operands (``uniq``'s second operand is an output file);
- values of options in ``path_values`` are paths, checked by the policy like operands.

``find`` takes whole-word predicates. ``git`` keeps its subcommand rules in :mod:`runtime.guard.policy`.
Programs without a table (interpreters under the ``developer`` profile) are accepted only when the policy is
told they run inside the OS sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class OptionSpec:
    flags: str = ""
    """Short options without a value."""
    valued: str = ""
    """Short options that take a value."""
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()
    path_values: frozenset[str] = frozenset()
    """Options (``-f`` / ``--file``) whose value is a path."""
    max_operands: int | None = None
    whole_word: bool = False
    """Options are whole words with one dash (``find -name``); ``valued`` then holds nothing."""
    word_flags: frozenset[str] = frozenset()
    word_valued: frozenset[str] = frozenset()
    refuse_hint: Mapping[str, str] = field(default_factory=dict)


def _w(*names: str) -> frozenset[str]:
    return frozenset(names)


_HEAD_TAIL_LONG = _w("--quiet", "--silent", "--verbose", "--zero-terminated")

OPTION_TABLES: Mapping[str, OptionSpec] = {
    "ls": OptionSpec(
        flags="aAlhRrtS1dFinpsUXcugGoQCmLHk",
        valued="wIT",
        long_flags=_w(
            "--all", "--almost-all", "--human-readable", "--recursive", "--reverse", "--classify", "--directory",
            "--full-time", "--group-directories-first", "--no-group", "--inode", "--size", "--literal",
            "--numeric-uid-gid", "--dereference", "--si",
        ),
        long_valued=_w(
            "--color", "--sort", "--time", "--quoting-style", "--indicator-style", "--time-style", "--format",
            "--width", "--ignore", "--hide", "--block-size",
        ),
    ),
    "cat": OptionSpec(
        flags="AbeEnstTuv",
        long_flags=_w(
            "--number", "--show-all", "--number-nonblank", "--squeeze-blank", "--show-ends", "--show-tabs",
            "--show-nonprinting",
        ),
    ),
    "head": OptionSpec(flags="qvz", valued="nc", long_flags=_HEAD_TAIL_LONG, long_valued=_w("--lines", "--bytes")),
    "tail": OptionSpec(flags="qvz", valued="nc", long_flags=_HEAD_TAIL_LONG, long_valued=_w("--lines", "--bytes")),
    "wc": OptionSpec(
        flags="cmlwL", long_flags=_w("--bytes", "--chars", "--lines", "--words", "--max-line-length")
    ),
    "grep": OptionSpec(
        flags="ivclLnhHoqswxEFGPaIzZbUT",
        valued="efmABC",
        long_flags=_w(
            "--ignore-case", "--no-ignore-case", "--invert-match", "--count", "--files-with-matches",
            "--files-without-match", "--line-number", "--no-filename", "--with-filename", "--only-matching",
            "--quiet", "--silent", "--no-messages", "--word-regexp", "--line-regexp", "--extended-regexp",
            "--fixed-strings", "--basic-regexp", "--perl-regexp", "--text", "--null", "--null-data",
            "--byte-offset", "--initial-tab",
        ),
        long_valued=_w(
            "--regexp", "--file", "--max-count", "--after-context", "--before-context", "--context", "--color",
            "--colour", "--label", "--include", "--exclude",
        ),
        path_values=_w("-f", "--file"),
        refuse_hint={
            "r": "use the Grep tool to search recursively",
            "R": "use the Grep tool to search recursively",
            "--recursive": "use the Grep tool to search recursively",
            "--dereference-recursive": "use the Grep tool to search recursively",
            "d": "use the Grep tool to search recursively",
        },
    ),
    "find": OptionSpec(
        whole_word=True,
        word_flags=_w(
            "-print", "-print0", "-not", "!", "-a", "-o", "-and", "-or", "(", ")", "-empty", "-true", "-false",
            "-P", "-H", "-L", "-depth", "-prune", "-readable", "-writable", "-executable", "-nowarn", "-xdev",
            "-mount", "-daystart",
        ),
        word_valued=_w(
            "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-type", "-xtype", "-maxdepth",
            "-mindepth", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer", "-regex",
            "-iregex", "-regextype", "-perm", "-user", "-group", "-uid", "-gid", "-links", "-samefile",
            "-printf",
        ),
        path_values=_w("-newer", "-samefile"),
    ),
    "sort": OptionSpec(
        flags="bdfgGhiMnRrsuVzcC",
        valued="ktS",
        long_flags=_w(
            "--ignore-leading-blanks", "--dictionary-order", "--ignore-case", "--general-numeric-sort",
            "--human-numeric-sort", "--ignore-nonprinting", "--month-sort", "--numeric-sort", "--random-sort",
            "--reverse", "--version-sort", "--stable", "--unique", "--zero-terminated", "--check",
        ),
        long_valued=_w("--key", "--field-separator", "--buffer-size", "--sort", "--parallel"),
    ),
    "uniq": OptionSpec(
        flags="cdDiuz",
        valued="fsw",
        long_flags=_w("--count", "--repeated", "--ignore-case", "--unique", "--zero-terminated"),
        long_valued=_w("--skip-fields", "--skip-chars", "--check-chars", "--all-repeated", "--group"),
        max_operands=1,  # the second operand is an OUTPUT file
    ),
    "cut": OptionSpec(
        flags="snz",
        valued="bcdf",
        long_flags=_w("--complement", "--only-delimited", "--zero-terminated"),
        long_valued=_w("--bytes", "--characters", "--delimiter", "--fields", "--output-delimiter"),
    ),
    "echo": OptionSpec(flags="neE"),
    "pwd": OptionSpec(flags="LP", max_operands=0),
    "date": OptionSpec(
        flags="uRI",
        valued="d",
        long_flags=_w("--utc", "--universal", "--rfc-email", "--iso-8601", "--debug"),
        long_valued=_w("--date", "--rfc-3339", "--iso-8601"),
        max_operands=1,  # +FORMAT; a second operand would be a time to SET
        refuse_hint={"s": "date may not set the clock", "--set": "date may not set the clock"},
    ),
    "diff": OptionSpec(
        flags="uqwbBiyNatsdp",
        valued="U",
        long_flags=_w(
            "--brief", "--ignore-all-space", "--ignore-space-change", "--ignore-blank-lines", "--ignore-case",
            "--side-by-side", "--normal", "--text", "--report-identical-files", "--minimal", "--new-file",
            "--show-c-function", "--expand-tabs",
        ),
        long_valued=_w("--unified", "--color", "--label", "--width"),
        max_operands=2,
    ),
    "tr": OptionSpec(flags="cCdst", long_flags=_w("--complement", "--delete", "--squeeze-repeats", "--truncate-set1"), max_operands=2),
    "basename": OptionSpec(flags="az", valued="s", long_flags=_w("--multiple", "--zero"), long_valued=_w("--suffix")),
    "dirname": OptionSpec(flags="z", long_flags=_w("--zero")),
    "true": OptionSpec(),
    "false": OptionSpec(),
    "stat": OptionSpec(
        flags="Lft", valued="c", long_flags=_w("--dereference", "--file-system", "--terse"),
        long_valued=_w("--format", "--printf"),
    ),
    "file": OptionSpec(
        flags="biLhkzZNpE",
        long_flags=_w(
            "--brief", "--mime", "--mime-type", "--mime-encoding", "--dereference", "--no-dereference",
            "--keep-going", "--uncompress", "--no-pad", "--preserve-date", "--extension",
        ),
    ),
}  # fmt: skip


@dataclass
class ParsedArgs:
    """The outcome of checking one command's arguments against its table."""

    problem: str | None = None
    operands: list[str] = field(default_factory=list)
    path_values: list[str] = field(default_factory=list)


def check_options(program: str, args: list[str]) -> ParsedArgs:
    """Check ``args`` against ``program``'s table. A program without a table is refused."""
    spec = OPTION_TABLES.get(program)
    if spec is None:
        return ParsedArgs(problem=f"'{program}' has no option table")
    out = ParsedArgs()
    index = 0
    only_operands = False
    while index < len(args):
        arg = args[index]
        index += 1
        if (
            only_operands
            or arg == "-"
            or not (arg.startswith("-") or (spec.whole_word and arg in ("!", "(", ")")))
        ):
            out.operands.append(arg)
            continue
        if arg == "--":
            only_operands = True
            continue
        if program in ("head", "tail") and arg[1:].isdigit():
            continue  # head -20
        if spec.whole_word:
            if arg in spec.word_flags:
                continue
            if arg in spec.word_valued:
                if index >= len(args):
                    return ParsedArgs(problem=f"'{program} {arg}' needs a value")
                if arg in spec.path_values:
                    out.path_values.append(args[index])
                index += 1
                continue
            return _refused(program, arg, spec)
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in spec.long_flags and not eq:
                continue
            if name in spec.long_valued:
                if not eq:
                    if index >= len(args):
                        return ParsedArgs(problem=f"'{program} {name}' needs a value")
                    value = args[index]
                    index += 1
                if name in spec.path_values:
                    out.path_values.append(value)
                continue
            return _refused(program, name, spec)
        cluster = arg[1:]
        for position, letter in enumerate(cluster):
            if letter in spec.flags:
                continue
            if letter in spec.valued:
                value = cluster[position + 1 :]
                if not value:
                    if index >= len(args):
                        return ParsedArgs(problem=f"'{program} -{letter}' needs a value")
                    value = args[index]
                    index += 1
                if f"-{letter}" in spec.path_values:
                    out.path_values.append(value)
                break
            return _refused(program, f"-{letter}", spec, letter)
    if spec.max_operands is not None and len(out.operands) > spec.max_operands:
        return ParsedArgs(
            problem=f"'{program}' takes at most {spec.max_operands} operand(s) here (got {len(out.operands)})"
        )
    return out


def _refused(program: str, option: str, spec: OptionSpec, letter: str | None = None) -> ParsedArgs:
    hint = spec.refuse_hint.get(letter or option, "")
    allowed = _describe(spec)
    message = f"'{program} {option}' is not an allowed option"
    message += f" ({hint})" if hint else ""
    return ParsedArgs(problem=f"{message}; {program} may take: {allowed}")


def _describe(spec: OptionSpec) -> str:
    if spec.whole_word:
        return " ".join(sorted(spec.word_flags | spec.word_valued))
    parts = [f"-{c}" for c in spec.flags + spec.valued]
    parts += sorted(spec.long_flags | spec.long_valued)
    return " ".join(parts) or "no options"
