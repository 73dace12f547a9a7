// Dates and numbers as a person reads them. Each toLocale…String call builds a new Intl formatter
// (about a millisecond each), and a conversation formats two or three per message, so the
// formatters are built once here and shared: they hold no state that changes.

const time = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const day = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const date = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'numeric', day: 'numeric' });
const full = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
const count = new Intl.NumberFormat('en');

/** The time of day, with the day in front when it is not today: "14:05", "Nov 27 09:12". */
export function clock(ms) {
  const d = new Date(ms);
  const t = time.format(d);
  return d.toDateString() === new Date().toDateString() ? t : `${day.format(d)} ${t}`;
}

/** The date and time in full, as Date.prototype.toLocaleString writes it. */
export const fullDate = (ms) => full.format(new Date(ms));

/** The date alone, as Date.prototype.toLocaleDateString writes it. */
export const dateOnly = (ms) => date.format(new Date(ms));

/** A count with thousands separators: 12,345. */
export const num = (n) => count.format(Math.round(n));
