"""What the app says, composed from the catalog and the analysis only, rendered from
templates/comments/ in English or Chinese.

Nothing the reporter wrote is pasted: the comment is built from catalog data (method names,
exact settings, cautions, commits), the analyzer's short evidence labels (filtered to a safe
alphabet) and, for settings the reporter already has, the option key and a value that passes
a strict numeric/identifier check. Catalog text is escaped as Markdown, and anything that
GitHub would turn into a mention or a cross-reference (`@user`, `owner/repo#12`, `#12`) is
put in a code span so the comment never pings people or other repositories.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from analyzers.accounts import is_bot_login
from analyzers.catalog import clauses, clauses_zh
from bot.templating import markdown_env, without_direction_controls

FAILURE_MARKER = "<!-- rltracker:failure-comment -->"
RULES_MARKER = "<!-- rltracker:rule-summary -->"
REPLY_MARKER = "<!-- rltracker:reply -->"
MARKERS = (FAILURE_MARKER, RULES_MARKER, REPLY_MARKER)
MAX_METHODS = 3
MAX_ELSEWHERE = 3
MAX_CAUTION = 220
MAX_EARLIER = 4

_REF = re.compile(r"@[A-Za-z0-9][A-Za-z0-9-]{0,38}|[\w.-]{1,100}/[\w.-]{1,100}#\d{1,9}|#\d{1,9}")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#!])")
_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_.+\- ]{1,40}$")


def code_span(text: str) -> str:
    """`text` as an inline code span, whatever backticks it holds, without direction controls
    (a code span isolates nothing: an override in an `owner/repo#N` the comment quotes would
    reverse the comment's words after it on GitHub; security79)."""
    text = " ".join(without_direction_controls(text).split())
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_text(text: str) -> str:
    """Plain catalog text (or a repository's name) as inert Markdown: specials escaped,
    mentions/references in code, direction controls dropped (as `code_span`)."""
    text = " ".join(without_direction_controls(text).split())
    out: list[str] = []
    pos = 0
    for m in _REF.finditer(text):
        out.append(_MD_SPECIAL.sub(r"\\\1", text[pos : m.start()]))
        out.append(code_span(m.group(0)))
        pos = m.end()
    out.append(_MD_SPECIAL.sub(r"\\\1", text[pos:]))
    return "".join(out)


# Words that join two settings in the catalog's `set_by` ("a=1 with b=2", "X or --x 1; also
# in F"), split at outside brackets and quotes only; the order matters (longest first).
_JOINERS = (" together with ", " and/or ", " with ", " and ", " or ", " plus ", "; ")
_SETTING = re.compile(r"=|: |:$|^--?\w|^[\w.]+\(|^[\w.]*[_.][\w.]*$")


def _cut_outside(text: str, separators: tuple[str, ...]) -> list[tuple[str, bool]]:
    """`text` cut at `separators` outside brackets and quotes: (piece, is_separator)."""
    out: list[tuple[str, bool]] = []
    depth, quote, start, i = 0, "", 0, 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            separator = next((j for j in separators if text.startswith(j, i)), None)
            if separator:
                out.append((text[start:i], False))
                out.append((separator, True))
                i += len(separator)
                start = i
                continue
        i += 1
    out.append((text[start:], False))
    return [(piece, is_sep) for piece, is_sep in out if piece]


def _joined(text: str) -> list[tuple[str, bool]]:
    """`text` cut at the joining words outside brackets and quotes: (piece, is_joiner)."""
    return _cut_outside(text, _JOINERS)


def _settings_md(text: str) -> str:
    """Each setting of `text` its own code span, the words between them text (a leading
    "YAML" says where the setting goes, and stays a word)."""
    lead = ""
    if text.startswith("YAML "):
        lead, text = "YAML ", text[len("YAML "):]
    parts = _joined(text)
    if len(parts) == 1:
        settings = _SETTING.search(text.strip()) or any(map(_SETTING_TOKEN.search, _depth0_words(text)))
        return lead + (_setting_piece_md(text) if settings else code_span(text))
    out = []
    for piece, joiner in parts:
        if joiner:  # the joiners hold their spaces: " with ", "; "
            out.append((" " if piece.startswith(" ") else "") + md_text(piece) + " ")
        elif _SETTING.search(piece.strip()):
            out.append(_setting_piece_md(piece))
        else:
            out.append(md_text(piece))
    return lead + "".join(out)


# A token of a setting (a flag, `key=value`, a call, a dotted or snake_case name, a launcher
# that starts a command line), and a plain word of the sentence around one ("example config
# sets ...", "... for the in-reward KL").
_SETTING_TOKEN = re.compile(r"^--?\w|\w=|=\w|\w\(|\w[_.]\w|^(?:python3?|torchrun|accelerate|deepspeed)$")
_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z-]*[,:]?")


