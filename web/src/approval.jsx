// A permission request, answered with the buttons its own `decisions` list offers (once, session,
// always, reject, reject-with-message, deny-always), never with buttons of our own invention.
import { useRef, useState } from 'preact/hooks';
import { state, replyPermission } from './store.js';
import { Diff } from './diff.jsx';
import './extras.css';

/** The keys whose answer is remembered, for the patterns a person ticks. */
const lastingKeys = ['session', 'always', 'deny-always'];

/** Keyboard shortcut of each key, as the pending panel binds them. */
export const decisionShortcut = { once: 'a', session: 's', always: 'A', reject: 'r' };

// Test IDs the first version of the panel had, which scripts and tests know.
const legacyTestID = { once: 'approve-once', always: 'approve-always', reject: 'reject' };

/** The answers a request offers: its own list, or OpenCode's three for a server without one. */
export function decisionsOf(req) {
  if (Array.isArray(req.decisions) && req.decisions.length) return req.decisions;
  const unjudged = req.metadata?.unjudged?.length > 0;
  const out = [{ key: 'once', label: 'Allow once', patterns: req.patterns || [] }];
  if (!unjudged) out.push({ key: 'always', label: 'Always allow', patterns: req.always?.length ? req.always : req.patterns || [] });
  out.push({ key: 'reject', label: 'Reject', patterns: req.patterns || [] });
  return out;
}

function isMcpTool(req) {
  const md = req.metadata || {};
  return typeof md.server === 'string' && typeof md.tool === 'string';
}

/** What a pattern covers, in words: "*" alone means every call, which is what people need to read. */
export function patternText(req, p) {
  if (p !== '*') return p;
  if (isMcpTool(req)) return `every call of ${req.metadata.tool} on ${req.metadata.server}`;
  return `every ${req.permission} request`;
}

function sessionDirectory(sessionID) {
  return state.sessions[sessionID]?.directory || '';
}

function Value({ v }) {
  if (typeof v === 'string') return v.includes('\n') ? <pre class="arg-value">{v}</pre> : <code>{v}</code>;
  return <code>{JSON.stringify(v)}</code>;
}

/** The arguments of a call as name: value lines, in the order they came. */
function Args({ input }) {
  const entries = Object.entries(input || {});
  if (!entries.length) return <div class="muted small">No arguments.</div>;
  return (
    <dl class="args" data-testid="permission-args">
      {entries.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>
            <Value v={v} />
          </dd>
        </div>
      ))}
    </dl>
  );
}

/** Title and body of a request, by what it asks. */
function describe(req) {
  const md = req.metadata || {};
  const patterns = req.patterns || [];
  if (req.permission === 'bash') {
    return { title: 'Run this command?', body: <pre class="command" data-testid="permission-command">{md.command || patterns.join('\n')}</pre> };
  }
  if (md.diff) {
    return { title: `Apply this change to ${md.filepath || md.filePath || patterns.join(', ')}?`, body: <Diff text={md.diff} /> };
  }
  if (req.permission === 'external_directory') {
    const dir = md.parentDir || patterns.map((p) => p.replace(/\/\*$/, '')).join(', ');
    const project = sessionDirectory(req.sessionID);
    return {
      title: 'Allow access outside the project?',
      body: (
        <div class="outside" data-testid="permission-outside">
          <p>
            The agent wants to use <code>{md.filepath || dir}</code>
            {project ? (
              <>
                , which is outside the project <code>{project}</code>.
              </>
            ) : (
              ', which is outside the project.'
            )}
          </p>
          <p class="muted small">
            Allowing covers the folder <code>{dir}</code>.
            {md.command && (
              <>
                {' '}
                Asked for the command <code>{md.command}</code>.
              </>
            )}
          </p>
        </div>
      ),
    };
  }
  if (isMcpTool(req)) {
    return {
      title: `Call ${md.tool} on the MCP server ${md.server}?`,
      body: <Args input={md.input} />,
    };
  }
  const { unjudged, ...rest } = md;
  return {
    title: `Allow ${req.permission}?`,
    body: (
      <>
        <pre class="command">{patterns.map((p) => patternText(req, p)).join('\n')}</pre>
        {Object.keys(rest).length > 0 && <Args input={rest} />}
      </>
    ),
  };
}

