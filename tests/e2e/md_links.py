#!/usr/bin/env python3
"""Check the relative links of Markdown files (t275).

    python3 tests/e2e/md_links.py FILE.md...

Each [text](target) outside code (fences and `inline`) whose target is not
a URL (http:, https:, mailto:) must name an existing file or directory,
relative to the linking file; a #fragment on a .md file (or alone, for the
same file) must be one of that file's headings as GitHub makes anchors of
them: lower case, punctuation but '-' and '_' dropped, spaces as '-', a
repeated heading with -1, -2, ... Prints one line per broken link,
FILE:LINE: target: why, and the count of links checked; exits 1 if any
is broken.
"""
import os
import re
import sys

LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)  # \w keeps letters, digits and '_'
    return s.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out, fence = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                    continue
                m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                a = slug(m.group(1))
                n = seen.get(a, 0)
                seen[a] = n + 1
                out.add(a if n == 0 else "%s-%d" % (a, n))
        cache[path] = out
    return cache[path]


def links(path):
    fence = False
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for m in LINK.finditer(INLINE_CODE.sub("", line)):
                yield no, m.group(1)


def main(files):
    bad = checked = 0
    for path in files:
        for no, target in links(path):
            # URLs, and text that only looks like a link (a regex quoted
            # in prose: "[a-z](?:...)") are not relative links.
            if re.match(r"(https?|mailto):", target) or not re.match(r"[#\w./~-]", target):
                continue
            checked += 1
            file_part, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            why = None
            if not os.path.exists(dest):
                why = "no such file"
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                why = "no heading with the anchor #%s in %s" % (frag, dest)
            if why:
                bad += 1
                print("%s:%d: %s: %s" % (path, no, target, why))
    print("%d relative links checked, %d broken" % (checked, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