def _depth0_words(text: str) -> list[str]:
    """`text` split at the spaces outside brackets and quotes."""
    return [word for word, space in _cut_outside(text, (" ",)) if not space]


def _setting_piece_md(piece: str) -> str:
    """One setting between joining words: the setting in code; a parenthesised remark that
    ends it, the sentence words before it ("example config sets") and two or more after it
    ("moves it into the reward") as text, since a reader copies a code span as it is."""
    piece = piece.strip()
    cut = _trailing_group(piece)
    if cut > 0:
        return f"{_setting_piece_md(piece[:cut])} ({md_text(piece[cut + 2:-1])})"
    words = _depth0_words(piece)
    marks = [bool(_SETTING_TOKEN.search(w)) for w in words]
    if not any(marks):
        return md_text(piece)
    first = marks.index(True)
    # the setting ends where three plain words run, or two end the piece (one is a value
    # after its flag: `--advantage-estimator gspo`)
    end, i = len(words), first + 1
    while i < len(words):
        j = i
        while j < len(words) and not marks[j] and _PLAIN_WORD.fullmatch(words[j]):
            j += 1
        if j - i >= 3 or (j == len(words) and j - i >= 2):
            end = i
            break
        i = j + 1 if j == i else j
    core = " ".join(words[first:end])
    rest = " ".join(words[end:])
    # a comma or colon the sentence puts after a setting ("mode=R2, or =R3") is no part of it
    punct = core[-1] if core[-1] in ",:" and (rest or core.endswith(",")) else ""
    out = [md_text(" ".join(words[:first])) + " "] if first else []
    out.append(code_span(core[:-1] if punct else core) + punct)
    if rest:
        run = 0
        while run < len(words) - end and not marks[end + run]:
            run += 1
        prose, after = " ".join(words[end:end + run]), " ".join(words[end + run:])
        out.append(" " + md_text(prose) + (" " + _setting_piece_md(after) if after else ""))
    return "".join(out)


def setting_md(set_by: str) -> str:
    """The catalog's exact setting: each override, flag or call in code, the words joining
    them and a trailing remark as text."""
    set_by = " ".join(set_by.split())
    cut = _trailing_group(set_by)
    if cut > 0:
        return f"{_settings_md(set_by[:cut])} ({md_text(set_by[cut + 2:-1])})"
    return _settings_md(set_by)


def _trailing_group(text: str) -> int:
    """Where the parenthesised remark that ends `text` starts (the index of its " ("), or -1:
    the group whose ")" is the last character, matched by depth, so "a=1 (x) or b=2 (y)"
    keeps `b=2` a setting."""
    if not text.endswith(")"):
        return -1
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                return i - 1 if i > 1 and text[i - 1] == " " else -1
    return -1


def first_sentence(text: str, limit: int = MAX_CAUTION) -> str:
    """The first clause of `text` as the catalog cuts it (analyzers.catalog.clauses: not at an
    abbreviation's full stop), cut at a word before `limit` characters when longer."""
    text = next(iter(clauses(text)), "")
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > 0 else limit] + " …"


def safe_value(value: Any) -> str | None:
    """A reporter's value shown back only when it is a plain number, word or short list."""
    text = str(value or "").strip()
    return text if _SAFE_VALUE.match(text) else None


