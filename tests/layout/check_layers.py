#!/usr/bin/env python3
"""check_layers.py: the layers of docs/architecture.md §2, the layer libraries of cmake/MokaLayers.cmake and every
#include of include/ and src/ agree: a file of a layer includes only its own layer's headers and those of the
layers it uses, and every folder of include/moka/ and src/ is a declared layer.

  check_layers.py ROOT          check the tree at ROOT
  check_layers.py --self-test   check that a tree with an upward include, an undeclared folder or tables that
                                disagree fails (so the check can fail)
"""
import pathlib
import re
import sys
import tempfile

ROW = re.compile(r"^\|\s*`(\w+)`\s*\|.*\|\s*([^|]*)\|\s*$")
CMAKE = re.compile(r"^moka_layer\((\w+)(?:\s+USES\s+([\w\s]+))?\)", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def documented_layers(architecture: str) -> dict:
    """The layer table of section 2: `name` | holds | uses (backticked layers, or "nothing")."""
    section = architecture.split("\n## 2.", 1)[1].split("\n## 3.", 1)[0]
    layers = {}
    for line in section.splitlines():
        m = ROW.match(line)
        if m:
            layers[m.group(1)] = re.findall(r"`(\w+)`", m.group(2))
    return layers


def declared_layers(cmake: str) -> dict:
    return {m.group(1): (m.group(2) or "").split() for m in CMAKE.finditer(cmake)}


def check(root: pathlib.Path) -> list:
    problems = []
    docs = documented_layers((root / "docs" / "architecture.md").read_text())
    cmake = declared_layers((root / "cmake" / "MokaLayers.cmake").read_text())
    if not cmake:
        return ["cmake/MokaLayers.cmake declares no moka_layer()"]
    doc_order = [name for name in docs if name in cmake]
    if list(docs) != list(cmake):
        problems.append(f"docs/architecture.md §2 lists layers {list(docs)}, cmake/MokaLayers.cmake {list(cmake)}")
    for name in doc_order:
        if sorted(docs[name]) != sorted(cmake[name]):
            problems.append(f"layer {name}: docs/architecture.md §2 says it uses {docs[name]}, "
                            f"cmake/MokaLayers.cmake {cmake[name]}")
    position = {name: i for i, name in enumerate(cmake)}
    for name, uses in cmake.items():
        for used in uses:
            if used not in position:
                problems.append(f"layer {name} uses {used}, which is not a layer")
            elif position[used] >= position[name]:
                problems.append(f"layer {name} uses {used}, which is not below it")
    # Folders that hold files (git keeps no empty ones, so neither does a clone).
    folders = [p for p in sorted((root / "include" / "moka").iterdir()) if p.is_dir() and any(p.rglob("*.*"))]
    folders += [p for p in sorted((root / "src").iterdir()) if p.is_dir() and any(p.rglob("*.*"))]
    for folder in folders:
        if folder.name not in cmake:
            problems.append(f"{folder.relative_to(root)}/ is not a layer of cmake/MokaLayers.cmake")
    for folder in folders:
        layer = folder.name
        if layer not in cmake:
            continue
        allowed = set(cmake[layer]) | {layer}
        for path in sorted(folder.rglob("*")):
            if not path.is_file() or path.suffix not in (".h", ".cpp", ".inc"):
                continue
            text = path.read_text()
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                where = f"{path.relative_to(root)}:{line}"
                parts = target.split("/")
                if target == "moka/moka.h":
                    problems.append(f"{where}: layer {layer} includes the umbrella header moka/moka.h")
                elif parts[0] == "moka" and len(parts) > 2:
                    if parts[1] not in allowed:
                        problems.append(f"{where}: layer {layer} includes {target}, of layer {parts[1]}, "
                                        f"which it may not use (it uses {', '.join(cmake[layer]) or 'nothing'})")
                elif len(parts) > 1 and parts[0] in cmake:  # an internal header of src/<layer>/
                    if parts[0] not in allowed:
                        problems.append(f"{where}: layer {layer} includes {target}, internal to layer {parts[0]}, "
                                        f"which it may not use")
    return problems


def self_test() -> int:
    architecture = """# A
## 2. Layers
| layer | holds | uses |
|---|---|---|
| `core` | x | nothing |
| `exec` | y | `core` |
## 3. Next
"""
    cases = {
        "an upward include": ("", {"src/core/a.cpp": '#include "moka/exec/b.h"\n'}, "includes moka/exec/b.h"),
        "an upward internal include": ("", {"include/moka/core/a.h": '#include "exec/c.h"\n'}, "internal to layer"),
        "an undeclared folder": ("", {"src/data/a.cpp": ""}, "src/data/ is not a layer"),
        "tables that disagree": ("moka_layer(exec USES core)\n", {}, "docs/architecture.md §2 lists layers"),
        "a layer using one above it": ("moka_layer(core USES exec)\nmoka_layer(exec USES core)\n", {},
                                       "which is not below it"),
    }
    failures = 0
    good = "moka_layer(core)\nmoka_layer(exec USES core)\n"
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        for name, (cmake, files, expected) in {"a good tree": ("", {}, None), **cases}.items():
            root = base / re.sub(r"\W", "_", name)
            for folder in ("docs", "cmake", "include/moka/core", "include/moka/exec", "src/core", "src/exec"):
                (root / folder).mkdir(parents=True, exist_ok=True)
            (root / "docs" / "architecture.md").write_text(architecture)
            (root / "cmake" / "MokaLayers.cmake").write_text(cmake or good)
            (root / "src" / "exec" / "ok.cpp").write_text('#include "moka/core/a.h"\n#include "core/b.h"\n')
            for path, text in files.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
            problems = check(root)
            found = any(expected in p for p in problems) if expected else not problems
            print(f"{'ok' if found else 'FAILED'}: {name}: {problems or 'no problems'}")
            failures += not found
    return 1 if failures else 0


def main(argv: list) -> int:
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(pathlib.Path(argv[1]))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problem(s); the layers are in docs/architecture.md §2")
        return 1
    print("every include follows the layers of docs/architecture.md §2")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
