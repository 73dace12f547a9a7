#!/usr/bin/env python3
"""Turns `tmux capture-pane -e -p` output (SGR colours) into an HTML page, for a PNG screenshot of a
terminal UI with headless Chromium:

    tmux capture-pane -e -p -t SESSION > screen.ansi
    python3 scripts/ansi2html.py < screen.ansi > screen.html
    chromium --headless --no-sandbox --window-size=1100,700 --screenshot=screen.png screen.html
"""
import html
import re
import sys

BASE = ["#1d1f21", "#cc6666", "#b5bd68", "#f0c674", "#81a2be", "#b294bb", "#8abeb7", "#c5c8c6",
        "#666666", "#ff6b6b", "#c3e88d", "#ffcb6b", "#82aaff", "#c792ea", "#89ddff", "#ffffff"]


def xterm(n):
    if n < 16:
        return BASE[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return "#%02x%02x%02x" % (steps[n // 36], steps[(n // 6) % 6], steps[n % 6])
    v = 8 + (n - 232) * 10
    return "#%02x%02x%02x" % (v, v, v)


def main():
    text = sys.stdin.read()
    out = []
    state = {}

    def span_open():
        style = []
        fg, bg = state.get("fg"), state.get("bg")
        if state.get("reverse"):
            fg, bg = bg or "#1d1f21", fg or "#c5c8c6"
        if fg:
            style.append("color:" + fg)
        if bg:
            style.append("background:" + bg)
        if state.get("bold"):
            style.append("font-weight:bold")
        if state.get("italic"):
            style.append("font-style:italic")
        if state.get("underline"):
            style.append("text-decoration:underline")
        return '<span style="%s">' % ";".join(style)

    pos = 0
    out.append(span_open())
    for m in re.finditer(r"\x1b\[([0-9;:]*)m", text):
        out.append(html.escape(text[pos:m.start()]))
        pos = m.end()
        codes = [int(c) if c else 0 for c in re.split("[;:]", m.group(1))] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                state.clear()
            elif c == 1:
                state["bold"] = True
            elif c == 3:
                state["italic"] = True
            elif c == 4:
                state["underline"] = True
            elif c == 7:
                state["reverse"] = True
            elif c in (22,):
                state.pop("bold", None)
            elif c == 23:
                state.pop("italic", None)
            elif c == 24:
                state.pop("underline", None)
            elif c == 27:
                state.pop("reverse", None)
            elif 30 <= c <= 37:
                state["fg"] = BASE[c - 30]
            elif 90 <= c <= 97:
                state["fg"] = BASE[c - 90 + 8]
            elif 40 <= c <= 47:
                state["bg"] = BASE[c - 40]
            elif 100 <= c <= 107:
                state["bg"] = BASE[c - 100 + 8]
            elif c == 39:
                state.pop("fg", None)
            elif c == 49:
                state.pop("bg", None)
            elif c in (38, 48) and i + 1 < len(codes):
                key = "fg" if c == 38 else "bg"
                if codes[i + 1] == 5 and i + 2 < len(codes):
                    state[key] = xterm(codes[i + 2])
                    i += 2
                elif codes[i + 1] == 2 and i + 4 < len(codes):
                    state[key] = "#%02x%02x%02x" % tuple(codes[i + 2:i + 5])
                    i += 4
            i += 1
        out.append("</span>" + span_open())
    out.append(html.escape(text[pos:]))
    out.append("</span>")
    print("<!doctype html><meta charset=utf-8><style>body{margin:0;background:#1d1f21}"
          "pre{margin:0;padding:12px;color:#c5c8c6;font:14px/1.25 'DejaVu Sans Mono',monospace}</style><pre>"
          + "".join(out) + "</pre>")


main()