# The analyzer's evidence is the spans of the post that matched, i.e. the reporter's words.
# They are never shown: the comment names which of these fixed cue terms the spans contain.
CUE_TERMS: tuple[tuple[str, str], ...] = (
    ("entropy", "entropy"), ("collapse", "collapse"), ("explod", "explosion"),
    ("diverg", "divergence"), ("nan", "NaN"), ("plateau", "plateau"), ("reward", "reward"),
    ("kl", "KL"), ("length", "response length"), ("truncat", "truncation"),
    ("repetit", "repetition"), ("gibberish", "gibberish"), ("mismatch", "mismatch"),
    ("logprob", "log-probs"), ("log prob", "log-probs"), ("log-prob", "log-probs"),
    ("off-policy", "off-policy"), ("stale", "staleness"), ("async", "asynchronous rollout"),
    ("moe", "MoE"), ("router", "routing"), ("routing", "routing"), ("expert", "experts"),
    ("zero advantage", "zero advantage"), ("same reward", "identical rewards"),
    ("grad norm", "gradient norm"), ("grad_norm", "gradient norm"), ("loss", "loss"),
    ("熵", "熵"), ("崩", "崩溃"), ("爆炸", "爆炸"), ("发散", "发散"), ("奖励", "奖励"),
    ("长度", "长度"), ("训推", "训推不一致"), ("不一致", "不一致"), ("重复", "重复"),
    ("下降", "下降"), ("上升", "上升"),
)


def evidence_labels(evidence: Any) -> list[str]:
    """Fixed cue terms found in the analyzer's evidence spans (never the spans themselves)."""
    out: list[str] = []
    for item in evidence or []:
        if not isinstance(item, str):
            continue
        low = item[:500].lower()
        for needle, label in CUE_TERMS:
            if needle in low and label not in out:
                if needle in ("nan", "kl", "moe") and not re.search(rf"\b{needle}\b", low):
                    continue  # short cues only as whole words ("kl" in "weekly" is not KL)
                out.append(label)
    return out[:8]


# Who set the kind, as the failure comment says it (never a login: no pings).
SET_BY = {
    "en": {"author": "the issue's author", "maintainer": "a maintainer"},
    "zh": {"author": "提问者", "maintainer": "维护者"},
}


def confidence_words(confidence: float, lang: str, kinds: int = 1) -> str:
    """How sure the comment sounds. `confidence` is the probability that the post reports a
    failing run, not that the kind is right: with more than one kind listed the leading one is
    wrong about twice as often (gate10, grouped CV 23/36 right against 77/94 with one kind),
    so the word is then the lowest whatever the confidence."""
    level = 0 if kinds > 1 else (2 if confidence >= 0.9 else (1 if confidence >= 0.75 else 0))
    return (("或许", "可能", "很可能") if lang == "zh" else ("possibly", "likely", "very likely"))[level]


@dataclass
class Suggestion:
    method_id: str
    name: str
    url: str
    setting: str  # Markdown
    caution: str | None  # Markdown
    option_name: str
    commit: str | None
    file: str
    experimental: bool = False  # the option's status says experimental: the comment says so


@dataclass
class FailureComment:
    body: str
    lang: str
    category: str
    suggested: list[str]
    already_set: list[str]
    elsewhere: list[str]
    declined: list[str]
    details: dict[str, Any] = field(default_factory=dict)


def _spelled(words: set[str], flags: int = 0) -> re.Pattern[str]:
    """Any of `words` as a word of catalog text: "ROLL's", "verl-project", "staleness_threshold"
    in "async_training.staleness_threshold", never inside another word ("rollout" is not ROLL,
    "overlong" is not verl)."""
    alternatives = sorted(words, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, alternatives)) + r")(?!\w)", flags)


def _named(framework: Any) -> re.Pattern[str]:
    """A framework's id or name as a word in catalog text, in any case ("Verl advises")."""
    return _spelled({framework.id, framework.name}, re.IGNORECASE)


