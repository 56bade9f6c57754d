# Checks that every citation of docs/ (page, numbered section, "decision N") resolves and none cites outside material.
"""Usage: check_references.py [REPO_ROOT]

The citation form (docs/architecture.md, section 1):
  docs/<page>.md SEC n          a numbered section: a heading of that page starts with n ("## 3. ...", "### 3.1 ...");
  docs/<page>.md SEC a, SEC b    more sections of the same page follow the first (", ", " and ", or a range a-b);
  docs/<page>.md                a whole page;
  decision N / decisions N and M   entry DN of docs/decisions.md.
(SEC stands for the section sign.) Inside a page directly under docs/, a section sign without a page means that
page. Anywhere else one without a page is an error, and so is a mention of the design material that used to live
outside the repository. Markdown links between docs pages are checked too, anchors included.
Prints FILE:LINE: PROBLEM for each reference that does not resolve and exits 1; exits 0 when all do.
"""
import os
import re
import sys

SECTION = "\u00a7"
SCANNED_DIRS = ["src", "include", "tools", "tests", "examples", "bench", "docs", "scripts", "python"]
SCANNED_FILES = ["README.md"]
TEXT_SUFFIXES = (".h", ".hpp", ".cpp", ".cc", ".inc", ".py", ".md", ".txt", ".cmake", ".sh", ".json", ".expected",
                 ".in")
SKIPPED_DIRS = {os.path.join("tests", "fuzz", "corpus")}  # fuzz inputs are data, not prose

