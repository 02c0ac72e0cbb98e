"""Links to the product in lessons: `[text](gpudojo:action?args)` (FORMAT.md, "Links to the product").

The lesson view turns them into buttons that run a JupyterLab command. A notebook copy of a
lesson has no such handler (JupyterLab would open `gpudojo:...` as a web address), so there
each link becomes its text and a note saying where it works.
"""

from __future__ import annotations

import re

SCHEME = "gpudojo:"
NOTEBOOK_NOTE = "(open the lesson in the gpudojo panel to use this link)"

# [text](gpudojo:...) with an optional "title"; not an image (![...]). The text may hold code.
_LINK = r'(?<!!)\[(?P<text>[^\]\n]+)\]\(\s*gpudojo:[^)\s]*(?:\s+"[^"\n]*")?\s*\)'
# Fenced code blocks (``` or ~~~, three or more) keep their text as written.
_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[^\n]*\n.*?^(?P=fence)[ \t]*$", re.M | re.S)
# A code span or a link, whichever starts first: a link written inside a code span stays code,
# and a link whose text holds a code span is still a link.
_SPAN_OR_LINK = re.compile(r"(?P<code>(?P<ticks>`+)(?!`).*?[^`](?P=ticks)(?!`))|(?P<link>" + _LINK + ")", re.S)


def _plain(text: str) -> str:
    return _SPAN_OR_LINK.sub(lambda m: f"{m.group('text')} {NOTEBOOK_NOTE}" if m.group("link") else m.group(0), text)


def links_as_plain_text(markdown: str) -> str:
    """``markdown`` with every gpudojo: link replaced by its text and the notebook note;
    code blocks and code spans are left as they are."""
    if SCHEME not in markdown:
        return markdown
    out, last = [], 0
    for m in _FENCE.finditer(markdown):
        out += [_plain(markdown[last : m.start()]), m.group(0)]
        last = m.end()
    out.append(_plain(markdown[last:]))
    return "".join(out)


def notebook_cells_without_product_links(cells: list) -> list:
    """The markdown cells of a lesson notebook with their gpudojo: links made plain text."""
    for cell in cells:
        if cell.cell_type == "markdown":
            cell.source = links_as_plain_text(cell.source)
    return cells
