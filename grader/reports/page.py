"""The HTML page every report shares (feedback pages, the class summary): one style, readable on a laptop, printable.

No external asset: the style is inline, and so is the few lines of script a page may bring (the summary's sorting).
"""
from __future__ import annotations

from grader.text import html

STYLE = """
body{font:16px/1.45 system-ui,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;max-width:72rem;
  margin:1.5rem auto;padding:0 1.25rem}
h1{font-size:1.6rem;margin-bottom:.3rem}
h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0}
th,td{border-bottom:1px solid #d8dee4;padding:.3rem .6rem;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f6f8fa}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.wide{overflow-x:auto;max-width:100%}
td.status{min-width:9rem}
img{max-width:100%;height:auto}
.muted{color:#59636e;font-weight:normal}
.badge{display:inline-block;min-width:4.5em;text-align:center;border-radius:.8em;padding:0 .5em;font-size:.85em;
  font-weight:600;border:1px solid}
.badge.passed{background:#dafbe1;color:#116329;border-color:#4ac26b}
.badge.failed{background:#ffebe9;color:#a40e26;border-color:#ff8182}
.badge.holds,.badge.not-judged-yet{background:#f6f8fa;color:#57606a;border-color:#d0d7de}
.badge.adjusted{background:#fff8c5;color:#7d4e00;border-color:#d4a72c}
tr.failed td{background:#fffafa}
.feedback{color:#5c2b29;margin:.25rem 0 0}
.problem{border-left:4px solid #cf222e;background:#fff5f5;padding:.5rem .9rem}
th.sortable{cursor:pointer;user-select:none}
th.sortable::after{content:" \\2195";color:#8c959f}
@media print{
  body{max-width:none;margin:0;padding:0;font-size:10pt}
  .wide{overflow:visible}
  a{color:inherit;text-decoration:none}
  h2{break-after:avoid}
  tr,img,figure{break-inside:avoid}
  .badge,th,tr.failed td,.problem{print-color-adjust:exact;-webkit-print-color-adjust:exact}
  th.sortable::after{content:none}
}
"""


def html_page(title: str, body: str, script: str = "") -> str:
    """A whole HTML page: ``body`` (already escaped HTML) under ``title`` (text), with an optional inline script."""
    script = f"<script>{script}</script>" if script else ""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{html(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}{script}</body></html>\n")
