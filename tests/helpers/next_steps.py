"""The commands a Markdown comment ends with (``perfgate.render.next_steps``), as a reader of the rendered comment
sees and copies them: the list items' text, escapes undone by a real Markdown parser."""

from __future__ import annotations


def commands_of(markdown: str) -> list[str]:
    from markdown_it import MarkdownIt

    block = markdown.split("**To accept a regression**", 1)[1].split("\n\n", 2)[1]
    tokens = MarkdownIt("commonmark").parse(block)
    return ["".join(c.content for c in t.children or [] if c.type in ("text", "text_special"))
            for t in tokens if t.type == "inline"]
