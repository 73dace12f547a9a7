/** A unified diff, coloured line by line. */
export function Diff({ text }) {
  // The patch's own header (Index: … and a rule of =) says nothing the file lines do not, and the
  // rule is wider than a phone.
  const lines = String(text || '')
    .replace(/\n$/, '')
    .split('\n')
    .filter((l) => !l.startsWith('Index:') && !/^={10,}$/.test(l));
  return (
    <pre class="diff" data-testid="diff">
      {lines.map((l, i) => {
        let c = 'ctx';
        if (l.startsWith('+++') || l.startsWith('---') || l.startsWith('Index:') || l.startsWith('====')) c = 'file';
        else if (l.startsWith('@@')) c = 'hunk';
        else if (l.startsWith('+')) c = 'add';
        else if (l.startsWith('-')) c = 'del';
        return (
          <div key={i} class={c}>
            {l || ' '}
          </div>
        );
      })}
    </pre>
  );
}
