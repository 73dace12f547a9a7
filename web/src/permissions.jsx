// The permissions page: the project's remembered answers ("always" and "always reject"), a form
// to add a rule by hand, and the decision log — who answered what, when, from where.
import { useEffect, useState } from 'preact/hooks';
import { state, reportError, toast } from './store.js';
import { get, post, del, enc } from './api.js';
import { fullDate } from './format.js';
import './extras.css';

function when(ms) {
  if (!ms) return '';
  return fullDate(ms);
}

const causeText = { reply: 'answered', timeout: 'timed out', cancel: 'cancelled', grant: 'by a rule' };

export function PermissionsView() {
  const [grants, setGrants] = useState(null);
  const [history, setHistory] = useState(null);
  const [permission, setPermission] = useState('bash');
  const [pattern, setPattern] = useState('');
  const [action, setAction] = useState('deny');
  const [busy, setBusy] = useState(false);

  const load = async () => {
    try {
      const [g, h] = await Promise.all([get('/permission/grant'), get('/permission/history?limit=200')]);
      setGrants(g || []);
      setHistory(h || []);
    } catch (e) {
      reportError(e);
    }
  };
  // Reload when a request is answered anywhere: the log and the grants may have changed.
  const answered = Object.keys(state.permissions).join(',');
  useEffect(() => {
    load();
  }, [answered]);

  const revoke = async (g) => {
    try {
      await del(`/permission/grant/${enc(g.id)}`);
      toast(`Revoked: ${g.permission} ${g.pattern}. Matching calls ask again.`, 'info');
      await load();
    } catch (e) {
      reportError(e);
    }
  };
  const add = async (e) => {
    e.preventDefault();
    if (!permission.trim() || !pattern.trim() || busy) return;
    setBusy(true);
    try {
      await post('/permission/grant', { permission: permission.trim(), pattern: pattern.trim(), action });
      setPattern('');
      await load();
    } catch (err) {
      reportError(err);
    } finally {
      setBusy(false);
    }
  };
  const title = (sid) => state.sessions[sid]?.title || sid;

  return (
    <div class="perms-page" data-testid="permissions-page">
      <section>
        <h2>Remembered answers</h2>
        <p class="muted small">
          What “Always allow” and “Always reject” keep for this project, across restarts. Revoke one and matching calls ask again.
        </p>
        {grants === null ? (
          <div class="muted">Loading…</div>
        ) : grants.length === 0 ? (
          <div class="muted" data-testid="no-grants">
            Nothing remembered yet.
          </div>
        ) : (
          <table data-testid="grants">
            <thead>
              <tr>
                <th>Action</th>
                <th>Permission</th>
                <th>Pattern</th>
                <th class="hide-narrow">Since</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {grants.map((g) => (
                <tr key={g.id} data-grant={g.id} data-pattern={g.pattern}>
                  <td class={'action-' + g.action}>{g.action === 'deny' ? 'reject' : 'allow'}</td>
                  <td>
                    <code>{g.permission}</code>
                  </td>
                  <td>
                    <code>{g.pattern}</code>
                  </td>
                  <td class="hide-narrow muted">{when(g.time?.created)}</td>
                  <td>
                    <button class="danger" onClick={() => revoke(g)} data-testid="revoke" aria-label={`Revoke ${g.action} ${g.permission} ${g.pattern}`}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section>
        <h2>Add a rule</h2>
        <p class="muted small">
          A reject rule refuses matching calls without asking, whatever else allows them (for example <code>bash</code>{' '}
          <code>git push *</code>). Wildcards: <code>*</code> and <code>?</code>.
        </p>
        <form class="add-rule" onSubmit={add} data-testid="add-rule">
          <label>
            Action
            <select value={action} onChange={(e) => setAction(e.currentTarget.value)} aria-label="Action">
              <option value="deny">reject</option>
              <option value="allow">allow</option>
            </select>
          </label>
          <label>
            Permission
            <input value={permission} onInput={(e) => setPermission(e.currentTarget.value)} aria-label="Permission" list="perm-keys" required />
          </label>
          <datalist id="perm-keys">
            {['bash', 'edit', 'read', 'external_directory', 'webfetch', ...(state.mcpTools || [])].map((k) => (
              <option key={k} value={k} />
            ))}
          </datalist>
          <label>
            Pattern
            <input value={pattern} onInput={(e) => setPattern(e.currentTarget.value)} placeholder="git push *" aria-label="Pattern" required />
          </label>
          <button class="primary" type="submit" disabled={busy || !pattern.trim() || !permission.trim()}>
            Add
          </button>
        </form>
      </section>

      <section>
        <h2>Decision log</h2>
        {history === null ? (
          <div class="muted">Loading…</div>
        ) : history.length === 0 ? (
          <div class="muted">No decisions yet.</div>
        ) : (
          <table data-testid="history">
            <thead>
              <tr>
                <th>When</th>
                <th>Session</th>
                <th>Asked</th>
                <th>Answer</th>
                <th class="hide-narrow">By</th>
              </tr>
            </thead>
            <tbody>
              {history.map((d) => (
                <tr key={d.requestID} data-request={d.requestID}>
                  <td class="muted">{when(d.time?.decided)}</td>
                  <td>
                    <a href={`#/session/${d.sessionID}`}>{title(d.sessionID)}</a>
                  </td>
                  <td>
                    <code>{d.permission}</code> {(d.patterns || []).join(', ')}
                  </td>
                  <td>
                    <strong>{d.reply}</strong>
                    {d.cause !== 'reply' && <span class="muted"> ({causeText[d.cause] || d.cause})</span>}
                    {d.message && <div class="muted small">“{d.message}”</div>}
                  </td>
                  <td class="hide-narrow muted small">{[d.client, d.addr].filter(Boolean).join(' · ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </div>
  );
}
