"""Pages seen in a real browser: headless Chromium (Debian's ``chromium``, which tests/run.sh installs when missing).

``probe(page)`` renders a copy of an HTML page, beside it so that its pictures and links resolve as they do for the
page, with a script appended that reports, once everything loaded, what a person sees: the pictures and their
natural width, the document's width against the window's, each table's rows as rendered text, the badges' words and
colours, the student table's order after a click on its "total" heading, and the left and right edges of the files
shown side by side. ``screenshot(page, png)`` takes a picture. Run as a script, it grades the screenshot class (tests/grading/corpus/klass.py) and writes the docs'
screenshots:

    python3 tests/grading/browser.py docs/img
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LAPTOP = (1366, 800)  # a laptop screen's CSS pixels
PROBE = """<script>
window.addEventListener('load', () => {
  const text = element => element.innerText.trim();
  const tables = {};
  document.querySelectorAll('table[id]').forEach(table => {
    tables[table.id] = [...table.tBodies[0].rows].map(row => [...row.cells].map(text));
  });
  const badges = [...document.querySelectorAll('.badge')].map(badge => {
    const style = getComputedStyle(badge);
    return {text: text(badge), color: style.color, background: style.backgroundColor};
  });
  const sorted = {};
  const headings = [...document.querySelectorAll('#students thead th')];
  const final = headings.findIndex(th => text(th) === 'final');
  if (final >= 0) {
    headings[final].click();
    sorted.ascending = [...document.querySelectorAll('#students tbody tr')].map(row => text(row.cells[final]));
    headings[final].click();
    sorted.descending = [...document.querySelectorAll('#students tbody tr')].map(row => text(row.cells[final]));
  }
  const facts = {
    images: [...document.images].map(image => ({src: image.getAttribute('src'), width: image.naturalWidth})),
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
    links: [...document.links].map(link => link.getAttribute('href')),
    headings: [...document.querySelectorAll('h1, h2')].map(text), tables, badges, sorted,
    sides: [...document.querySelectorAll('.side > div')].map(side => {
      const box = side.getBoundingClientRect();
      return [box.left, box.right];
    }),
  };
  const out = document.createElement('pre');
  out.id = 'probe-facts';
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
});
</script>"""
FACTS = re.compile(r'<pre id="probe-facts">(.*?)</pre>', re.S)


class BrowserMissing(RuntimeError):
    """No Chromium to render with."""


def chromium() -> str:
    """The Chromium executable, or BrowserMissing saying how to install it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise BrowserMissing("Chromium is not installed: `apt-get install -y chromium` (Debian; tests/run.sh installs it "
                         "when apt-get is available)")


def _run(page: Path, *arguments: str, size: tuple[int, int] = LAPTOP) -> str:
    # Chromium's own sandbox cannot start as root (CI machines); the pages are our own, their student text escaped.
    sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([chromium(), "--headless", "--disable-gpu", "--hide-scrollbars", *sandbox,
                               f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
                               "--virtual-time-budget=10000", *arguments, page.resolve().as_uri()],
                              capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def probe(page: Path, size: tuple[int, int] = LAPTOP) -> dict:
    """What a person sees of ``page`` in a window of ``size`` (see the module's docstring)."""
    copy = page.with_name(f".probe-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        dom = _run(copy, "--dump-dom", size=size)
    finally:
        copy.unlink()
    found = FACTS.search(dom)
    if not found:
        raise RuntimeError(f"the probe did not report on {page.name} (the page did not finish loading?)")
    return json.loads(html.unescape(found[1]))


def screenshot(page: Path, png: Path, size: tuple[int, int]) -> None:
    """A picture of the top ``size`` of ``page``."""
    _run(page, f"--screenshot={png.resolve()}", size=size)


def main(target: Path) -> None:
    sys.path[:0] = [str(Path(__file__).parents[2]), str(Path(__file__).parent / "corpus")]
    from klass import grade_class

    with tempfile.TemporaryDirectory() as work:
        out = grade_class(Path(work))
        target.mkdir(parents=True, exist_ok=True)
        screenshot(out / "summary.html", target / "summary.png", (1366, 3700))
        screenshot(out / "feedback" / "ben.html", target / "feedback.png", (1366, 1100))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
