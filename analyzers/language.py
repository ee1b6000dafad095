"""Which language to answer an issue in: Chinese ("zh") or English ("en").

Chinese reports in these repositories often paste English logs, configs and tracebacks, so
code blocks, inline code and URLs are removed first and only the prose is counted. The title
weighs as much as the body's prose: a Chinese title over an English template body is a
Chinese reporter. One pass over at most 65,536 characters per text; no regular expression
with nested quantifiers.
"""

from __future__ import annotations

import re

from analyzers.text import strip_html_comments

MAX_CHARS = 65_536
# Share of CJK ideographs among letters (CJK + Latin) from which prose counts as Chinese.
ZH_SHARE = 0.2
MIN_CJK = 4  # a stray character or two (a name, a quoted term) does not make a text Chinese

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]{0,400}`")
_URL = re.compile(r"https?://\S{1,400}")


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= code <= 0x4DBF  # extension A
        or 0xF900 <= code <= 0xFAFF  # compatibility ideographs
    )


def prose(text: str | None) -> str:
    """The text without fenced code blocks, inline code, URLs and HTML comments (templates)."""
    if not text:
        return ""
    text = strip_html_comments(text[:MAX_CHARS])
    kept: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            kept.append(line)
    out = "\n".join(kept)
    out = _INLINE_CODE.sub(" ", out)
    return _URL.sub(" ", out)


def cjk_share(text: str) -> tuple[int, float]:
    """(number of CJK ideographs, their share among CJK + Latin letters)."""
    cjk = latin = 0
    for ch in text:
        if ch.isascii():
            if ch.isalpha():
                latin += 1
        elif _is_cjk(ch):
            cjk += 1
    letters = cjk + latin
    # One ideograph carries about as much as a short English word: weigh it as 3 letters.
    weighted = cjk * 3
    share = weighted / (weighted + latin) if letters else 0.0
    return cjk, share


def detect_language(title: str | None, body: str | None = None) -> str:
    """"zh" when the issue's prose is Chinese, else "en"."""
    title_cjk, title_share = cjk_share(title or "")
    body_cjk, body_share = cjk_share(prose(body))
    if title_cjk >= 2 and title_share >= 0.4:
        return "zh"
    if body_cjk >= MIN_CJK and body_share >= ZH_SHARE:
        return "zh"
    if title_cjk + body_cjk >= MIN_CJK and title_share >= ZH_SHARE and body_share >= ZH_SHARE:
        return "zh"
    return "en"


__all__ = ["cjk_share", "detect_language", "prose"]
