"""Renders a terminal capture (tmux capture-pane -e output) to SVG with pyte.
usage: python3 capture.py COLS ROWS < capture.ansi > screen.svg   (pip install pyte)"""
import sys, html, pyte
cols, rows = int(sys.argv[1]), int(sys.argv[2])
screen = pyte.Screen(cols, rows)
stream = pyte.Stream(screen)
stream.feed(sys.stdin.read().rstrip("\n").replace("\n", "\r\n"))
PALETTE = {"black": "#1d1f21", "red": "#e06c75", "green": "#98c379", "brown": "#e5c07b", "yellow": "#e5c07b",
           "blue": "#61afef", "magenta": "#c678dd", "cyan": "#56b6c2", "white": "#dcdfe4", "default": "#dcdfe4",
           "brightblack": "#7f848e", "grey": "#9da5b4", "gray": "#9da5b4"}
def color(c, default):
    if c in ("default", None): return default
    if c in PALETTE: return PALETTE[c]
    if len(c) == 6: return "#" + c
    return default
cw, ch = 8.4, 17
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols*cw:.0f}" height="{rows*ch+8:.0f}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">',
       f'<rect width="100%" height="100%" fill="#1d1f21"/>']
for y in range(rows):
    line = screen.buffer[y]
    x = 0
    while x < cols:
        c = line[x]
        fg, bg = color(c.fg, "#dcdfe4"), color(c.bg, None)
        if c.reverse: fg, bg = (bg or "#1d1f21"), fg
        run = [c.data]; x2 = x + 1
        while x2 < cols and (line[x2].fg, line[x2].bg, line[x2].bold, line[x2].reverse) == (c.fg, c.bg, c.bold, c.reverse):
            run.append(line[x2].data); x2 += 1
        if bg:
            out.append(f'<rect x="{x*cw:.1f}" y="{y*ch+4}" width="{(x2-x)*cw:.1f}" height="{ch}" fill="{bg}"/>')
        text = "".join(run)
        if text.strip():
            weight = ' font-weight="bold"' if c.bold else ""
            out.append(f'<text x="{x*cw:.1f}" y="{y*ch+17}" fill="{fg}"{weight} xml:space="preserve" textLength="{(x2-x)*cw:.1f}">{html.escape(text)}</text>')
        x = x2
out.append("</svg>")
print("\n".join(out))
