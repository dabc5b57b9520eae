# SPDX-License-Identifier: MIT
# tools/bench: the SVG drawing the bench report's charts are made of (charts.py): a canvas
# that collects elements and writes one self-contained <svg> (no script, no external font,
# image or style sheet), and the log and linear scales with their ticks. Draws what it is
# given; it holds no figure and computes none.
import math
from html import escape

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
INK, MUTED, GRID = "#1f2328", "#57606a", "#d0d7de"


def _a(v):
    return escape(str(v), quote=True)


class Svg:
    def __init__(self, width, height, title):
        self.w, self.h, self.title = width, height, title
        self.el = []

    def add(self, s):
        self.el.append(s)

    def rect(self, x, y, w, h, fill, tip=None, stroke=None, opacity=None):
        extra = (' stroke="%s"' % stroke if stroke else "") + (' fill-opacity="%s"' % opacity if opacity else "")
        t = "<title>%s</title>" % escape(tip) if tip else ""
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s>%s</rect>'
                 % (x, y, max(w, 0.5), max(h, 0.5), fill, extra, t))

    def line(self, x1, y1, x2, y2, stroke=GRID, width=1, dash=None):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        self.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"%s/>'
                 % (x1, y1, x2, y2, stroke, width, d))

    def polyline(self, pts, stroke, width=2, dash=None, opacity=None):
        if len(pts) < 2:
            return
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        o = ' stroke-opacity="%s"' % opacity if opacity else ""
        self.add('<polyline fill="none" stroke="%s" stroke-width="%s"%s%s points="%s"/>'
                 % (stroke, width, d, o, " ".join("%.1f,%.1f" % p for p in pts)))

    def circle(self, x, y, r, fill, tip=None, stroke=None):
        t = "<title>%s</title>" % escape(tip) if tip else ""
        s = ' stroke="%s" stroke-width="1.5"' % stroke if stroke else ""
        self.add('<circle cx="%.1f" cy="%.1f" r="%s" fill="%s"%s>%s</circle>' % (x, y, r, fill, s, t))

    def text(self, x, y, s, size=12, anchor="start", fill=INK, weight=None, rotate=None, italic=False):
        w = ' font-weight="%s"' % weight if weight else ""
        r = ' transform="rotate(%s %.1f %.1f)"' % (rotate, x, y) if rotate else ""
        i = ' font-style="italic"' if italic else ""
        self.add('<text x="%.1f" y="%.1f" font-size="%s" text-anchor="%s" fill="%s"%s%s%s>%s</text>'
                 % (x, y, size, anchor, fill, w, r, i, escape(str(s))))

    def render(self, elem_id=None):
        i = ' id="%s"' % _a(elem_id) if elem_id else ""
        return ('<svg xmlns="http://www.w3.org/2000/svg"%s width="%d" height="%d" viewBox="0 0 %d %d" '
                'role="img" aria-label="%s" font-family="%s">\n<title>%s</title>\n'
                '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>\n%s\n</svg>'
                % (i, self.w, self.h, self.w, self.h, _a(self.title), _a(FONT), escape(self.title),
                   self.w, self.h, "\n".join(self.el)))


class LogScale:
    """value -> pixel on a log10 axis from lo to hi (both > 0)."""

    def __init__(self, lo, hi, p0, p1):
        self.lo, self.hi, self.p0, self.p1 = lo, hi, p0, p1
        self.a, self.b = math.log10(lo), math.log10(hi)

    def __call__(self, v):
        v = min(max(v, self.lo), self.hi)
        return self.p0 + (math.log10(v) - self.a) / (self.b - self.a) * (self.p1 - self.p0)

    def ticks(self):
        """Decades, with 2 and 5 between them when the axis spans less than three."""
        out = []
        steps = (1, 2, 5) if self.b - self.a < 3 else (1,)
        for e in range(math.floor(self.a), math.ceil(self.b) + 1):
            for s in steps:
                v = s * 10.0 ** e
                if self.lo * 0.999 <= v <= self.hi * 1.001:
                    out.append(v)
        return out


def log_bounds(values, pad=1.3, at_least=None):
    """A log axis holding every positive value (and at_least's values), padded."""
    v = [x for x in values if x and x > 0] + [x for x in (at_least or []) if x > 0]
    if not v:
        return 0.1, 10.0
    lo, hi = min(v) / pad, max(v) * pad
    if hi / lo < 10:
        mid = math.sqrt(lo * hi)
        lo, hi = mid / 3.2, mid * 3.2
    return lo, hi


class LinScale:
    def __init__(self, lo, hi, p0, p1):
        self.lo, self.hi, self.p0, self.p1 = lo, hi if hi > lo else lo + 1, p0, p1

    def __call__(self, v):
        return self.p0 + (v - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)

    def ticks(self, n=5):
        span = self.hi - self.lo
        raw = span / n
        mag = 10 ** math.floor(math.log10(raw))
        step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
        t, out = math.ceil(self.lo / step) * step, []
        while t <= self.hi + 1e-9:
            out.append(t)
            t += step
        return out


def tick_text(v):
    if v >= 1e6:
        return "%gM" % (v / 1e6)
    if v >= 1e3:
        return "%gk" % (v / 1e3)
    return "%g" % v