def _pick_caution(method: Any, framework: Any, option: Any) -> tuple[Any, int] | None:
    """The caution shown next to `option`'s setting, as (caution, the index of the clause
    shown): about this framework (the clause naming it), else one naming no other framework.
    A text that names another of this framework's options for the method, and not `option`,
    is about that option, not advice on the value shown (verl's `max_off_policy_threshold=8`
    beside "Verl advises staleness_threshold under 1", the fully async trainer's option): it
    is passed over."""
    cautions = list(method.cautions or [])
    if not cautions:
        return None
    shown = {w for w in (option.name, *option.keys) if w}
    other_words = {w for o in method.options.get(framework.id, []) if o is not option
                   for w in (o.name, *o.keys) if w} - shown
    other = _spelled(other_words) if other_words else None
    mine = _spelled(shown) if shown else None

    def about_another_option(text: str) -> bool:
        return bool(other and other.search(text) and not (mine and mine.search(text)))

    here = _named(framework)
    others = [_named(fw) for fid, fw in _catalog().frameworks.items() if fid != framework.id]
    for caution in cautions:
        if here.search(caution.text):
            numbered = [(i, c) for i, c in enumerate(clauses(caution.text)) if not about_another_option(c)]
            # the clause that speaks about this framework, not a neighbour's remark before it
            for i, clause in numbered:
                if here.search(clause):
                    return caution, i
            if not about_another_option(caution.text):
                return caution, 0
            # this framework's clause is about another option: the caution's general clause
            for i, clause in numbered:
                if not any(p.search(clause) for p in (here, *others)):
                    return caution, i
    # Cautions about another framework's quirk do not help this reporter.
    for caution in cautions:
        if not any(p.search(caution.text) for p in others) and not about_another_option(caution.text):
            return caution, 0
    return None


def caution_md(method: Any, framework: Any, option: Any, lang: str) -> str | None:
    """The caution shown next to `option`'s setting (`_pick_caution`), one clause, as
    Markdown: in Chinese the catalog's `text_zh` clause of the same place (the English one,
    should a caution have none: the catalog's tests require it)."""
    picked = _pick_caution(method, framework, option)
    if picked is None:
        return None
    caution, index = picked
    if lang == "zh" and caution.text_zh:
        return md_text(clauses_zh(caution.text_zh)[index] + "。")
    return md_text(first_sentence(clauses(caution.text)[index]))


def setting_md_in(option: Any, lang: str) -> str:
    """The option's setting as a comment in `lang` shows it: in Chinese the catalog's
    `set_by_zh` (its backticked settings as code spans, the words around them as text) when
    the English has words around the settings, else `setting_md`."""
    if lang != "zh" or not option.set_by_zh:
        return setting_md(option.set_by)
    pieces = " ".join(option.set_by_zh.split()).split("`")
    return "".join(code_span(piece) if i % 2 else _words_md(piece) for i, piece in enumerate(pieces))


def _words_md(words: str) -> str:
    """`md_text`, keeping the space that parts the words from a code span beside them."""
    if not words.strip():
        return words
    return (" " if words[0] == " " else "") + md_text(words) + (" " if words[-1] == " " else "")


def _frameworks_having(method: Any, lang: str = "en") -> str:
    """Every framework with an option for `method`, named (none left out: a list cut short
    reads as the complete one)."""
    cat = _catalog()
    return ("、" if lang == "zh" else ", ").join(md_text(cat.frameworks[f].name) for f in cat.frameworks if f in method.options)


def short_name(name: str) -> str:
    """A method's name without its parenthesised gloss (the tracker page has the long form)."""
    head = name.split(" (", 1)[0].strip()
    return head or name


def short_file(file: str) -> str:
    """The first path of the catalog's file note."""
    head = file.split(" (", 1)[0].split(";", 1)[0].strip()
    return head or file


def _catalog() -> Any:
    from analyzers.catalog import load_catalog

    return load_catalog()