NUM = r"\d+(?:\.\d+)*"
SEC_LIST = rf"{SECTION}{NUM}(?:\s*(?:,|and|–|-)\s*{SECTION}{NUM})*"
PAGE = r"(?<![\w./-])docs/(?P<page>[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*\.md)"
CITATION = re.compile(rf"{PAGE}`?(?:\s+(?P<secs>{SEC_LIST}))?")
BARE = re.compile(rf"(?P<secs>{SEC_LIST})")
ANY_SECTION_SIGN = re.compile(SECTION)
DECISION = re.compile(r"\b[Dd]ecisions?\s+(?P<nums>\d+(?:\s*(?:,|and|or|–|-)\s*\d+)*)")
LINK = re.compile(r"\]\((?P<target>[A-Za-z0-9_./-]*?\.md)?(?:#(?P<anchor>[^)\s]*))?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HEADING_NUMBER = re.compile(rf"^({NUM})\.?(?:\s|$)")
DECISION_ENTRY = re.compile(r"^- \*\*D(\d+)\.")
# Names of the design material outside the repository; written in pieces so this file does not match itself.
OUTSIDE = [
    (re.compile(re.escape(".." + "/shared")), "refers to ../" + "shared, outside the repository"),
    (re.compile(re.escape("/work" + "/shared")), "refers to /work/" + "shared, outside the repository"),
    (re.compile(r"caffe2-" + r"(semantics|tests)"), "cites the Caffe2 spec outside the repository"),
    (re.compile(r"\bDESIGN" + r"(\.md|\s+" + SECTION + ")"), "cites DESIGN" + ".md, outside the repository"),
    (re.compile(r"\bquirk" + r"\s+\d+"), "cites a numbered Caffe2 quirk (a list outside the repository)"),
]


def numbers(sec_list):
    """The section numbers of a list like 'SEC2.1, SEC3' or a range 'SEC2-SEC4' (both ends)."""
    return re.findall(rf"{SECTION}({NUM})", sec_list)


def slug(text):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", text).strip().lower()
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


class Page:
    def __init__(self, path):
        self.sections = set()
        self.anchors = set()
        seen = {}
        in_fence = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.lstrip().startswith("```"):
                    in_fence = not in_fence
                    continue
                m = None if in_fence else HEADING.match(line)
                if not m:
                    continue
                title = m.group(2)
                n = HEADING_NUMBER.match(title)
                if n:
                    self.sections.add(n.group(1))
                s = slug(title)
                k = seen.get(s, 0)
                seen[s] = k + 1
                self.anchors.add(s if k == 0 else f"{s}-{k}")


def files_to_scan(root):
    for name in SCANNED_FILES:
        if os.path.isfile(os.path.join(root, name)):
            yield name
    for top in SCANNED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = sorted(d for d in dirnames if os.path.join(rel_dir, d) not in SKIPPED_DIRS)
            for name in sorted(filenames):
                if name.endswith(TEXT_SUFFIXES) or name == "CMakeLists.txt":
                    yield os.path.join(rel_dir, name)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
    docs = os.path.join(root, "docs")
    pages = {}

    def page(name):
        if name not in pages:
            path = os.path.join(docs, name)
            pages[name] = Page(path) if os.path.isfile(path) else None
        return pages[name]

    decisions = {}
    problems = []
    decisions_path = os.path.join(docs, "decisions.md")
    if os.path.isfile(decisions_path):
        with open(decisions_path, encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                m = DECISION_ENTRY.match(line)
                if m:
                    n = int(m.group(1))
                    if n in decisions:
                        problems.append(f"docs/decisions.md:{i}: D{n} is numbered twice (also line {decisions[n]})")
                    decisions[n] = i
    else:
        problems.append("docs/decisions.md: missing")

    resolved = 0
    for rel in files_to_scan(root):
        rel_posix = rel.replace(os.sep, "/")
        own_page = rel_posix[len("docs/"):] if re.fullmatch(r"docs/[^/]+\.md", rel_posix) else None
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                lines = f.read().split("\n")
        except UnicodeDecodeError:
            continue
        for no, line in enumerate(lines, 1):
            where = f"{rel_posix}:{no}"
            for pattern, what in OUTSIDE:
                if pattern.search(line):
                    problems.append(f"{where}: {what}")
            covered = []
            for m in CITATION.finditer(line):
                p = page(m.group("page"))
                if m.group("secs"):
                    covered.append(m.span("secs"))
                if p is None:
                    problems.append(f"{where}: docs/{m.group('page')} does not exist")
                    continue
                resolved += 1
                if m.group("secs"):
                    for n in numbers(m.group("secs")):
                        if n not in p.sections:
                            problems.append(f"{where}: docs/{m.group('page')} has no section {SECTION}{n}")
            for m in BARE.finditer(line):
                if any(a <= m.start() < b for a, b in covered):
                    continue
                covered.append(m.span())
                if own_page is None:
                    problems.append(f"{where}: {m.group('secs')} names no page (write docs/<page>.md {SECTION}n)")
                    continue
                resolved += 1
                for n in numbers(m.group("secs")):
                    if n not in page(own_page).sections:
                        problems.append(f"{where}: this page (docs/{own_page}) has no section {SECTION}{n}")
            for m in ANY_SECTION_SIGN.finditer(line):
                if not any(a <= m.start() < b for a, b in covered):
                    problems.append(f"{where}: a {SECTION} without a section number")
            for m in DECISION.finditer(line):
                for n in re.findall(r"\d+", m.group("nums")):
                    resolved += 1
                    if int(n) not in decisions:
                        problems.append(f"{where}: decision {n} is not in docs/decisions.md")
            if rel_posix.endswith(".md") and (own_page is not None or rel_posix == "README.md"):
                base = "docs/" if own_page is not None else ""
                for m in LINK.finditer(line):
                    target, anchor = m.group("target"), m.group("anchor")
                    if target is None and anchor is None:
                        continue
                    if target is None:
                        name = own_page
                    else:
                        full = os.path.normpath(os.path.join(base, target)).replace(os.sep, "/")
                        if not full.startswith("docs/"):
                            continue
                        name = full[len("docs/"):]
                    p = page(name) if name else None
                    if p is None:
                        problems.append(f"{where}: link to docs/{name}, which does not exist")
                        continue
                    resolved += 1
                    if anchor and anchor not in p.anchors:
                        problems.append(f"{where}: docs/{name} has no heading with anchor #{anchor}")

    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} reference(s) do not resolve (citation form: docs/architecture.md {SECTION}1)")
        return 1
    print(f"{resolved} references resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
