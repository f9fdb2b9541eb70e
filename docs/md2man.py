#!/usr/bin/env python3
"""Turns docs/git-remote-fdl.md into the man page git-remote-fdl.1, so the manual has one source.

It knows only the Markdown that manual uses: `# name(section)`, `##`/`###` headings, paragraphs,
fenced code, `-` and `1.` lists (with indented continuation lines), tables (each row becomes a
tagged paragraph: first cell as the tag, further cells named by their column), `term` lines
followed by `: definition`, and inline `code`, **bold**, *italics* and [links](target).
Usage: md2man.py MANUAL.md > page.1
"""

import re
import sys


def escape(text):
    return text.replace("\\", "\\e").replace("-", "\\-")


def inline(text):
    out = []
    # Code first, so nothing inside it is read as Markdown.
    for i, part in enumerate(re.split(r"`([^`]*)`", text)):
        if i % 2:
            out.append("\\fB" + escape(part) + "\\fR")
            continue
        part = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", part)
        part = escape(part)
        part = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", part)
        part = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\\fI\1\\fR", part)
        out.append(part)
    return "".join(out)


def line(text):
    """A roff text line: a leading dot or quote would be read as a request."""
    text = text.strip()
    return "\\&" + text if text[:1] in (".", "'") else text


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def convert(md, date=""):
    lines = md.splitlines()
    out = []
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(line(inline(" ".join(para))))
            para.clear()

    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        if s.startswith("# "):
            flush()
            m = re.match(r"#\s+(.+?)\((\d)\)", s)
            name, section = (m.group(1), m.group(2)) if m else (s[2:], "1")
            out.append(f'.TH "{name.upper()}" "{section}" "{date}" "git-remote-fdl" "Git Manual"')
            out.append(".nh")
            out.append(".ad l")
        elif s.startswith("## "):
            flush()
            out.append(".SH " + '"' + inline(s[3:]) + '"')
        elif s.startswith("### "):
            flush()
            out.append(".SS " + '"' + inline(s[4:]) + '"')
        elif s.startswith("```"):
            flush()
            out += [".PP", ".RS 4", ".nf"]
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                out.append(line(escape(lines[i])) if lines[i].strip() else "")
                i += 1
            out += [".fi", ".RE"]
        elif s.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(cells(lines[i]))
                i += 1
            i -= 1
            has_header = len(rows) > 1 and set(rows[1][0]) <= set("-: ")
            head, body = (rows[0], rows[2:]) if has_header else ([], rows)
            for r in body:
                out.append(".TP")
                out.append(line(inline(r[0])))
                if len(r) > 2 and head:
                    # Wider tables: each further cell named by its column.
                    rest = "; ".join(f"{h}: {c}" for h, c in zip(head[1:], r[1:]) if c)
                else:
                    rest = " ".join(c for c in r[1:] if c)
                out.append(line(inline(rest)))
        elif re.match(r"^(-|\d+\.)\s", s) and not raw.startswith(" "):
            flush()
            bullet = "\\(bu" if s.startswith("-") else s.split()[0]
            item = [re.sub(r"^(-|\d+\.)\s+", "", s)]
            while (
                i + 1 < len(lines)
                and lines[i + 1].startswith("  ")
                and lines[i + 1].strip()
            ):
                i += 1
                item.append(lines[i].strip())
            out.append(f".IP {bullet} 4")
            out.append(line(inline(" ".join(item))))
        elif s and i + 1 < len(lines) and lines[i + 1].startswith(": "):
            flush()
            out.append(".TP")
            out.append(line(inline(s)))
            i += 1
            text = [lines[i][2:].strip()]
            while i + 1 < len(lines) and lines[i + 1].startswith("  ") and lines[i + 1].strip():
                i += 1
                text.append(lines[i].strip())
            out.append(line(inline(" ".join(text))))
        elif not s:
            flush()
        else:
            para.append(s)
        i += 1
    flush()
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(convert(f.read()))
