// "Connect a provider", opened from the model picker: an API key (stored as PUT /auth/{id} stores
// keys, in the server's auth.json) and an optional base URL, which goes to the user's own
// configuration file (PATCH /global/config): a project's file the user has not trusted cannot set
// one. A custom provider is any OpenAI-compatible server (Ollama, LM Studio, vLLM); its models are
// the ones typed here. The model list refreshes as soon as the provider is connected.
import { useEffect, useRef, useState } from 'preact/hooks';
import { state, changed, toast } from './store.js';
import { get, put, patch, enc } from './api.js';
import './providers.css';

const CUSTOM = '__custom';
const idPattern = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Fetches the providers and their models again, so the picker lists what was just connected. */
export async function refreshProviders() {
  state.providers = (await get('/config/providers')) || { providers: [], default: {} };
  changed();
}

/**
 * Connects a provider. form: {provider (an id, or CUSTOM), id, name, key, baseURL, models (comma
 * separated)}. Returns "provider/model" of the first model it offers, or ''.
 */
async function connect(form) {
  const custom = form.provider === CUSTOM;
  const id = custom ? form.id.trim() : form.provider;
  const key = form.key.trim();
  const baseURL = form.baseURL.trim();
  const models = form.models
    .split(/[\s,]+/)
    .map((m) => m.trim())
    .filter(Boolean);
  if (custom && !idPattern.test(id)) throw new Error('Provider ID: lower-case letters, digits, ".", "_" or "-", such as "ollama".');
  if (custom && state.providerCatalog?.some((p) => p.id === id)) throw new Error(`“${id}” is a built-in provider: pick it in the list instead.`);
  if (baseURL) {
    let u;
    try {
      u = new URL(baseURL);
    } catch {
      throw new Error('Base URL: not a URL, such as http://127.0.0.1:11434/v1.');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('Base URL: must start with http:// or https://.');
  }
  if (custom && !baseURL) throw new Error('Base URL: a custom provider needs the address of its OpenAI-compatible API.');
  if (custom && !models.length) throw new Error('Models: name at least one model the server runs, such as llama3.2.');
  if (!custom && !key && !baseURL) throw new Error('API key: required (or a base URL for a server that needs none).');
  if (custom || baseURL || models.length) {
    const entry = {};
    if (custom) {
      entry.name = form.name.trim() || id;
      entry.npm = '@ai-sdk/openai-compatible';
    }
    if (baseURL) entry.options = { baseURL };
    if (models.length) entry.models = Object.fromEntries(models.map((m) => [m, {}]));
    await patch('/global/config', { provider: { [id]: entry } });
  }
  if (key) await put(`/auth/${enc(id)}`, { type: 'api', key });
  await refreshProviders();
  const p = (state.providers.providers || []).find((x) => x.id === id);
  if (!p) return '';
  const first = models.find((m) => p.models?.[m]) || state.providers.default?.[id] || Object.keys(p.models || {})[0];
  return first ? `${id}/${first}` : '';
}

/** The dialog; onDone(model) is called with the connected provider's first model ("" when none). */
export function ConnectProvider({ onClose, onDone }) {
  const dialog = useRef(null);
  const [catalog, setCatalog] = useState(state.providerCatalog || []);
  const [form, setForm] = useState({ provider: catalog[0]?.id || CUSTOM, id: '', name: '', key: '', baseURL: '', models: '' });
  // Set once the person picks a provider or types: the list arriving later never overrides that.
  const chosen = useRef(false);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    dialog.current?.showModal();
    get('/provider')
      .then((list) => {
        const known = (list?.all || []).filter((p) => p.id !== 'demo').map((p) => ({ id: p.id, name: p.name || p.id }));
        state.providerCatalog = known;
        setCatalog(known);
        setForm((f) => (!chosen.current && f.provider === CUSTOM && known.length ? { ...f, provider: known[0].id } : f));
      })
      .catch((e) => setError(e.message));
  }, []);
  const set = (k) => (e) => {
    chosen.current = true;
    const v = e.currentTarget.value;
    setForm((f) => ({ ...f, [k]: v }));
  };
  const custom = form.provider === CUSTOM;
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      const model = await connect(form);
      toast(`Connected ${custom ? form.name.trim() || form.id.trim() : catalog.find((p) => p.id === form.provider)?.name || form.provider}.`, 'info');
      onDone(model);
    } catch (err) {
      setError(err.message || String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <dialog
      ref={dialog}
      class="connect-provider"
      aria-labelledby="connect-title"
      data-testid="connect-provider"
      onClose={onClose}
      onKeyDown={(e) => e.stopPropagation()}
    >
      <form onSubmit={submit}>
        <h3 id="connect-title">Connect a provider</h3>
        <label>
          Provider
          <select value={form.provider} onChange={set('provider')} data-testid="provider-id">
            {catalog.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
            <option value={CUSTOM}>Custom (OpenAI-compatible: Ollama, LM Studio, vLLM…)</option>
          </select>
        </label>
        {custom && (
          <>
            <label>
              Provider ID
              <input value={form.id} onInput={set('id')} placeholder="ollama" autocomplete="off" spellcheck={false} data-testid="provider-custom-id" />
            </label>
            <label>
              Name <span class="muted small">(optional)</span>
              <input value={form.name} onInput={set('name')} placeholder="Ollama on this machine" autocomplete="off" />
            </label>
          </>
        )}
        <label>
          API key {custom && <span class="muted small">(optional)</span>}
          <input type="password" value={form.key} onInput={set('key')} autocomplete="off" data-testid="provider-key" />
        </label>
        <label>
          Base URL {!custom && <span class="muted small">(optional: another server speaking the same API)</span>}
          <input type="url" value={form.baseURL} onInput={set('baseURL')} placeholder="http://127.0.0.1:11434/v1" autocomplete="off" spellcheck={false} data-testid="provider-base-url" />
        </label>
        {custom && (
          <label>
            Models <span class="muted small">(IDs the server runs, separated by commas)</span>
            <input value={form.models} onInput={set('models')} placeholder="llama3.2, qwen3" autocomplete="off" spellcheck={false} data-testid="provider-models" />
          </label>
        )}
        <p class="muted small">
          The key is kept by the server in a file only your user can read; the base URL and models go to your own configuration file, not the project’s.
        </p>
        {error && (
          <div class="error-box" role="alert" data-testid="provider-error">
            {error}
          </div>
        )}
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={busy} data-testid="provider-connect">
            {busy ? 'Connecting…' : 'Connect'}
          </button>
        </div>
      </form>
    </dialog>
  );
}
