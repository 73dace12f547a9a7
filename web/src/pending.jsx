// The one place where everything waiting for a human lives: permissions,
// questions and MCP elicitations, shown one at a time with keyboard keys.
import { useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import {
  state,
  changed,
  pendingList,
  replyQuestion,
  rejectQuestion,
  replyElicitation,
  reportError,
  navigate,
} from './store.js';
import { schemaFields, initialValues, validateAll, toContent } from './schemaform.js';
import { Permission as Approval } from './approval.jsx';

function sessionTitle(id) {
  const s = state.sessions[id];
  return s ? s.title || id : id;
}

export function PendingBadge({ count }) {
  return (
    <button
      class={'pending-badge' + (count ? ' has' : '')}
      title={count ? `${count} waiting for you` : 'Nothing waiting'}
      aria-label={`Pending: ${count}`}
      onClick={() => {
        state.pendingOpen = !state.pendingOpen;
        changed();
      }}
    >
      <span class="bell" aria-hidden="true">●</span>
      <span class="count" data-testid="pending-count">{count}</span>
    </button>
  );
}

function isTyping(el) {
  return el && (el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && !['checkbox', 'radio', 'button'].includes(el.type)) || el.tagName === 'SELECT' || el.isContentEditable);
}

export function PendingDialog() {
  const list = pendingList();
  const open = state.pendingOpen && list.length > 0;
  let idx = list.findIndex((p) => p.id === state.pendingCurrent);
  if (idx < 0) idx = 0;
  const cur = list[idx];
  const actions = useRef({});
  const dialogRef = useRef(null);

  const next = () => {
    if (list.length < 2) return;
    state.pendingCurrent = list[(idx + 1) % list.length].id;
    changed();
  };
  const prev = () => {
    if (list.length < 2) return;
    state.pendingCurrent = list[(idx - 1 + list.length) % list.length].id;
    changed();
  };
  const close = () => {
    state.pendingOpen = false;
    changed();
  };

  // A layout effect: the keys work from the moment the dialog shows (an effect would attach them a
  // frame later, and a key pressed as the dialog appears would be lost).
  useLayoutEffect(() => {
    if (!open) return;
    const onKey = (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.key === 'Escape') {
        close();
        return;
      }
      if (isTyping(document.activeElement)) return;
      const a = actions.current;
      if (e.key === 'n' || e.key === 'j') next();
      else if (e.key === 'p' || e.key === 'k') prev();
      else if (e.key === 'a' && a.approve) a.approve();
      else if (e.key === 'A' && a.always) a.always();
      else if (e.key === 's' && a.session) a.session();
      else if (e.key === 'r' && a.reject) a.reject();
      else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  if (!open) return null;
  actions.current = {};
  return (
    <section class="pending" role="dialog" aria-modal="false" aria-label="Waiting for you" ref={dialogRef} data-testid="pending-dialog" data-kind={cur.kind} data-id={cur.id}>
      <header class="pending-head">
        <strong>Waiting for you</strong>
        <span class="muted">
          {idx + 1} of {list.length}
        </span>
        <span class="spacer" />
        <button class="ghost" onClick={prev} disabled={list.length < 2} title="Previous (p)" aria-label="Previous">
          ‹
        </button>
        <button class="ghost" onClick={next} disabled={list.length < 2} title="Next (n)" aria-label="Next">
          ›
        </button>
        <button class="ghost" onClick={close} title="Hide (Esc)" aria-label="Hide">
          ✕
        </button>
      </header>
      <div class="pending-body" key={cur.id}>
        {cur.kind === 'permission' && <Permission req={cur.item} actions={actions.current} />}
        {cur.kind === 'question' && <Question req={cur.item} actions={actions.current} />}
        {cur.kind === 'elicitation' && <Elicitation req={cur.item} actions={actions.current} />}
      </div>
    </section>
  );
}

// A subagent's request is shown under the session the person started (its root), marked with the
// subagent it comes from, as attach and the other doors show it.
function Origin({ req, extra }) {
  const child = req.parentSessionID ? req.sessionID : null;
  const sessionID = child ? req.rootSessionID || req.parentSessionID : req.sessionID;
  if (!sessionID && !extra) return null;
  return (
    <div class="origin muted">
      {extra}
      {child && (
        <span class="tag" data-testid="subagent">
          Subagent · {state.sessions[child]?.title || state.sessions[child]?.agent || child}
        </span>
      )}
      {sessionID && (
        <a href={`#/session/${sessionID}`} onClick={() => navigate(`#/session/${sessionID}`)}>
          {sessionTitle(sessionID)}
        </a>
      )}
    </div>
  );
}

function useBusy() {
  const [busy, setBusy] = useState(false);
  const run = async (fn) => {
    if (busy) return;
    setBusy(true);
    try {
      await fn();
    } catch (e) {
      reportError(e);
      setBusy(false);
    }
  };
  return [busy, run];
}

function Permission({ req, actions }) {
  const [busy, run] = useBusy();
  return <Approval req={req} actions={actions} busy={busy} run={run} origin={<Origin req={req} extra={<span class="tag">{req.permission}</span>} />} />;
}

function Question({ req, actions }) {
  const [busy, run] = useBusy();
  const qs = req.questions || [];
  const [picked, setPicked] = useState(() => qs.map(() => []));
  const [custom, setCustom] = useState(() => qs.map(() => ''));
  const answers = () => qs.map((q, i) => (custom[i].trim() ? [...picked[i], custom[i].trim()] : picked[i]));
  const complete = answers().every((a) => a.length > 0);
  const submit = () => complete && run(() => replyQuestion(req.id, answers()));
  actions.approve = submit;
  actions.reject = () => run(() => rejectQuestion(req.id));
  const toggle = (qi, label, multiple) => {
    const p = picked.map((x) => [...x]);
    if (multiple) p[qi] = p[qi].includes(label) ? p[qi].filter((x) => x !== label) : [...p[qi], label];
    else {
      p[qi] = [label];
      const c = [...custom];
      c[qi] = '';
      setCustom(c);
    }
    setPicked(p);
  };
  return (
    <form
      class="question"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <Origin req={req} />
      {qs.map((q, qi) => (
        <fieldset key={qi}>
          <legend>
            {q.header && q.header !== q.question && <span class="tag">{q.header}</span>} {q.question}
          </legend>
          {q.multiple && <div class="muted small">Choose any number.</div>}
          {(q.options || []).map((o) => (
            <label class="option" key={o.label}>
              <input
                type={q.multiple ? 'checkbox' : 'radio'}
                name={`q${qi}`}
                checked={picked[qi].includes(o.label)}
                onChange={() => toggle(qi, o.label, q.multiple)}
              />
              <span>
                <strong>{o.label}</strong>
                {o.description && <span class="muted"> — {o.description}</span>}
              </span>
            </label>
          ))}
          {q.custom !== false && (
            <input
              class="custom"
              placeholder="Or type your own answer"
              value={custom[qi]}
              aria-label="Custom answer"
              onInput={(e) => {
                const c = [...custom];
                c[qi] = e.currentTarget.value;
                setCustom(c);
                if (!q.multiple && e.currentTarget.value) {
                  const p = [...picked];
                  p[qi] = [];
                  setPicked(p);
                }
              }}
            />
          )}
        </fieldset>
      ))}
      <div class="actions">
        <button class="primary" type="submit" disabled={busy || !complete} data-testid="question-submit">
          Answer <kbd>a</kbd>
        </button>
        <button type="button" class="danger" disabled={busy} onClick={actions.reject}>
          Dismiss <kbd>r</kbd>
        </button>
      </div>
    </form>
  );
}

function Elicitation({ req, actions }) {
  if (req.mode === 'url') return <UrlElicitation req={req} actions={actions} />;
  return <FormElicitation req={req} actions={actions} />;
}

function UrlElicitation({ req, actions }) {
  const [busy, run] = useBusy();
  let domain = req.domain;
  try {
    domain = domain || new URL(req.url).hostname;
  } catch {
    /* shown as given */
  }
  const open = () =>
    run(async () => {
      window.open(req.url, '_blank', 'noopener,noreferrer');
      await replyElicitation(req.id, 'accept');
    });
  actions.reject = () => run(() => replyElicitation(req.id, 'decline'));
  return (
    <div class="elicit">
      <h3>{req.server} asks you to open a link</h3>
      <Origin req={req} extra={<span class="tag">MCP · {req.server}</span>} />
      <p>{req.message}</p>
      <div class="domain">
        Domain: <strong data-testid="url-domain">{domain}</strong>
      </div>
      <pre class="url" data-testid="url-full">{req.url}</pre>
      <div class="actions">
        <button class="primary" disabled={busy} onClick={open}>
          Open link
        </button>
        <button class="danger" disabled={busy} onClick={actions.reject}>
          Decline <kbd>r</kbd>
        </button>
        <button disabled={busy} onClick={() => run(() => replyElicitation(req.id, 'cancel'))}>
          Cancel
        </button>
      </div>
    </div>
  );
}

function FormElicitation({ req, actions }) {
  const [busy, run] = useBusy();
  const fields = useMemo(() => schemaFields(req.requestedSchema), [req.id]);
  const opened = useMemo(() => initialValues(fields), [fields]);
  const [values, setValues] = useState(opened);
  const [touched, setTouched] = useState({});
  const [serverError, setServerError] = useState(null);
  const [serverFieldErrors, setServerFieldErrors] = useState({});
  const errors = { ...serverFieldErrors, ...validateAll(fields, values) };
  const set = (name, v) => {
    const next = { ...values, [name]: v };
    setValues(next);
    // Kept in the store: if another client answers first, what was typed here is shown, not dropped.
    // Only the fields changed from what the form opened with: a schema's default was not typed by anyone.
    state.formDrafts[req.id] = {
      server: req.server,
      values: Object.fromEntries(fields.filter((f) => !sameValue(next[f.name], opened[f.name])).map((f) => [f.label || f.name, next[f.name]])),
    };
    setTouched({ ...touched, [name]: true });
    if (serverFieldErrors[name]) setServerFieldErrors({ ...serverFieldErrors, [name]: undefined });
  };
  const accept = () => {
    const all = Object.fromEntries(fields.map((f) => [f.name, true]));
    setTouched(all);
    if (Object.values(errors).some(Boolean)) return;
    run(async () => {
      setServerError(null);
      try {
        await replyElicitation(req.id, 'accept', toContent(fields, values));
      } catch (e) {
        if (e.status === 400) {
          // The server names the field ("content.email: ..."); show it there when we can.
          const m = /^content\.([^:]+):\s*(.*)$/s.exec(e.message);
          if (m && fields.some((f) => f.name === m[1])) setServerFieldErrors({ [m[1]]: m[2] });
          else setServerError(e.message);
          throw Object.assign(new Error(e.message), { quiet: true });
        }
        throw e;
      }
    });
  };
  actions.approve = accept;
  actions.reject = () => run(() => replyElicitation(req.id, 'decline'));
  return (
    <form
      class="elicit"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        accept();
      }}
    >
      <h3>{req.server} needs some information</h3>
      <Origin req={req} extra={<span class="tag">MCP · {req.server}</span>} />
      <p>{req.message}</p>
      {fields.map((f) => (
        <Field key={f.name} f={f} value={values[f.name]} error={touched[f.name] ? errors[f.name] : null} set={(v) => set(f.name, v)} />
      ))}
      {serverError && (
        <div class="error-box" role="alert">
          {serverError}
        </div>
      )}
      <div class="actions">
        <button class="primary" type="submit" disabled={busy} data-testid="elicit-accept">
          Submit
        </button>
        <button type="button" class="danger" disabled={busy} onClick={actions.reject}>
          Decline <kbd>r</kbd>
        </button>
        <button type="button" disabled={busy} onClick={() => run(() => replyElicitation(req.id, 'cancel'))}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Whether two field values (strings, booleans or lists of choices) are the same, order of choices aside. */
function sameValue(a, b) {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x) => b.includes(x));
  return a === b;
}

