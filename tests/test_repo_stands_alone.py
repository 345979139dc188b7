"""The repository stands alone: no published text or code points at files outside it.

The papers bindlab follows are cited in the README's References section; nothing in README.md, docs/*.md or
bindlab/ may point at a developer machine's sibling folder (``../shared``, ``shared/seeds``) or at an absolute
``/work/…`` path. Binary files (a NUL byte in their first 8 KiB) are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = (
    ("../shared", re.compile(re.escape("../shared"))),
    ("shared/seeds", re.compile(re.escape("shared/seeds"))),
    # an absolute path: /work/ not preceded by a word character, dot, slash or dash (so no URL path segment)
    ("/work/", re.compile(r"(?<![\w./-])/work/")),
)


def _scanned_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted(p for p in (ROOT / "bindlab").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return files


def _text(path: Path) -> str | None:
    with path.open("rb") as f:
        head = f.read(8192)
        if b"\0" in head:
            return None
        data = head + f.read()
    return data.decode("utf-8", errors="replace")


def test_scanned_set_is_not_empty():
    files = _scanned_files()
    assert (ROOT / "README.md") in files
    assert any(p.suffix == ".py" for p in files)
    assert any(p.parent.name == "docs" for p in files)


def test_no_paths_outside_the_repository():
    hits = []
    for path in _scanned_files():
        text = _text(path)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            for name, pattern in FORBIDDEN:
                if pattern.search(line):
                    hits.append(f"{path.relative_to(ROOT)}:{lineno}: {name!r} in {line.strip()[:120]!r}")
    assert not hits, "paths outside the repository (cite the README's References instead):\n" + "\n".join(hits)


def test_readme_has_the_reference_list():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n## References\n" in readme
    refs = readme.split("\n## References\n", 1)[1]
    for title in (
        "Stuck on Shuffle",
        "CompoSET: A Controlled Single-Edit Benchmark",
        "Seeing Is Not Addressing",
        "LiNeS: Post-training Layer Scaling",
    ):
        assert title in refs, title
