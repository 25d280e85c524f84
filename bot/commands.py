"""The command grammar, as pure functions: a comment's text -> a `Command`, or a `CommandError`
whose message is the reply that explains the right form.

    @<handle> convert [--ep a,b] [--dtype x,y] [--to pr|repo] [--revision REV]
                      [--features f,g] [--max-seq-len N] [--release]
    @<handle> help
    @<handle> status
    /convert <namespace/name> [same flags]          (GitHub issues; one command per line)
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from converter.repo_files import is_repo_id

Action = Literal["convert", "help", "status"]
ACTIONS: tuple[Action, ...] = ("convert", "help", "status")
DEFAULT_EPS = ("cpu",)
DEFAULT_DTYPES = ("f32",)
MAX_VALUES = 4  # execution providers or dtypes in one command
MAX_COMMAND_CHARS = 500
TOKEN = re.compile(r"[a-z0-9][a-z0-9_]{0,31}")
FEATURE = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")  # a build feature's name, e.g. text-only
VALUED = ("--ep", "--dtype", "--to", "--revision", "--features", "--max-seq-len")
SWITCHES = ("--release",)
MAX_SEQ_LEN = re.compile(r"[1-9][0-9]{0,6}")
REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")


class CommandError(ValueError):
    """A malformed command; the message is a reply for people (it includes the usage)."""


@dataclass(frozen=True)
class Command:
    action: Action
    source: str | None = None  # the Hub repo: named on GitHub, the discussion's repo on the Hub
    eps: tuple[str, ...] = DEFAULT_EPS
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    publish: Literal["pr", "repo"] = "pr"
    revision: str | None = None
    features: tuple[str, ...] = ()
    max_seq_len: int | None = None
    release: bool = False

    def describe(self) -> str:
        """`cpu-f32, cpu-int4 -> pull request` for acknowledgements (with the build options)."""
        variants = ", ".join(sorted(f"{e}-{d}" for e in self.eps for d in self.dtypes))
        where = "a pull request on the repo" if self.publish == "pr" else "a new `-ONNX` repo"
        at = f" at revision `{self.revision}`" if self.revision else ""
        built = [f"`{name}`" for name in self.features]
        built += [f"max sequence length {self.max_seq_len}"] if self.max_seq_len else []
        built += ["`--release`"] if self.release else []
        options = f" with {', '.join(built)}" if built else ""
        return f"{variants}{at}{options} -> {where}"


def usage(handle: str) -> str:
    """The grammar, for help replies and errors (no line starts with a command)."""
    return (
        f"Usage: `@{handle} convert [--ep cpu,cuda] [--dtype f32,f16,int8,int4] [--to pr|repo] "
        "[--revision REV] [--features a,b] [--max-seq-len N] [--release]`, "
        f"`@{handle} status` or `@{handle} help`. Defaults: `--ep cpu --dtype f32 --to pr`. "
        "On GitHub: `/convert <namespace/name> [same flags]`."
    )


def mentioned(text: str, handle: str) -> str | None:
    """The words after the first `@handle` mention (up to the end of that line), or None when
    the text does not mention the handle (`@handle-other` is someone else)."""
    pattern = rf"(?<![\w@/.-])@{re.escape(handle)}(?![\w-])(?P<rest>[^\n]*)"
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return match["rest"].strip() if match else None


def parse_mention(text: str, handle: str) -> Command | None:
    """The command in a Hub comment; None when the bot is not mentioned."""
    rest = mentioned(text, handle)
    if rest is None:
        return None
    words = _split(rest, handle)
    if not words:
        raise CommandError(f"I did not see a command. {usage(handle)}")
    action, *flags = words
    if action.lower() not in ACTIONS:
        raise CommandError(f"I do not know the command `{action[:40]}`. {usage(handle)}")
    if action.lower() != "convert":
        if flags:
            raise CommandError(f"`{action.lower()}` takes no options. {usage(handle)}")
        return Command(action.lower())  # type: ignore[arg-type]
    return _convert(None, flags, handle)


def parse_github(text: str, handle: str) -> Command | None:
    """The `/convert <repo> ...` command on a line of its own; None when there is none."""
    for line in text.splitlines():
        if line.strip().startswith("/convert") and line.strip()[8:9] in ("", " ", "\t"):
            words = _split(line.strip()[len("/convert") :], handle)
            if not words or words[0].startswith("--"):
                what = "Name the Hub model: `/convert <namespace/name>`."
                raise CommandError(f"{what} {usage(handle)}")
            return _convert(check_repo_id(words[0], handle), words[1:], handle)
    return None


def check_repo_id(repo_id: str, handle: str = "mobius-bot") -> str:
    """`namespace/name` with Hub-legal characters; no `..`, `--`, slashes or URLs."""
    if not is_repo_id(repo_id, namespaced=True):
        shown = repo_id[:100].replace("`", "'")
        raise CommandError(
            f"`{shown}` is not a Hub model id; write it as `namespace/name`. {usage(handle)}"
        )
    return repo_id


def _split(text: str, handle: str) -> list[str]:
    if len(text) > MAX_COMMAND_CHARS:
        raise CommandError(f"That command is too long. {usage(handle)}")
    try:
        return shlex.split(text)
    except ValueError as err:
        raise CommandError(f"I could not read that command ({err}). {usage(handle)}") from err


def _convert(source: str | None, flags: list[str], handle: str) -> Command:
    values: dict[str, str] = {}
    i = 0
    while i < len(flags):
        flag, equals, inline = flags[i].partition("=")
        if flag not in (*VALUED, *SWITCHES):
            raise CommandError(f"Unknown option `{flag[:40]}`. {usage(handle)}")
        if flag in values:
            raise CommandError(f"`{flag}` is given twice. {usage(handle)}")
        if flag in SWITCHES:
            if equals:
                raise CommandError(f"`{flag}` takes no value. {usage(handle)}")
            values[flag] = ""
            i += 1
            continue
        if not inline:
            i += 1
            if i == len(flags) or flags[i].startswith("--"):
                raise CommandError(f"`{flag}` needs a value. {usage(handle)}")
            inline = flags[i]
        values[flag] = inline
        i += 1
    eps = _list(values.get("--ep"), DEFAULT_EPS, "--ep", handle)
    dtypes = _list(values.get("--dtype"), DEFAULT_DTYPES, "--dtype", handle)
    publish = values.get("--to", "pr")
    if publish not in ("pr", "repo"):
        raise CommandError(f"`--to` is `pr` or `repo`, not `{publish[:20]}`. {usage(handle)}")
    revision = values.get("--revision")
    if revision is not None and (not REVISION.fullmatch(revision) or ".." in revision):
        raise CommandError(f"`{revision[:60]}` is not a revision. {usage(handle)}")
    # feature names are checked when the request is made: its refusal names an unknown one
    features = _list(values.get("--features"), (), "--features", handle, FEATURE, "text-only")
    length = values.get("--max-seq-len")
    if length is not None and not MAX_SEQ_LEN.fullmatch(length):
        raise CommandError(f"`--max-seq-len` takes a whole number, e.g. 2048. {usage(handle)}")
    return Command(
        "convert",
        source,
        eps,
        dtypes,
        publish,  # type: ignore[arg-type]
        revision,
        features,
        int(length) if length is not None else None,
        "--release" in values,
    )


def _list(
    value: str | None,
    default: tuple[str, ...],
    flag: str,
    handle: str,
    pattern: re.Pattern = TOKEN,
    example: str = "",
) -> tuple[str, ...]:
    if value is None:
        return default
    items = tuple(dict.fromkeys(v.strip().lower() for v in value.split(",") if v.strip()))
    if not items or len(items) > MAX_VALUES or not all(pattern.fullmatch(v) for v in items):
        raise CommandError(
            f"`{flag}` takes up to {MAX_VALUES} comma-separated names, e.g. `{flag} "
            f"{example or ','.join(default)}`. {usage(handle)}"
        )
    return items
