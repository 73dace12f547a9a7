// The session header's less frequent actions (Undo, Redo, Compact, Fork, Delete). On a wide screen
// they sit in the header; on a phone they fold behind "⋯", so the header stays one row: back, the
// title, Rename and the menu.
import { useEffect, useRef, useState } from 'preact/hooks';
import './headmenu.css';

export function HeadMenu({ children }) {
  const [open, setOpen] = useState(false);
  const ref = useRef(null);
  useEffect(() => {
    if (!open) return;
    const away = (e) => {
      if (!ref.current?.contains(e.target)) setOpen(false);
    };
    const esc = (e) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      ref.current?.querySelector('.head-more')?.focus();
    };
    document.addEventListener('pointerdown', away);
    document.addEventListener('keydown', esc);
    return () => {
      document.removeEventListener('pointerdown', away);
      document.removeEventListener('keydown', esc);
    };
  }, [open]);
  return (
    <span class="head-menu" ref={ref}>
      <button
        type="button"
        class="ghost head-more"
        aria-expanded={open ? 'true' : 'false'}
        aria-controls="head-actions"
        aria-label="More actions"
        title="More actions"
        data-testid="head-more"
        onClick={() => setOpen(!open)}
      >
        ⋯
      </button>
      <span id="head-actions" class={'head-actions' + (open ? ' open' : '')} onClick={(e) => e.target.closest?.('button') && setOpen(false)}>
        {children}
      </span>
    </span>
  );
}
