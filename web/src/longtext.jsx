// A prompt longer than a screen (a pasted log) shows its start and a button for the rest, so a
// 300 KB paste is not a 59,000-px bubble; the whole text is there for Copy, Edit and Fork.
import { useState } from 'preact/hooks';
import './longtext.css';

/** Characters a prompt shows before "Show all". */
export const LONG_TEXT = 3000;

export function LongText({ text }) {
  const [open, setOpen] = useState(false);
  if (text.length <= LONG_TEXT) return text;
  return (
    <>
      {open ? text : text.slice(0, LONG_TEXT) + '…'}
      <button type="button" class="ghost long-toggle" aria-expanded={open ? 'true' : 'false'} onClick={() => setOpen(!open)} data-testid="long-toggle">
        {open ? 'Show less' : `Show all ${text.length.toLocaleString('en')} characters`}
      </button>
    </>
  );
}
