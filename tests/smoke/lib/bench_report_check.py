#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks of tests/smoke/bench-report.sh on what Chromium made of the bench report, printed as
# "PASS name (...)" / "FAIL name (...)" lines; stdlib only (the PNG decoded with zlib here).
#   offline FILE                 the page refers to nothing outside itself and has no script
#   charts DOM ID...             the DOM holds each chart's figure with an <svg> of drawn content
#   not-measured FILE ID...      each chart says "not measured in this run" and draws no data
#   console ERR PROBE_ERR        no console message for the report; the probe's own was seen
#   png FILE                     the screenshot is not blank and shows both verdict colours
import re
import struct
import sys
import zlib
from html.parser import HTMLParser

PREFIX = "bench-report/"
DRAWN = {"rect", "line", "polyline", "circle", "path", "text"}


def result(ok, name, why):
    print("%s %s%s (%s)" % ("PASS" if ok else "FAIL", PREFIX, name, why))
    return ok


class Charts(HTMLParser):
    """Per <figure id=...>: the number of <svg> in it, drawn elements and their text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.figs, self.cur = [], {}, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.stack.append((tag, self.cur))
        if tag == "figure" and a.get("id"):
            self.cur = a["id"]
            self.figs[self.cur] = {"svg": 0, "drawn": 0, "text": []}
        elif self.cur:
            f = self.figs[self.cur]
            if tag == "svg":
                f["svg"] += 1
            elif tag in DRAWN:
                f["drawn"] += 1

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag):
        while self.stack:
            t, prev = self.stack.pop()
            if t == tag:
                self.cur = prev if t == "figure" else self.cur
                return

    def handle_data(self, data):
        if self.cur and data.strip():
            self.figs[self.cur]["text"].append(data.strip())


def parse(path):
    p = Charts()
    with open(path, encoding="utf-8") as fh:
        p.feed(fh.read())
    return p.figs


def cmd_offline(path):
    html = open(path, encoding="utf-8").read()
    refs = re.findall(r'''(?:src|href)\s*=\s*["']([^"']*)["']''', html, flags=re.I)
    outside = [r for r in refs if not r.startswith("#")]
    urls = re.findall(r"url\(|@import", html, flags=re.I)
    scripts = re.findall(r"<script", html, flags=re.I)
    xmlns = set(re.findall(r'xmlns="([^"]*)"', html)) - {"http://www.w3.org/2000/svg"}
    ok = not outside and not urls and not scripts and not xmlns
    return result(ok, "offline", "%d references, all within the page; no script, url() or @import" % len(refs)
                  if ok else "outside references %s, url()/@import %d, scripts %d, xmlns %s"
                  % (outside[:3], len(urls), len(scripts), sorted(xmlns)))


def cmd_charts(dom, ids):
    figs = parse(dom)
    ok = True
    for cid in ids:
        f = figs.get(cid)
        if f is None:
            ok &= result(False, cid, "no <figure id=%s> in the DOM Chromium built" % cid)
            continue
        text = " ".join(f["text"])
        # a chart drawn from figures: an svg, many drawn elements, no "not measured" placeholder
        good = f["svg"] == 1 and f["drawn"] >= 20 and "not measured in this run" not in text
        ok &= result(good, cid, "1 svg, %d drawn elements, %d text runs" % (f["drawn"], len(f["text"]))
                     if good else "svg %d, drawn elements %d, text: %s" % (f["svg"], f["drawn"], text[:120]))
    return ok


def cmd_not_measured(path, ids):
    figs = parse(path)
    ok = True
    for cid in ids:
        f = figs.get(cid)
        text = " ".join(f["text"]) if f else ""
        # placeholder: the sentence, and only the frame (title, text, footer rule and lines)
        good = f is not None and f["svg"] == 1 and "not measured in this run" in text and f["drawn"] <= 6
        ok &= result(good, "not-measured-" + cid, "says not measured in this run, draws %d elements"
                     % (f["drawn"] if f else 0) if good else "figure %s: drawn %s, text: %s"
                     % ("present" if f else "absent", f and f["drawn"], text[:160]))
    return ok


def cmd_console(err, probe_err):
    pat = re.compile(r":CONSOLE[(:]")
    probe = [ln for ln in open(probe_err, errors="replace") if pat.search(ln)]
    if not any("bench-report-probe" in ln for ln in probe):
        return result(False, "console", "the probe page's console.error was not in Chromium's log: "
                      "this check would see nothing")
    lines = [ln.strip() for ln in open(err, errors="replace") if pat.search(ln)]
    return result(not lines, "console", "no console message (the probe's console.error was seen)" if not lines
                  else "%d console messages: %s" % (len(lines), lines[0][:200]))


def png_pixels(path):
    """(width, height, rows of RGB tuples' bytes, bytes per pixel) of an 8-bit PNG."""
    d = open(path, "rb").read()
    if d[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, ihdr = 8, [], None
    while pos < len(d):
        n, typ = struct.unpack(">I4s", d[pos:pos + 8])
        body = d[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif typ == b"IDAT":
            idat.append(body)
        elif typ == b"IEND":
            break
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("PNG depth %d colour type %d interlace %d: not handled" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray(map((255).__and__, map(int.__add__, line, prev)))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError("PNG filter %d in row %d" % (f, y))
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def cmd_png(path):
    try:
        w, h, rows, bpp = png_pixels(path)
    except (OSError, ValueError, zlib.error, TypeError) as e:
        return result(False, "screenshot", "cannot decode %s: %s" % (path, e))
    counts = {}
    for r in rows:
        for i in range(0, len(r), bpp):
            px = r[i:i + 3]
            counts[px] = counts.get(px, 0) + 1
    bg, n_bg = max(counts.items(), key=lambda kv: kv[1])
    total = w * h
    other = total - n_bg

    def near(rgb, tol=24):
        return sum(n for px, n in counts.items() if all(abs(px[k] - rgb[k]) <= tol for k in range(3)))
    green, red = near((0x1a, 0x7f, 0x37)), near((0xcf, 0x22, 0x2e))
    ok = other >= 0.03 * total and len(counts) >= 16 and green >= 200 and red >= 50
    return result(ok, "screenshot", "%dx%d, %.1f%% of pixels not the background %s, %d colours, %d better-green "
                  "and %d worse-red pixels; %s" % (w, h, 100.0 * other / total, bg.hex(), len(counts), green, red,
                                                  path))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    ok = {"offline": lambda: cmd_offline(args[0]), "charts": lambda: cmd_charts(args[0], args[1:]),
          "not-measured": lambda: cmd_not_measured(args[0], args[1:]),
          "console": lambda: cmd_console(args[0], args[1]), "png": lambda: cmd_png(args[0])}[cmd]()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
