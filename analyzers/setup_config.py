"""Read the reporter's setup from an opening post: which catalog options are already set, and to
what, plus the versions of the frameworks and engines in use.

Failure reports paste configuration in many styles; all of them are reduced to `(path, value)`
pairs and matched against the catalog's `Option.keys` for the framework (table-driven: no option
name is written in this file):

- Hydra/OmegaConf overrides: `actor_rollout_ref.actor.clip_ratio_high=0.28`, `+a.b=1`
- YAML blocks (nested keys become dotted paths by indentation) and JSON blocks
- command-line flags: `--eps_clip_low_high 0.2 0.28`, `--actor.eps_clip_low_high=...`,
  `--eps-clip-high 0.28`, bare switches (`--use-tis`)
- Python keyword arguments: `GRPOConfig(epsilon_high=0.28, loss_type="dr_grpo")`
- shell scripts as in verl's examples: `clip_ratio_high=0.28` then
  `actor_rollout_ref.actor.clip_ratio_high=${clip_ratio_high}` inside arrays or `\\` lines
- version lines: `verl==0.5.0`, `trl env` output (`- TRL version: 0.19.0`), `vllm: 0.8.5`

Everything is line by line with `str.split` and patterns without nested quantifiers, so a
65,536-character body costs linear time. YAML is never handed to a YAML loader: untrusted
aliases can expand exponentially, and an indentation scan gives the same dotted paths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MAX_CHARS = 65_536
MAX_LINE = 4_096  # a pasted line longer than this is a log dump, not configuration
MAX_SEGMENTS = 12  # dotted-path suffixes tried per pair

# Version lines: only these packages are reported (the frameworks and the engines under them).
VERSION_PACKAGES = {
    "verl", "trl", "openrlhf", "nemo-rl", "nemo_rl", "roll", "slime", "areal",
    "torch", "vllm", "sglang", "transformers", "deepspeed", "megatron-core", "megatron_core",
    "ray", "flash-attn", "flash_attn", "accelerate", "peft", "python", "cuda",
    "liger-kernel", "liger_kernel", "datasets", "nccl",
}
_VERSION_RE = re.compile(r"\d+(?:\.[0-9A-Za-z+_-]+){0,5}")
# `name==1.2.3`, `name>=1.2`, `name @ ...` is ignored
_PIP_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_.-]{0,40})\s?[=~]=\s?(\d[0-9A-Za-z.+_-]{0,40})")
# `- TRL version: 0.19.0`, `vllm version: 0.8.5`, `Python version: 3.11`, `torch: 2.6.0`
_COLON_VERSION_RE = re.compile(
    r"^[-*\s]{0,4}([A-Za-z][A-Za-z0-9_ .-]{0,40}?)(?: version)?\s?[:=]\s?v?(\d[0-9A-Za-z.+_-]{0,40})"
)
_SHELL_ASSIGN_RE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]{0,63})=(\S{0,512})")
_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]{0,63})(?::?-([^}]{0,128}))?\}|\$([A-Za-z_][A-Za-z0-9_]{0,63})")
_YAML_RE = re.compile(r"^( {0,64})(?:- )?([A-Za-z_][\w.\-/]{0,127}|\"[^\"]{1,128}\"|'[^']{1,128}'):(?:\s(.{0,512}))?$")
_KEY_OK = re.compile(r"^[A-Za-z_][\w.\-/]{0,200}$")
_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s?([A-Za-z0-9_+-]{0,20})")

FALSE_WORDS = {"false", "no", "off", "none", "null", "0", "~", ""}
TRUE_WORDS = {"true", "yes", "on", "1"}


@dataclass
class Pair:
    path: str
    value: str
    source: str  # hydra | yaml | json | cli | python | shell


def _norm_key(key: str) -> str:
    key = key.strip().strip("\"'").lstrip("+~-").strip()
    return key.replace("-", "_").lower()


def _clean_value(value: str) -> str:
    value = value.strip()
    # trailing shell continuation, commas, closing brackets of a Python call
    while value and value[-1] in "\\,;)":
        value = value[:-1].rstrip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value.strip()


def _strip_comment(line: str) -> str:
    # ` # comment` after content (shell, YAML, Python); a leading '#' line is a comment too.
    idx = line.find(" #")
    if idx >= 0:
        line = line[:idx]
    if line.lstrip().startswith("#"):
        return ""
    return line


def _expand_vars(text: str, variables: dict[str, str]) -> str:
    if "$" not in text:
        return text

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        if name in variables:
            return variables[name]
        if m.group(2) is not None:
            return m.group(2)
        return m.group(0)

    return _VAR_RE.sub(repl, text)


def _fenced_blocks(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(info string, lines) of each fenced code block."""
    fence: str | None = None
    info = ""
    block: list[str] = []
    for line in lines:
        m = _FENCE_RE.match(line)
        if fence is None:
            if m:
                fence, info, block = m.group(1), m.group(2).lower(), []
            continue
        if m and m.group(1).startswith(fence[0]) and len(m.group(1)) >= len(fence) and not m.group(2):
            yield info, block
            fence = None
            continue
        block.append(line)