export function Permission({ req, actions, busy, run, origin }) {
  const md = req.metadata || {};
  const decisions = decisionsOf(req);
  const offered = decisions.find((d) => lastingKeys.includes(d.key))?.patterns || [];
  const [ticked, setTicked] = useState(() => offered.slice());
  const [message, setMessage] = useState('');
  const [needMessage, setNeedMessage] = useState(false);
  const messageRef = useRef(null);
  const offers = (key) => decisions.some((d) => d.key === key);

  const send = (d) => {
    const msg = message.trim();
    if (d.message && !msg) {
      setNeedMessage(true);
      messageRef.current?.focus();
      return;
    }
    let patterns;
    if (lastingKeys.includes(d.key)) {
      if (!ticked.length) return;
      if (ticked.length < d.patterns.length) patterns = d.patterns.filter((p) => ticked.includes(p));
    }
    const withMessage = d.key === 'reject' || d.key === 'reject-with-message' || d.key === 'deny-always';
    run(() => replyPermission(req.id, d.key, withMessage && msg ? msg : undefined, patterns));
  };
  const byKey = Object.fromEntries(decisions.map((d) => [d.key, d]));
  actions.approve = byKey.once && (() => send(byKey.once));
  actions.session = byKey.session && (() => send(byKey.session));
  actions.always = byKey.always && (() => send(byKey.always));
  actions.reject = byKey.reject && (() => send(message.trim() && byKey['reject-with-message'] ? byKey['reject-with-message'] : byKey.reject));

  const { title, body } = describe(req);
  const cwd = (req.permission === 'bash' && md.workdir) || sessionDirectory(req.sessionID);
  const lasting = decisions.filter((d) => lastingKeys.includes(d.key));
  return (
    <div class="perm" data-testid="permission">
      <h3>{title}</h3>
      {origin}
      {cwd && (
        <div class="cwd muted small" data-testid="permission-cwd">
          in <code title="Working directory">{cwd}</code>
        </div>
      )}
      {body}
      {md.unjudged?.length > 0 && (
        <div class="warn small" data-testid="unjudged">
          Cannot be judged before it runs, so it is asked every time:
          <ul>
            {md.unjudged.map((r) => (
              <li>{r}</li>
            ))}
          </ul>
        </div>
      )}
      {lasting.length > 0 && offered.length > 0 && (
        <fieldset class="remember" data-testid="remember">
          <legend class="small">{offered.length > 1 ? 'Session, “always” and “always reject” remember:' : 'Session, “always” and “always reject” remember'}</legend>
          {offered.length > 1 ? (
            offered.map((p) => (
              <label key={p} class="remember-pattern">
                <input
                  type="checkbox"
                  checked={ticked.includes(p)}
                  data-pattern={p}
                  onChange={(e) => setTicked(e.currentTarget.checked ? offered.filter((x) => x === p || ticked.includes(x)) : ticked.filter((x) => x !== p))}
                />
                <code>{patternText(req, p)}</code>
              </label>
            ))
          ) : (
            <span class="remember-pattern" data-pattern={offered[0]}>
              {offered[0] === '*' ? patternText(req, '*') : <code>{offered[0]}</code>}
            </span>
          )}
          {!ticked.length && <div class="field-error small">Tick at least one to remember.</div>}
        </fieldset>
      )}
      <input
        class={'reject-msg' + (needMessage && !message.trim() ? ' invalid' : '')}
        ref={messageRef}
        placeholder={offers('reject-with-message') ? 'Why? (told to the agent when you reject)' : 'Message with rejection (optional)'}
        value={message}
        onInput={(e) => setMessage(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && actions.reject) {
            e.preventDefault();
            actions.reject();
          }
        }}
        aria-label="Rejection message"
        data-testid="reject-message"
      />
      <div class="actions decisions" data-testid="decisions">
        {decisions.map((d, i) => {
          const danger = d.key.startsWith('reject') || d.key === 'deny-always';
          const k = decisionShortcut[d.key];
          return (
            <button
              key={d.key}
              type="button"
              class={(i === 0 ? 'primary' : danger ? 'danger' : '') + (d.key === 'deny-always' ? ' outline' : '')}
              disabled={busy || (lastingKeys.includes(d.key) && !ticked.length)}
              onClick={() => send(d)}
              data-testid={legacyTestID[d.key] || `decision-${d.key}`}
              data-key={d.key}
              title={d.patterns?.length ? `${d.label}: ${d.patterns.map((p) => patternText(req, p)).join(', ')}` : d.label}
            >
              {d.label}
              {k && <kbd>{k === 'A' ? '⇧A' : k}</kbd>}
            </button>
          );
        })}
      </div>
    </div>
  );
}
