// MCP servers: their status, adding one, connecting and disconnecting, and
// the tools each one brings.
import { useState } from 'preact/hooks';
import { state, changed, reportError, toast, loadMcpTools } from './store.js';
import { post, del, enc } from './api.js';
import { confirmDialog } from './confirm.jsx';
import { splitCommand } from './command.js';

function statusLabel(st) {
  if (!st) return 'unknown';
  return st.status || String(st);
}

export function McpView() {
  const names = Object.keys(state.mcp).sort();
  return (
    <div class="page mcp" data-testid="mcp">
      <h2>MCP servers</h2>
      {names.length === 0 && <p class="muted">No MCP servers yet. Add one below.</p>}
      <p class="muted small">
        Servers you add here are kept for this project and connect again when tandem restarts; servers from a config file are
        changed in that file.
      </p>
      <div class="cards">
        {names.map((n) => (
          <McpServer key={n} name={n} st={state.mcp[n]} />
        ))}
      </div>
      <AddServer />
    </div>
  );
}

function McpServer({ name, st }) {
  const [busy, setBusy] = useState(false);
  const s = statusLabel(st);
  // A server of one session (an editor's, over ACP) is listed as name@sessionID.
  const sessionID = st?.sessionID || null;
  const shown = sessionID && name.endsWith('@' + sessionID) ? name.slice(0, -sessionID.length - 1) : name;
  const prefix = shown.replace(/[^a-zA-Z0-9_-]/g, '_') + '_';
  const tools = sessionID ? [] : (state.mcpTools || []).filter((t) => t.startsWith(prefix));
  const remove = async () => {
    const ok = await confirmDialog({
      title: `Remove ${shown}?`,
      body: sessionID ? 'tandem stops it; that session no longer has its tools.' : 'tandem stops it and forgets it, also for later starts.',
      confirm: 'Remove',
      danger: true,
    });
    if (!ok) return;
    setBusy(true);
    try {
      const res = await del(`/mcp/${enc(name)}`);
      if (res && typeof res === 'object') {
        state.mcp = res;
        changed();
      }
      toast(`Removed ${name}.`);
      loadMcpTools();
    } catch (e) {
      reportError(e);
    } finally {
      setBusy(false);
    }
  };
  const act = async (what) => {
    setBusy(true);
    try {
      await post(`/mcp/${enc(name)}/${what}`, {});
      state.mcp[name] = { status: what === 'connect' ? 'connected' : 'disabled' };
      changed();
      loadMcpTools();
    } catch (e) {
      reportError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="card" data-testid="mcp-server" data-name={name}>
      <div class="card-head">
        <strong>{shown}</strong>
        {sessionID && (
          <a class="muted small" href={`#/session/${sessionID}`} data-testid="mcp-session" title="Its tools are offered to this session alone">
            for {state.sessions[sessionID]?.title || sessionID}
          </a>
        )}
        <span class={'status ' + s} data-testid="mcp-status">
          {s.replace(/_/g, ' ')}
        </span>
        <span class="spacer" />
        {s === 'connected' ? (
          <button disabled={busy} onClick={() => act('disconnect')}>
            Disconnect
          </button>
        ) : (
          <button class="primary" disabled={busy} onClick={() => act('connect')}>
            Connect
          </button>
        )}
        <button class="ghost danger" disabled={busy} onClick={remove} aria-label={`Remove ${name}`} data-testid="mcp-remove">
          Remove
        </button>
      </div>
      {st?.error && <div class="error-box">{st.error}</div>}
      {s === 'connected' && sessionID && <p class="muted small">Its tools are offered to that session alone; it goes when the session is deleted.</p>}
      {s === 'connected' && !sessionID && state.mcpTools && (
        <details class="tools" open={tools.length <= 8}>
          <summary>
            {tools.length} tool{tools.length === 1 ? '' : 's'}
          </summary>
          <ul>
            {tools.map((t) => (
              <li key={t}>
                <code>{t.slice(prefix.length)}</code>
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}

function AddServer() {
  const [name, setName] = useState('');
  const [type, setType] = useState('local');
  const [command, setCommand] = useState('');
  const [url, setUrl] = useState('');
  const [headers, setHeaders] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    const n = name.trim();
    if (!n) return setError('Give the server a name.');
    let config;
    if (type === 'local') {
      const argv = splitCommand(command.trim());
      if (!argv.length) return setError('Enter the command that starts the server.');
      config = { type: 'local', command: argv };
    } else {
      try {
        new URL(url.trim());
      } catch {
        return setError('Enter the full URL of the server, like http://127.0.0.1:3001/mcp.');
      }
      config = { type: 'remote', url: url.trim() };
      const h = {};
      for (const line of headers.split('\n')) {
        const i = line.indexOf(':');
        if (i > 0) h[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      if (Object.keys(h).length) config.headers = h;
    }
    setBusy(true);
    try {
      const res = await post('/mcp', { name: n, config });
      if (res && typeof res === 'object') Object.assign(state.mcp, res);
      changed();
      loadMcpTools();
      const st = res?.[n];
      if (st?.status === 'failed') toast(`Added ${n}, but it failed to connect: ${st.error || 'no reason given'}`, 'error', 10000);
      else if (st?.status === 'connected') toast(`Added ${n}: connected.`);
      else toast(`Added ${n} (${(st?.status || 'unknown').replace(/_/g, ' ')}).`);
      setName('');
      setCommand('');
      setUrl('');
      setHeaders('');
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card add-server" onSubmit={submit}>
      <h3>Add a server</h3>
      <div class="row">
        <label>
          Name
          <input value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="everything" />
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="local">Local command (stdio)</option>
            <option value="remote">Remote URL (HTTP)</option>
          </select>
        </label>
      </div>
      {type === 'local' ? (
        <label>
          Command
          <input value={command} onInput={(e) => setCommand(e.currentTarget.value)} placeholder="npx -y @modelcontextprotocol/server-everything" class="mono" />
        </label>
      ) : (
        <>
          <label>
            URL
            <input value={url} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://example.com/mcp" class="mono" />
          </label>
          <label>
            Headers (one “Name: value” a line, optional)
            <textarea rows={2} value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} class="mono" />
          </label>
        </>
      )}
      {error && <div class="error-box">{error}</div>}
      <div class="actions">
        <button class="primary" type="submit" disabled={busy}>
          {busy ? 'Adding…' : 'Add and connect'}
        </button>
      </div>
    </form>
  );
}