def _catalog_key(method: Any, framework_id: str, found: dict[str, Any]) -> str:
    """How an option the reporter already has is named in the comment: the catalog's longest
    spelling that the reporter's path ends with (never the path they wrote around it: their
    words), else the option's name."""
    def norm(text: str) -> str:
        return str(text).strip().lstrip("+~-").replace("-", "_").lower()

    path = norm(found.get("key") or "")
    options = method.options.get(framework_id, [])
    named = [o for o in options if o.name == found.get("option")] or options
    keys = [k for o in named for k in o.keys
            if norm(k) and (path == norm(k) or path.endswith("." + norm(k)))]
    if keys:
        return max(keys, key=lambda k: len(norm(k)))
    return str(named[0].name if named else method.id)


def _shown_value(method: Any, framework_id: str, found: dict[str, Any]) -> str | None:
    """The value of a setting already on, shown back only when it is a number, a yes/no word
    or a choice the catalog names for the option (never other words of the reporter's), and
    passes the strict check."""
    from analyzers.setup_config import plain_value

    value = safe_value(found.get("value"))
    options = method.options.get(framework_id, [])
    hint = next((o.value_hint for o in options if o.name == found.get("option")), None)
    return value if value is not None and plain_value(value, hint) else None


def _suggestable(method: Any, framework_id: str) -> Any | None:
    """The option to suggest for `method` in this framework, or None (absent or built in)."""
    options = [o for o in method.options.get(framework_id, []) if not o.is_builtin]
    if not options:
        return None
    options.sort(key=lambda o: (o.experimental, "example config" in o.status, "submodule" in o.status))
    return options[0]


def compose_failure_comment(
    analysis: dict[str, Any],
    framework_id: str,
    *,
    setup: dict[str, Any] | None,
    lang: str,
    public_url: str,
    declined: set[str] | frozenset[str] = frozenset(),
) -> FailureComment | None:
    """The comment for a failure report, or None when there is nothing worth saying (no
    method this framework has for the failure that is not already set or declined)."""
    cat = _catalog()
    failure = analysis.get("failure") or {}
    category = failure.get("category")
    kind = cat.failures.get(category) if category else None
    framework = cat.frameworks.get(framework_id)
    if kind is None or framework is None:
        return None
    setup_options = (setup or {}).get("options") or {}
    suggestions: list[Suggestion] = []
    already: list[dict[str, Any]] = []
    elsewhere: list[dict[str, Any]] = []
    declined_hit: list[str] = []
    methods = cat.methods_for_failure(category)
    # Methods whose first listed failure is this one are the most direct answers.
    methods.sort(key=lambda m: m.failures.index(category) if category in m.failures else 99)
    for method in methods:
        if method.id in declined:
            declined_hit.append(method.id)
            continue
        url = f"{public_url}/methods/{method.id}"
        found = setup_options.get(method.id)
        if found and found.get("enabled"):
            already.append(
                {"id": method.id, "name": md_text(short_name(method.name)), "url": url,
                 "key": code_span(_catalog_key(method, framework_id, found)),
                 "value": _shown_value(method, framework_id, found)}
            )
            continue
        option = _suggestable(method, framework_id)
        if option is not None and option.on_by_default and not found:
            continue  # the framework runs it already; named only to a config that turns it off
        if option is not None:
            suggestions.append(
                Suggestion(
                    method_id=method.id, name=md_text(short_name(method.name)), url=url,
                    setting=setting_md_in(option, lang), caution=caution_md(method, framework, option, lang),
                    option_name=option.name, commit=option.commit, file=option.file,
                    experimental=option.experimental,
                )
            )
        elif not method.options.get(framework_id) and method.options:
            elsewhere.append({"id": method.id, "name": md_text(short_name(method.name)), "url": url,
                              "frameworks": _frameworks_having(method, lang)})
    if not suggestions:
        return None
    shown = suggestions[:MAX_METHODS]
    confidence = float(failure.get("confidence") or 0.0)
    # A kind a person set (`/rltracker kind`, the failure part then carries `set_by`) is
    # said as theirs: no runner-up, no confidence, no cue terms of the analyzer's own finding.
    set_by = SET_BY.get(lang, SET_BY["en"]).get(failure.get("set_by") or "")
    # A second listed kind is named (a link to its page, no methods): the leading kind is
    # wrong about twice as often when the analysis lists more than one
    # (docs/history/analyzers-journal.md, hedge11).
    second = None if set_by else cat.runner_up(failure)
    context = {
        "marker": FAILURE_MARKER,
        "kind_title": md_text(kind.title_zh if lang == "zh" else kind.title),
        "kind_url": f"{public_url}/failures/{kind.key}",
        "second_title": md_text(second.title_zh if lang == "zh" else second.title) if second else None,
        "second_url": f"{public_url}/failures/{second.key}" if second else None,
        # the command that makes the runner-up the kind (a catalog key: no thread text), only
        # where that verdict would list its methods (else it withdraws the comment)
        "second_command": code_span(f"/rltracker kind {second.key}")
        if second and compose_failure_comment(
            {"failure": {"is_failure_report": True, "category": second.key, "set_by": "author"}},
            framework_id, setup=setup, lang=lang, public_url=public_url, declined=declined)
        else None,
        "sure": confidence_words(confidence, lang, kinds=2 if second else 1),
        "confidence": f"{confidence:.2f}",
        "methods": shown,
        "already": already[:3],
        "elsewhere": elsewhere[:MAX_ELSEWHERE],
        # a list cut short says so (it read as the whole one), and the command listing it all
        "more_here": max(0, len(suggestions) - MAX_METHODS),
        "more_elsewhere": max(0, len(elsewhere) - MAX_ELSEWHERE),
        "methods_command": code_span(f"/rltracker methods {kind.key}"),
        "framework": md_text(framework.name),
        "evidence": [] if set_by else [code_span(e) for e in evidence_labels(failure.get("evidence"))],
        "set_by": set_by,
        # the keys the footer's `/rltracker kind <failure>` takes (the site shows titles only)
        "kinds": [code_span(k) for k in cat.failures],
        "verified": [
            {"name": s.name, "option": code_span(s.option_name), "file": code_span(short_file(s.file)),
             "commit": code_span((s.commit or framework.verified_commit)[:10])}
            for s in shown
        ],
    }
    body = render(f"comments/failure.{lang}.md.j2", context)
    return FailureComment(
        body=body, lang=lang, category=category,
        suggested=[s.method_id for s in shown],
        already_set=[a["id"] for a in already],
        elsewhere=[e["id"] for e in elsewhere[:MAX_ELSEWHERE]],
        declined=declined_hit,
        details={"confidence": None if set_by else confidence,
                 "runner_up": second.key if second else None,
                 "set_by": failure.get("set_by") if set_by else None},
    )


