"""Render the built quick-start page in headless Chromium and fail if it is broken.

Usage::

    python docs/check_render.py docs/_build/html [--page quickstart.html] [--chromium PATH]

Checks, each with a one-line message on failure (exit status 1):

* Chromium renders the page (``--screenshot``) and the screenshot is not blank: no
  single colour may cover more than 99.5 % of the pixels, and the page must use a
  reasonable number of distinct colours;
* the rendered DOM (``--dump-dom``) holds enough visible text;
* every ``<img>`` of the rendered page points to a file that exists inside the build
  and loads as an image (PNG/JPEG/GIF via Pillow, SVG as XML with an ``<svg>`` root),
  and at least one image is present.

Exit status 2 means the check could not run (no Chromium, no page).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

MIN_TEXT_CHARS = 1500  # the quick start has several paragraphs and code blocks
MAX_DOMINANT_SHARE = 0.995
MIN_COLOURS = 16
WINDOW = "1280,2000"


class _Page(HTMLParser):
    """Visible text and <img> sources of an HTML document."""

    _HIDDEN = {"script", "style", "noscript", "template", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.images: list[str] = []
        self.text: list[str] = []
        self._hidden_depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in self._HIDDEN:
            self._hidden_depth += 1
        if tag == "img":
            src = dict(attrs).get("src")
            self.images.append(src if src is not None else "")

    def handle_endtag(self, tag):
        if tag in self._HIDDEN and self._hidden_depth:
            self._hidden_depth -= 1

    def handle_data(self, data):
        if not self._hidden_depth:
            self.text.append(data)


def find_chromium(explicit: str | None) -> str:
    for name in [explicit] if explicit else ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name) if name else None
        if path:
            return path
    raise SystemExit2("no Chromium found (Debian: apt-get install -y chromium)")


class SystemExit2(Exception):
    """The check could not run."""


def chromium(binary: str, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="dpconvex-render-") as profile:
        cmd = [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--no-first-run",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
            f"--window-size={WINDOW}",
            "--virtual-time-budget=5000",
            *args,
        ]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def check_screenshot(png: Path) -> list[str]:
    import numpy as np
    from PIL import Image

    if not png.is_file() or png.stat().st_size == 0:
        return [f"Chromium wrote no screenshot ({png})"]
    with Image.open(png) as im:
        rgb = np.asarray(im.convert("RGB"))
    pixels = rgb.reshape(-1, 3)
    packed = (pixels[:, 0].astype(np.uint32) << 16) | (pixels[:, 1].astype(np.uint32) << 8)
    packed |= pixels[:, 2].astype(np.uint32)
    values, counts = np.unique(packed, return_counts=True)
    share = counts.max() / packed.size
    problems = []
    if share > MAX_DOMINANT_SHARE:
        colour = f"#{int(values[counts.argmax()]):06x}"
        problems.append(
            f"blank page: {100 * share:.2f}% of the screenshot is one colour ({colour})"
        )
    if values.size < MIN_COLOURS:
        problems.append(f"blank page: the screenshot has only {values.size} distinct colours")
    return problems


def check_image_file(path: Path) -> str | None:
    """None if ``path`` is a loadable image, else what is wrong with it."""
    if not path.is_file():
        return "file does not exist"
    if path.suffix.lower() == ".svg":
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as err:
            return f"not valid SVG: {err}"
        return None if root.tag.endswith("svg") else f"not SVG (root <{root.tag}>)"
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.load()
            if im.width < 1 or im.height < 1:
                return "empty image"
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as err:
        return f"not a valid image: {err}"
    return None


def resolve(src: str, page: Path, root: Path) -> Path | str:
    """The file an <img src> points to, or a message when it cannot be inside the build."""
    if not src:
        return "empty src"
    parsed = urlparse(src)
    if parsed.scheme == "data":
        return "inline"
    if parsed.scheme in ("http", "https"):
        return f"remote image {src} (the site must not depend on the network)"
    if parsed.scheme == "file":
        target = Path(unquote(parsed.path))
    elif parsed.scheme:
        return f"unsupported URL scheme in {src}"
    else:
        target = page.parent / unquote(parsed.path)
    target = target.resolve()
    try:
        target.relative_to(root)
    except ValueError:
        return f"{src} points outside the build directory"
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html_dir", type=Path, help="the built HTML directory (docs/_build/html)")
    ap.add_argument("--page", default="quickstart.html", help="page to check, relative")
    ap.add_argument("--chromium", default=None, help="Chromium binary (default: from PATH)")
    ap.add_argument("--screenshot", type=Path, default=None, help="keep the screenshot here")
    args = ap.parse_args(argv)

    root = args.html_dir.resolve()
    page = (root / args.page).resolve()
    try:
        if not page.is_file():
            raise SystemExit2(f"{page} does not exist: build the documentation first")
        binary = find_chromium(args.chromium)
    except SystemExit2 as err:
        print(f"check_render: cannot run: {err}", file=sys.stderr)
        return 2
    url = page.as_uri()
    problems: list[str] = []

    with tempfile.TemporaryDirectory(prefix="dpconvex-shot-") as tmp:
        png = args.screenshot.resolve() if args.screenshot else Path(tmp) / "page.png"
        shot = chromium(binary, [f"--screenshot={png}", url])
        if shot.returncode != 0:
            problems.append(f"Chromium failed to render the page: {shot.stderr.strip()[-500:]}")
        else:
            problems += check_screenshot(png)

    dom = chromium(binary, ["--dump-dom", url])
    if dom.returncode != 0 or not dom.stdout.strip():
        problems.append(f"Chromium could not dump the DOM: {dom.stderr.strip()[-500:]}")
        parsed = _Page()
    else:
        parsed = _Page()
        parsed.feed(dom.stdout)
    text = " ".join(" ".join(parsed.text).split())
    if len(text) < MIN_TEXT_CHARS:
        problems.append(
            f"too little text on the page: {len(text)} characters (expected >= {MIN_TEXT_CHARS})"
        )

    checked = 0
    for src in parsed.images:
        target = resolve(src, page, root)
        if target == "inline":
            continue
        if isinstance(target, str):
            problems.append(f"broken image: {target}")
            continue
        issue = check_image_file(target)
        checked += 1
        if issue:
            problems.append(f"broken image: {src} -> {target}: {issue}")
    if checked == 0:
        problems.append("no image on the page (the quick start shows the example's plot)")

    if problems:
        print(f"check_render: {args.page} FAILED", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print(
        f"check_render: {args.page} OK: {len(text)} characters of text, "
        f"{checked} image(s) checked, screenshot not blank"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
