#!/usr/bin/env python3
"""Plots scripts/bench-scale.sh's results (JSON lines) as a self-contained SVG, no plotting
library: wall time (log-log: linear growth is a line of slope 1) and peak RSS (linear y)
of `sign -f` and `verify -f` against the number of files (log x).

    scripts/bench-scale-plot.py RESULTS.jsonl OUT.svg "CAPTION"
"""
import json
import math
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
out, caption = sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else ""
rows.sort(key=lambda r: r["n"])
if not rows:
    sys.exit("no results to plot")

W, H = 900, 380
PANEL_W, PANEL_H = 340, 250
LEFT, TOP = 80, 60
SERIES = [("sign", "#1f77b4", "sign -f in/ -o out/"), ("verify", "#d62728", "verify -f out/")]


def esc(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def decades(lo, hi):
    lo_e, hi_e = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if hi_e == lo_e:
        hi_e += 1
    return lo_e, hi_e


def fmt(v):
    if v >= 1000:
        return f"{v / 1000:g}k" if v < 1e6 else f"{v / 1e6:g}M"
    return f"{v:g}"


def panel(x0, title, key, scale_y, unit):
    parts = []
    ns = [r["n"] for r in rows]
    xe0, xe1 = decades(min(ns), max(ns))
    values = [scale_y(r[f"{s}_{key}"]) for r in rows for s, _, _ in SERIES]
    if key == "s":  # time: log y
        ye0, ye1 = decades(min(values), max(values))
        ymap = lambda v: TOP + PANEL_H - (math.log10(v) - ye0) / (ye1 - ye0) * PANEL_H
        yticks = [10.0**e for e in range(ye0, ye1 + 1)]
    else:  # memory: linear y from 0
        top = max(values) * 1.15
        step = 10 ** math.floor(math.log10(top))
        if top / step < 3:
            step /= 2
        top = math.ceil(top / step) * step
        ymap = lambda v: TOP + PANEL_H - v / top * PANEL_H
        yticks = [i * step for i in range(int(round(top / step)) + 1)]
    xmap = lambda n: x0 + (math.log10(n) - xe0) / (xe1 - xe0) * PANEL_W
    parts.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP - 15}" text-anchor="middle" '
                 f'font-weight="bold">{esc(title)}</text>')
    parts.append(f'<rect x="{x0}" y="{TOP}" width="{PANEL_W}" height="{PANEL_H}" '
                 f'fill="none" stroke="#333"/>')
    for e in range(xe0, xe1 + 1):
        x = xmap(10**e)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + PANEL_H}" stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{TOP + PANEL_H + 18}" text-anchor="middle">{fmt(10**e)}</text>')
    for v in yticks:
        y = ymap(v)
        parts.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt(v)}</text>')
    parts.append(f'<text x="{x0 + PANEL_W / 2}" y="{TOP + PANEL_H + 38}" text-anchor="middle">'
                 f'files (log scale)</text>')
    parts.append(f'<text transform="translate({x0 - 50},{TOP + PANEL_H / 2}) rotate(-90)" '
                 f'text-anchor="middle">{esc(unit)}</text>')
    for name, color, _ in SERIES:
        pts = [(xmap(r["n"]), ymap(scale_y(r[f"{name}_{key}"]))) for r in rows]
        parts.append('<polyline fill="none" stroke-width="2" stroke="{}" points="{}"/>'.format(
            color, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)))
        for (x, y), r in zip(pts, rows):
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>')
            label = f"{scale_y(r[f'{name}_{key}']):.3g}"
            parts.append(f'<text x="{x + 5:.1f}" y="{y - 6:.1f}" fill="{color}" font-size="11">{label}</text>')
    return parts


body = []
body += panel(LEFT, "Wall time", "s", lambda v: v, "seconds (log scale)")
body += panel(LEFT + PANEL_W + 110, "Peak RSS", "kib", lambda v: v / 1024, "MiB")
legend_y = H - 22
x = LEFT
for _, color, label in SERIES:
    body.append(f'<line x1="{x}" y1="{legend_y - 4}" x2="{x + 24}" y2="{legend_y - 4}" '
                f'stroke="{color}" stroke-width="2"/>')
    body.append(f'<text x="{x + 30}" y="{legend_y}">mansign {esc(label)}</text>')
    x += 230
body.append(f'<text x="{W - 10}" y="{legend_y}" text-anchor="end" fill="#555">{esc(caption)}</text>')
svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">\n'
       f'<rect width="{W}" height="{H}" fill="white"/>\n'
       f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">'
       f'Batch-signed files: keyless sign and verify of a directory (scripts/bench-scale.sh)</text>\n'
       + "\n".join(body) + "\n</svg>\n")
with open(out, "w") as f:
    f.write(svg)