def render(template: str, context: dict[str, Any]) -> str:
    text = markdown_env().get_template(template).render(**context)
    # Templates keep blank lines tidy; collapse runs left by skipped blocks.
    lines = text.strip().splitlines()
    out: list[str] = []
    for line in lines:
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line.rstrip())
    return "\n".join(out) + "\n"


def withdrawn_comment(lang: str, public_url: str, *, set_by: bool = False) -> str:
    """The one-line withdrawal; `set_by`: after a person set a kind the framework has no
    method left to suggest for."""
    return render(f"comments/withdrawn.{lang}.md.j2",
                  {"marker": FAILURE_MARKER, "public_url": public_url, "set_by": set_by})


def methods_reply(failure_key: str, framework_id: str | None, lang: str, public_url: str) -> str:
    """Reply to `/rltracker methods <failure>`: every catalog method for it in this framework."""
    cat = _catalog()
    kind = cat.failures.get(failure_key)
    rows_here: list[dict[str, Any]] = []
    rows_builtin: list[dict[str, Any]] = []
    rows_elsewhere: list[dict[str, Any]] = []
    framework = cat.frameworks.get(framework_id or "")
    for method in cat.methods_for_failure(failure_key):
        url = f"{public_url}/methods/{method.id}"
        option = _suggestable(method, framework.id) if framework else None
        if option is not None:
            rows_here.append({"name": md_text(short_name(method.name)), "url": url,
                              "setting": setting_md_in(option, lang), "default": option.on_by_default,
                              "experimental": option.experimental})
        elif framework is not None and method.has(framework.id):
            # always on in this framework: nothing to turn on, but not "only in other frameworks"
            rows_builtin.append({"name": md_text(short_name(method.name)), "url": url})
        elif method.options:
            rows_elsewhere.append({"name": md_text(short_name(method.name)), "url": url,
                                   "frameworks": _frameworks_having(method, lang)})
    return render(
        f"comments/methods_reply.{lang}.md.j2",
        {
            "marker": REPLY_MARKER,
            "known": kind is not None,
            "kind_title": md_text((kind.title_zh if lang == "zh" else kind.title) if kind else failure_key),
            "kind_url": f"{public_url}/failures/{failure_key}",
            "framework": md_text(framework.name) if framework else None,
            # all of them, uncut: the failure comment sends readers here "to list them all"
            "here": rows_here,
            "builtin": rows_builtin,
            "elsewhere": rows_elsewhere,
            "kinds": [code_span(k) for k in cat.failures],
        },
    )


