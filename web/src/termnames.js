// Names for terminal tabs that a person can tell apart: "Shell 1", "Shell 2", … instead of the
// server's default "Terminal 2BMq" (the last characters of an ID, which OpenCode's clients expect).

/** Whether title is the server's default for pty (nobody chose it). */
export function isDefaultTitle(pty) {
  return !pty.title || pty.title === `Terminal ${pty.id.slice(-4)}`;
}

/** The lowest "Shell N" no open terminal is called, for a new one. */
export function nextShellTitle(ptys) {
  const used = new Set(ptys.map((p) => p.title));
  let n = 1;
  while (used.has(`Shell ${n}`)) n++;
  return `Shell ${n}`;
}

/** Each terminal's tab label: its own title, or "Shell N" (numbered after the named ones) for a default one. */
export function tabLabels(ptys) {
  const used = new Set(ptys.filter((p) => !isDefaultTitle(p)).map((p) => p.title));
  const out = {};
  let n = 1;
  for (const p of ptys) {
    if (!isDefaultTitle(p)) {
      out[p.id] = p.title;
      continue;
    }
    while (used.has(`Shell ${n}`)) n++;
    out[p.id] = `Shell ${n}`;
    used.add(out[p.id]);
  }
  return out;
}
