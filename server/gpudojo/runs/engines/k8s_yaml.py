"""Write Kubernetes manifests as YAML with comments on the fields that matter.

PyYAML cannot write comments, and a manifest a learner reads should say why its fields are set.
``dump(doc, comments)`` writes plain data (dicts, lists, str, int, float, bool, None) in block
style, kubectl's layout, and puts each comment on the lines above the field it belongs to.
Comments are keyed by the field's path: a tuple of keys and list indices, e.g.
``("spec", "template", "spec", "containers", 0, "resources")``. Multi-line strings (the code in a
ConfigMap) become literal blocks, so the files read as the source they are. ``yaml.safe_load`` of
the text gives back ``doc`` exactly; the tests check it for every manifest.
"""

from __future__ import annotations

import re
from typing import Any

Path = tuple[str | int, ...]

# Words YAML 1.1 (PyYAML) reads as something other than a string; "=" alone is its "value" key,
# which safe_load cannot construct at all.
_SPECIAL = re.compile(
    r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL|~|=|<<)$"
)
# What a YAML stream may hold as it is (PyYAML's Reader refuses anything else, even quoted).
_PRINTABLE = re.compile("[\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Escapes of a double-quoted scalar; line breaks above all, which double quotes would fold.
_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\t": "\\t",
    "\n": "\\n",
    "\r": "\\r",
    "\x85": "\\N",
    "\u2028": "\\L",
    "\u2029": "\\P",
}
# A plain scalar's first character may not be a flow indicator ("{", "}") or another indicator.
_PLAIN = re.compile(r"^[A-Za-z0-9_/.$()=+-][A-Za-z0-9_ /.:@$(){}=+,-]*\Z")
_NUMBER_LIKE = re.compile(r"^[-+]?(\.?[0-9]|0[xob])|^[-+]?\.(inf|Inf|INF|nan|NaN|NAN)$|^[0-9_:]+$")


def dump_all(docs: list[tuple[dict[str, Any], dict[Path, str]]], header: str = "") -> str:
    """Several documents, separated by ``---``, after a header comment."""
    parts = [dump(doc, comments) for doc, comments in docs]
    return comment_block(header, 0) + "---\n" + "---\n".join(parts)


def dump(doc: dict[str, Any], comments: dict[Path, str] | None = None) -> str:
    lines: list[str] = []
    _mapping(doc, (), 0, comments or {}, lines)
    return "\n".join(lines) + "\n"


def comment_block(text: str, indent: int) -> str:
    if not text:
        return ""
    pad = " " * indent
    return "".join(f"{pad}# {line}".rstrip() + "\n" for line in text.strip("\n").splitlines())


def scalar(value: Any) -> str:
    """A scalar as YAML that reads back as the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return ".nan" if value != value else ".inf" if value > 0 else "-.inf"
        # YAML 1.1 reads 1e+16 as a string: its floats need a dot and a signed exponent.
        text = repr(value)
        return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    text = str(value)
    plain = (
        _PLAIN.match(text)
        and not _SPECIAL.match(text)
        and not _NUMBER_LIKE.match(text)
        and not text.endswith(" ")
        and " #" not in text
        and ": " not in text
        and not text.endswith(":")
        and text not in ("-", "---", "...")
        and not text.startswith(("- ", "{", "[", "&", "*", "!", "|", ">", "%", "@", "`"))
    )
    return text if plain else double_quoted(text)


def double_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar that reads back as exactly ``text``. Not JSON's
    quoting: JSON writes U+1F600 as a surrogate pair, which YAML reads as two lone surrogates;
    here every printable character stays as it is (the files are UTF-8) and the rest is escaped."""
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c == "\ufeff" or not _PRINTABLE.match(c):
            # A byte-order mark is printable, but a reader may drop it.
            n = ord(c)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def _comment(comments: dict[Path, str], path: Path, indent: int, lines: list[str]) -> None:
    text = comments.get(path)
    if text:
        lines.extend(comment_block(text, indent).rstrip("\n").split("\n"))


def _mapping(doc: dict[str, Any], path: Path, indent: int, comments: dict[Path, str], lines: list[str]) -> None:
    pad = " " * indent
    for key, value in doc.items():
        here = (*path, key)
        _comment(comments, here, indent, lines)
        head = f"{pad}{scalar(key)}:"
        _value(value, here, indent, head, comments, lines)


def _value(value: Any, path: Path, indent: int, head: str, comments: dict[Path, str], lines: list[str]) -> None:
    """``head`` is "key:" or "- "; the value goes after it or on the lines below."""
    if isinstance(value, dict) and value:
        if head.endswith("- "):
            # The first key shares the dash's line: "- name: x", the others line up under it.
            inner: list[str] = []
            _mapping(value, path, indent + 2, comments, inner)
            first = next(i for i, line in enumerate(inner) if not line.lstrip().startswith("#"))
            lines.extend(inner[:first])
            lines.append(head + inner[first].lstrip())
            lines.extend(inner[first + 1 :])
        else:
            lines.append(head)
            _mapping(value, path, indent + 2, comments, lines)
    elif isinstance(value, list) and value:
        if head.endswith("- "):
            lines.append(head.rstrip())
            _sequence(value, path, indent + 2, comments, lines)
        else:
            lines.append(head)
            _sequence(value, path, indent, comments, lines)
    elif isinstance(value, str) and "\n" in value and _literal_ok(value):
        lines.append(
            f"{head} {_literal_header(value)}" if not head.endswith(" ") else f"{head}{_literal_header(value)}"
        )
        body = value[:-1] if value.endswith("\n") else value
        pad = " " * (indent + 2)
        lines.extend(f"{pad}{line}" if line else "" for line in body.split("\n"))
    else:
        text = "{}" if value == {} else "[]" if value == [] else scalar(value)
        lines.append(f"{head}{text}" if head.endswith(" ") else f"{head} {text}")


def _sequence(items: list[Any], path: Path, indent: int, comments: dict[Path, str], lines: list[str]) -> None:
    pad = " " * indent
    for i, item in enumerate(items):
        here = (*path, i)
        _comment(comments, here, indent, lines)
        _value(item, here, indent, f"{pad}- ", comments, lines)


def _literal_ok(text: str) -> bool:
    """A literal block keeps every character of text: no tabs or odd control characters, no
    trailing spaces on lines (PyYAML keeps them, but editors strip them), one final newline or
    none, and some text that is not a line break."""
    if any(c in "\t\r\u2028\u2029\ufeff\x85" or not _PRINTABLE.match(c) for c in text):
        return False
    # A block of blank lines only reads back as "": such text is quoted instead.
    return (
        bool(text.strip("\n")) and not text.endswith("\n\n") and all(line == line.rstrip() for line in text.split("\n"))
    )


def _literal_header(text: str) -> str:
    # "|2": the content is indented 2 more than its key, whatever its first line starts with;
    # "-": strip the final newline when the text has none.
    return "|2" if text.endswith("\n") else "|2-"