STATE_WORDS = {
    "en": {
        "merged": "merged", "open_no_reply": "open, no reply yet", "open_replied": "open, discussed",
        "declined": "declined", "redirected": "redirected elsewhere", "lapsed": "closed as inactive",
        "closed_by_author": "closed by the proposer", "closed_other": "closed",
    },
    "zh": {
        "merged": "已合并", "open_no_reply": "未关闭，暂无回复", "open_replied": "未关闭，已有讨论",
        "declined": "被拒绝", "redirected": "被转到其他位置", "lapsed": "因不活跃关闭",
        "closed_by_author": "提出者自行关闭", "closed_other": "已关闭",
    },
}


def rule_summary_reply(
    *,
    rules_markdown: str | None,
    framework_id: str | None,
    earlier: list[dict[str, Any]],
    lang: str,
    public_url: str,
) -> str:
    """Reply to a method proposal: rules, what reviewers ask for, earlier proposals."""
    cat = _catalog()
    framework = cat.frameworks.get(framework_id or "")
    words = STATE_WORDS.get(lang, STATE_WORDS["en"])
    rows = []
    for item in earlier[:MAX_EARLIER]:
        fw = cat.frameworks.get(item.get("framework") or "")
        repo, number = str(item["repo"]), int(item["number"])
        rows.append(
            {
                # the tracker's page of the thread: a link to github.com would put a
                # "mentioned this" event into every repository the list names
                "ref": f"[{code_span(f'{repo}#{number}')}]({public_url}/threads/{quote(repo)}/{number})",
                "framework": md_text(fw.name if fw else item["repo"]),
                "state": md_text(words.get(item.get("state") or "", item.get("state") or "?")),
                "url": f"{public_url}/methods/{item['method']}" if item.get("method") else f"{public_url}/proposals",
                "method": md_text(short_name(cat.methods[item["method"]].name)) if item.get("method") in cat.methods else None,
            }
        )
    return render(
        f"comments/rule_summary.{lang}.md.j2",
        {
            "marker": RULES_MARKER,
            "rules": rules_markdown,
            "framework": md_text(framework.name) if framework else None,
            "framework_url": f"{public_url}/frameworks/{framework.id}" if framework else f"{public_url}/",
            "earlier": rows,
            "more": max(0, len(earlier) - MAX_EARLIER),
            "public_url": public_url,
        },
    )


def rules_reply(rules_markdown: str | None, framework_id: str | None, lang: str, public_url: str) -> str:
    return rule_summary_reply(
        rules_markdown=rules_markdown, framework_id=framework_id, earlier=[], lang=lang,
        public_url=public_url,
    ).replace(RULES_MARKER, REPLY_MARKER, 1)


def visible_lines(body: str) -> list[str]:
    """The lines a reader sees without opening <details>: markers and blank lines excluded."""
    out: list[str] = []
    depth = 0
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("<details"):
            depth += 1
        if depth == 0 and stripped and not (stripped.startswith("<!--") and stripped.endswith("-->")):
            out.append(line)
        if stripped.endswith("</details>"):
            depth = max(0, depth - 1)
    return out