const inputType = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

function Field({ f, value, error, set }) {
  const id = `f-${f.name}`;
  const label = (
    <span class="field-label">
      {f.label}
      {f.required && <span class="req" aria-label="required"> *</span>}
    </span>
  );
  let control;
  if (f.kind === 'boolean') {
    return (
      <div class={'field bool' + (error ? ' invalid' : '')} data-field={f.name}>
        <label>
          <input type="checkbox" id={id} name={f.name} checked={!!value} onChange={(e) => set(e.currentTarget.checked)} />
          {label}
        </label>
        {f.description && <div class="muted small">{f.description}</div>}
      </div>
    );
  }
  if (f.kind === 'enum') {
    control = (
      <select id={id} name={f.name} value={value} onChange={(e) => set(e.currentTarget.value)} aria-invalid={!!error}>
        {(!f.required || value === '') && <option value="">—</option>}
        {f.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
    );
  } else if (f.kind === 'multi') {
    control = (
      <div class="multi" role="group" aria-labelledby={id}>
        {f.options.map((o) => (
          <label key={o.value} class="chip">
            <input
              type="checkbox"
              name={f.name}
              value={o.value}
              checked={value.includes(o.value)}
              onChange={(e) => set(e.currentTarget.checked ? [...value, o.value] : value.filter((x) => x !== o.value))}
            />
            {o.label}
          </label>
        ))}
      </div>
    );
  } else {
    const numeric = f.kind === 'integer' || f.kind === 'number';
    control = (
      <input
        id={id}
        name={f.name}
        type={numeric ? 'text' : f.format === 'date' ? 'text' : inputType[f.format] || 'text'}
        inputMode={numeric ? (f.kind === 'integer' ? 'numeric' : 'decimal') : undefined}
        placeholder={f.format === 'date' ? 'YYYY-MM-DD' : f.format === 'uri' ? 'https://' : ''}
        value={value}
        aria-invalid={!!error}
        onInput={(e) => set(e.currentTarget.value)}
      />
    );
  }
  return (
    <div class={'field' + (error ? ' invalid' : '')} data-field={f.name}>
      <label for={id} id={f.kind === 'multi' ? id : undefined}>
        {label}
      </label>
      {f.description && <div class="muted small">{f.description}</div>}
      {control}
      {error && (
        <div class="field-error" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}


