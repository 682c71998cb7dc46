"""mkdocs hook: the README is the site's home page (index.md, generated at build time, so the
README stays the one source), with its links into docs/ made relative to the site."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files


def on_files(files: Files, config: Any) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    text = readme.read_text(encoding="utf-8").replace("](docs/", "](")
    files.append(File.generated(config, "index.md", content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    # docs/*.md link to the README as ../README.md: on the site it is the home page
    return markdown.replace("](../README.md", "](index.md")