def has_marker(body: str | None, marker: str = FAILURE_MARKER) -> bool:
    return bool(body) and marker in body  # type: ignore[operator]


def is_app_comment(body: str | None, author: str | None, author_is_bot: bool | None) -> bool:
    """A comment the app wrote: a bot's (GitHub's type "Bot" or a `[bot]` login) carrying one
    of its markers. Never the marker alone: a person may type or paste it (the app's comment's
    source copied, an edit quoting it), and their comment stays theirs: its command is done
    and it counts as a reply (security71)."""
    return (is_bot_login(author, "Bot" if author_is_bot else None)
            and bool(body) and any(m in body for m in MARKERS))  # type: ignore[operator]


COMMAND_FORMS = ("recheck", "ignore", "stop", "methods [<failure>]", "rules", "kind <failure>",
                 "not-a-failure", "resume")
# What each command does, as the `/rltracker help` reply says it (bot/webhooks/commands.py).
COMMAND_HELP = {
    "en": {
        "recheck": "read the settings and this thread again, and decide again",
        "ignore": "no more comments from rltracker on this thread",
        "stop": "hide rltracker's comments here and mute this thread",
        "methods [<failure>]": "list the methods for that failure (or this thread's kind) in this framework",
        "rules": "reply with this framework's contribution rules",
        "kind <failure>": "say which kind of training failure this reports",
        "not-a-failure": "say this reports no training failure",
        "resume": "lift the pause of rltracker's comments in this repository (maintainers)",
    },
    "zh": {
        "recheck": "重新读取设置与本帖，重新判断",
        "ignore": "rltracker 不再在本帖评论",
        "stop": "隐藏 rltracker 在此的评论，并静默本帖",
        "methods [<failure>]": "列出本框架中针对该失败类型（或本帖的类型）的方法",
        "rules": "回复本框架的贡献规则摘要",
        "kind <failure>": "指明本帖报告的训练失败类型",
        "not-a-failure": "指明本帖并非训练失败报告",
        "resume": "解除 rltracker 在本仓库评论的暂停（仅限维护者）",
    },
}


# What a settings file's problem may show of itself in a note (`config_invalid`): keys and
# PyYAML's words, in a fenced block; no backtick to end the fence, no mention, no markup.
_CONFIG_ERROR_SHOWN = re.compile(r"[^A-Za-z0-9 _.,:;()'\"=/+?-]")


def command_note(problem: str, lang: str, done: str | None = None,
                 command: str | None = None, config_error: str | None = None,
                 stranger: bool = False) -> str:
    """The reply to a command the app could not do as written: `unknown` (no such command),
    `unknown_kind` (`command`, `kind` or `methods`, with a kind the catalog lacks), `no_kind`
    (`methods` with no kind named, on a thread of none), `help`
    (`/rltracker help` or a bare `/rltracker`: the commands), `more` (a comment of several
    commands: only `done` was done), `edited` (an edit changed a command done already;
    `verdict_edited`: a verdict's, which the edit took back),
    `not_allowed` / `not_maintainer` (not the person's to give) or `config_invalid` (a
    recheck read a settings file it cannot use: `config_error`, the file's problem, shown
    in a fenced block with anything but plain characters blanked). `stranger`: the `help`
    of someone who may give no command on the thread says so, and what they may use on a
    thread of their own. Built from fixed words and catalog keys only: what the
    person typed is never repeated (no mention to ping, no Markdown or HTML to inject)."""
    cat = _catalog()
    return render(
        f"comments/command_note.{lang}.md.j2",
        {
            "marker": REPLY_MARKER,
            "problem": problem,
            "commands": [code_span(c) for c in COMMAND_FORMS],
            "command_help": [(code_span(c), COMMAND_HELP.get(lang, COMMAND_HELP["en"])[c])
                             for c in COMMAND_FORMS],
            "kinds": [code_span(k) for k in cat.failures],
            "done": code_span(f"/rltracker {done}") if done else "",
            "command": command or "",
            "config_error": _CONFIG_ERROR_SHOWN.sub(" ", config_error or "")[:400],
            "stranger": stranger,
        },
    )