def _flatten_json(value: Any, prefix: str, out: list[Pair], budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            _flatten_json(v, path, out, budget)
    elif isinstance(value, list) and value and not all(isinstance(v, (dict, list)) for v in value):
        out.append(Pair(prefix, " ".join(str(v) for v in value), "json"))
    elif isinstance(value, list):
        for v in value:
            _flatten_json(v, prefix, out, budget)
    elif prefix:
        text = "null" if value is None else (str(value).lower() if isinstance(value, bool) else str(value))
        out.append(Pair(prefix, text, "json"))


def _json_pairs(lines: list[str]) -> list[Pair]:
    out: list[Pair] = []
    for info, block in _fenced_blocks(lines):
        text = "\n".join(block).strip()
        if not text.startswith("{") or info not in ("", "json", "jsonc", "javascript", "js"):
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        _flatten_json(data, "", out, [10_000])
    return out


def _yaml_pairs(lines: list[str]) -> list[Pair]:
    """Indentation scan: `key:` lines open a section, `key: value` lines are leaves."""
    out: list[Pair] = []
    stack: list[tuple[int, str]] = []  # (indent, key)
    for raw in lines:
        line = _strip_comment(raw.rstrip())
        if not line.strip():
            continue
        m = _YAML_RE.match(line)
        if not m:
            # Not a YAML key line: a new unindented construct ends the current mapping.
            if not line.startswith((" ", "\t", "-")):
                stack.clear()
            continue
        indent = len(m.group(1))
        key = m.group(2).strip("\"'")
        value = (m.group(3) or "").strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        if value and not value.startswith(("|", ">", "&", "*")):
            if value.startswith("{") or value.startswith("["):
                inner = value.strip("{}[] ")
                if value.startswith("["):
                    out.append(Pair(path, _clean_value(inner.replace(",", " ")), "yaml"))
                else:
                    for part in inner.split(","):
                        k, sep, v = part.partition(":")
                        if sep and _KEY_OK.match(k.strip()):
                            out.append(Pair(f"{path}.{k.strip()}", _clean_value(v), "yaml"))
            else:
                out.append(Pair(path, _clean_value(value), "yaml"))
        else:
            stack.append((indent, key))
    return out


def _split_tokens(line: str) -> list[str]:
    """Whitespace tokens, with commas and the parentheses of Python calls as separators, but
    quoted strings kept whole (`--x "0.2 0.28"`)."""
    tokens: list[str] = []
    buf: list[str] = []
    quote = ""
    for ch in line:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
            buf.append(ch)
        elif ch in " \t,()[]{}":
            if buf:
                tokens.append("".join(buf))
                buf = []
        else:
            buf.append(ch)
    if buf:
        tokens.append("".join(buf))
    return tokens


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _line_pairs(line: str) -> list[Pair]:
    """Overrides, flags and keyword arguments on one line."""
    out: list[Pair] = []
    python = "(" in line and "=" in line
    tokens = [t for t in _split_tokens(line) if t not in ("\\",)]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--") and len(tok) > 2:
            name, eq, val = tok[2:].partition("=")
            if not _KEY_OK.match(name):
                i += 1
                continue
            if eq:
                out.append(Pair(name, _clean_value(val), "cli"))
                i += 1
                continue
            values: list[str] = []
            j = i + 1
            while j < len(tokens) and len(values) < 4:
                nxt = tokens[j]
                if nxt.startswith("--") or (nxt.startswith("-") and not _is_number(nxt)):
                    break
                if "=" in nxt and not nxt.startswith(("\"", "'")):
                    break
                values.append(_clean_value(nxt))
                j += 1
            out.append(Pair(name, " ".join(values) if values else "true", "cli"))
            i = j
            continue
        key, eq, val = tok.partition("=")
        if eq and key and not key.startswith("-"):
            key = key.lstrip("+~")
            if _KEY_OK.match(key) and not val.startswith("="):
                if val == "" and i + 1 < len(tokens) and tokens[i + 1].startswith(("\"", "'")):
                    val = tokens[i + 1]
                    i += 1
                out.append(Pair(key, _clean_value(val), "python" if python else "hydra"))
        i += 1
    return out


def _shell_variables(lines: list[str]) -> dict[str, str]:
    variables: dict[str, str] = {}
    for raw in lines:
        m = _SHELL_ASSIGN_RE.match(raw.strip())
        if m and "." not in m.group(1):
            variables[m.group(1)] = _clean_value(_expand_vars(m.group(2), variables))
    return variables


def _versions(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if not line or len(line) > 200:
            continue
        m = _PIP_RE.match(line) or _COLON_VERSION_RE.match(line)
        if not m:
            continue
        name = m.group(1).strip().lower().replace(" ", "-")
        if name.endswith("-version"):
            name = name[: -len("-version")]
        if name not in VERSION_PACKAGES:
            continue
        version = _VERSION_RE.match(m.group(2))
        if version:
            found.setdefault(name.replace("_", "-"), version.group(0).rstrip(".-+"))
    return found


def extract_pairs(text: str) -> list[Pair]:
    """Every (path, value) pair the text sets, in every supported style."""
    text = (text or "")[:MAX_CHARS]
    lines = [ln[:MAX_LINE] for ln in text.splitlines()]
    variables = _shell_variables(lines)
    pairs: list[Pair] = []
    pairs += _json_pairs(lines)
    pairs += _yaml_pairs(lines)
    shell_array = False
    depth = 0  # open parentheses: keyword arguments of a call spread over several lines
    for raw in lines:
        line = _strip_comment(raw)
        in_call = depth > 0
        if depth == 0:
            # `ARGS=(` opens a shell array (verl scripts), anything else a Python call
            shell_array = line.rstrip().endswith("=(")
        depth = max(0, min(depth + line.count("(") - line.count(")"), 64))
        if "=" not in line and "--" not in line:
            continue
        line = _expand_vars(line, variables)
        for pair in _line_pairs(line):
            if in_call and pair.source == "hydra":
                pair.source = "shell" if shell_array else "python"
            elif pair.source == "hydra" and "." not in pair.path and pair.path in variables:
                pair.source = "shell"
            pairs.append(pair)
    return pairs


# --- matching against the catalog -----------------------------------------------------------


def _first_number(text: str | None) -> float | None:
    if not text:
        return None
    head = text.strip().split(" ", 1)[0].strip("()'\",;")
    try:
        return float(head)
    except ValueError:
        return None


_FALLBACK_RE = re.compile(r"falls back to [^0-9()]{0,40}?(\d+(?:\.\d+)?)\b")


def _fallback_number(default: str | None) -> float | None:
    """The number a default of "None (falls back to --eps-clip 0.2)" stands for: an upper
    bound set to it is the symmetric clipping the default gives."""
    m = _FALLBACK_RE.search(default or "")
    return float(m.group(1)) if m else None


def _bool_word(text: str) -> bool | None:
    word = text.strip().strip("\"'.,;:").lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def _numbers(text: str) -> list[float] | None:
    """All whitespace/underscore-separated numbers of `text`, or None if any part is not one."""
    parts = [p for p in text.replace("_", " ").split() if p]
    if not parts:
        return None
    out = []
    for part in parts:
        try:
            out.append(float(part.strip("\"'()[],;")))
        except ValueError:
            return None
    return out


def option_enabled(value: str, value_hint: str | None, default: str | None) -> bool:
    """Does `value` turn the method on, judged from the catalog's hint and default?"""
    value = value.strip().strip("\"'")
    if "$" in value:
        # a variable the paste never assigns (`${CLIP_HIGH}`, `${oc.env:X}`): the value is
        # unknown, and "already set" would claim what the paste does not say
        return False
    hint = (value_hint or "").strip().strip("\"'").rstrip(";:,.")
    if not hint:
        # A bare switch or a free-form value: on unless it reads as off, is zero (a zero
        # coefficient switches a term off) or is the default.
        numbers = _numbers(value)
        if numbers is not None and len(numbers) == 1:
            return numbers[0] != 0 and numbers[0] != _first_number(default)
        return _bool_word(value) is not False
    if _numbers(hint) is None and _bool_word(hint) is not None:
        return _bool_word(value) is _bool_word(hint)
    if _numbers(hint) is not None:
        if not value or value.lower() in FALSE_WORDS - {"0"}:
            return False
        numbers = _numbers(value)
        if numbers is None and _bool_word(value) is True:
            return True  # the option's switch key (NeMo-RL's async_grpo.enabled=true)
        if numbers is None:
            # words or an expression (`args.eps_high`) where a number goes: the value is
            # unknown, and "already set" would claim what the paste does not say
            return False
        if len(numbers) > 1:
            # a low/high pair is only asymmetric (on) when the two differ
            return len(set(numbers)) > 1
        hint_numbers = _numbers(hint) or []
        if len(hint_numbers) > 1:
            return False  # one number where the method is a low/high pair (verl's TIS threshold)
        if numbers[0] == 0 and all(h != 0 for h in hint_numbers):
            return False  # a zero coefficient where the method needs a positive one
        default_number = _first_number(default)
        if default_number is None:
            default_number = _fallback_number(default)
        return default_number is None or numbers[0] != default_number
    # An enumerated choice (loss_mode=cispo): on only with that choice, or one of the choices
    # `a|b` the catalog names as turning it on (verl's rollout_is=token or sequence).
    return value.lower().replace("-", "_") in {h.strip().lower().replace("-", "_")
                                               for h in hint.split("|")}


SECONDARY_STATUS = ("submodule", "example config", "example plug-in", "related")


def _secondary(status: str) -> bool:
    return any(word in status for word in SECONDARY_STATUS)


def _option_table(framework: str) -> dict[str, list[tuple[Any, Any]]]:
    from analyzers.catalog import load_catalog

    table: dict[str, list[tuple[Any, Any]]] = {}
    for method in load_catalog().methods.values():
        options = method.options.get(framework, [])
        primary = [o for o in options if not _secondary(o.status)]
        # A recipe, an example config or a related switch lists keys it *sets* (a recipe's
        # clip_ratio_low=0.2); one of them alone does not mean the method is on, so they are
        # matched only when the framework has no switch of its own for the method.
        for option in primary or options:
            for key in option.keys:
                table.setdefault(_norm_key(key), []).append((method, option))
    return table


def _candidates(path: str) -> Iterable[str]:
    norm = _norm_key(path)
    yield norm
    parts = norm.split(".")
    for i in range(1, min(len(parts), MAX_SEGMENTS)):
        yield ".".join(parts[i:])


def _requirements_met(option: Any, pairs: list[Pair], known: dict[str, bool]) -> bool:
    """Every `key=value` the option `requires` is set so in the text (ROLL's pg_clip_high is
    clip-higher only with use_pg_clip_range: true). `known` keeps each requirement's answer:
    one pass over the pairs per requirement, however often the option is met."""
    for requirement in option.requires:
        if requirement not in known:
            key, _, value = requirement.partition("=")
            key = _norm_key(key)
            known[requirement] = any(
                key in _candidates(p.path) and option_enabled(p.value, value, None) for p in pairs)
        if not known[requirement]:
            return False
    return True


def parse_setup(text: str, framework: str) -> dict[str, Any]:
    """Options of the catalog found in `text` for `framework`, and version lines.

    Returns `{"options": {method_id: {"option", "key", "value", "source", "enabled"}},
    "versions": {package: version}}`. `enabled` says whether the value turns the method on
    (a value equal to the default, or another choice of an enumerated option, does not).
    When a method is found several times, an enabling setting wins over a disabling one of
    another key; one key set both on and off (a YAML file and the launch line's override of
    it) leaves it unknown, so not on: the paste does not say which one ran.
    """
    text = (text or "")[:MAX_CHARS]
    table = _option_table(framework)
    options: dict[str, dict[str, Any]] = {}
    pairs = extract_pairs(text)
    known: dict[str, bool] = {}
    # (method, option, the key's last segment) -> the values it was seen with, on or off
    seen: dict[tuple[str, str, str], set[bool]] = {}
    first_on: dict[tuple[str, str, str], dict[str, Any]] = {}
    for pair in pairs:
        for candidate in _candidates(pair.path):
            hits = table.get(candidate)
            if not hits:
                continue
            for method, option in hits:
                enabled = (option_enabled(pair.value, option.value_hint, option.default)
                           and _requirements_met(option, pairs, known))
                entry = {
                    "option": option.name,
                    "key": pair.path.lstrip("+~-"),
                    "value": pair.value,
                    "source": pair.source,
                    "enabled": enabled,
                }
                group = (method.id, option.name, candidate.rsplit(".", 1)[-1])
                seen.setdefault(group, set()).add(enabled)
                if enabled:
                    first_on.setdefault(group, entry)
                current = options.get(method.id)
                if current is None or (enabled and not current["enabled"]):
                    options[method.id] = entry
            break  # the longest matching suffix decides
    for method_id, entry in options.items():
        if not entry["enabled"]:
            continue
        sure = [g for g in first_on if g[0] == method_id and seen[g] == {True}]
        if sure:
            options[method_id] = first_on[sure[0]]
        else:
            options[method_id] = dict(entry, enabled=False)
    lines = text.splitlines()
    return {"options": options, "versions": _versions(lines)}


def plain_value(value: str, value_hint: str | None) -> bool:
    """A pasted value plain enough to show back: numbers, a yes/no word or one of the choices
    the catalog names (`value_hint`), never other words the reporter wrote."""
    text = value.strip().strip("\"'")
    if _numbers(text) is not None or _bool_word(text) is not None:
        return True
    choices = {h.strip().lower().replace("-", "_") for h in (value_hint or "").split("|") if h.strip()}
    return text.lower().replace("-", "_") in choices


__all__ = ["Pair", "extract_pairs", "option_enabled", "parse_setup", "plain_value"]
