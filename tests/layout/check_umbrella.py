#!/usr/bin/env python3
"""check_umbrella.py: every public header under include/moka is included by moka/moka.h or named in its
"Left out:" comment, and moka.h includes no header that the install rules leave out."""
import pathlib
import re
import sys


def main(root: pathlib.Path) -> int:
    include = root / "include"
    umbrella_path = include / "moka" / "moka.h"
    umbrella = umbrella_path.read_text()
    included = set(re.findall(r'^#include "(moka/[^"]+)"', umbrella, re.M))
    comment = " ".join(line[2:] for line in umbrella.splitlines() if line.startswith("//"))
    left_out_text = comment.split("Left out:", 1)[1] if "Left out:" in comment else ""
    # Names in the comment: full paths, or bare file names that follow a full path of the same folder.
    named = set()
    folder = None
    for token in re.findall(r"[\w/]+\.h", left_out_text):
        if "/" in token:
            named.add(token)
            folder = token.rsplit("/", 1)[0]
        elif folder:
            named.add(f"{folder}/{token}")
    install = (root / "cmake" / "MokaInstall.cmake").read_text()
    excluded = set(re.findall(r'PATTERN "([^"]+)" EXCLUDE', install))
    problems = []
    for header in sorted(p.relative_to(include).as_posix() for p in include.rglob("*.h")):
        if header == "moka/moka.h":
            continue
        if header not in included and header not in named:
            problems.append(f"{header}: neither included by moka/moka.h nor named in its 'Left out:' comment")
        if header in included and pathlib.PurePosixPath(header).name in excluded:
            problems.append(f"{header}: included by moka/moka.h but not installed (cmake/MokaInstall.cmake)")
    for header in sorted(included | named):
        if not (include / header).exists():
            problems.append(f"moka/moka.h names {header}, which does not exist")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    print(f"moka/moka.h: {len(included)} headers included, {len(named)} left out with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
