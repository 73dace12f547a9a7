// What can be done with an answer and a prompt once they are in the conversation: Copy the whole
// answer, Retry the last one, Edit a prompt and send it again. Retry and Edit work as OpenCode's
// do: a revert to the prompt (its messages hide, the files its turn changed are put back), then a
// new prompt, which drops what the revert hid for good.
import { state, changed, reportError } from './store.js';
import { post, enc } from './api.js';
import { flash } from './convo.jsx';
import './answer.css';

/** The text an answer shows: every assistant message of the turn that ends at msgs[i]. */
export function answerText(msgs, i) {
  const out = [];
  for (let k = i; k >= 0 && msgs[k].info.role === 'assistant'; k--) {
    const text = msgs[k].parts
      .filter((p) => p.type === 'text' && !p.synthetic && !p.ignored && p.text)
      .map((p) => p.text)
      .join('\n\n');
    if (text) out.unshift(text);
  }
  return out.join('\n\n');
}

/** The prompt a turn answered: the user message before msgs[i]. */
function promptOf(msgs, i) {
  for (let k = i; k >= 0; k--) {
    const m = msgs[k];
    if (m.info.role === 'user' && !m.parts.some((p) => p.type === 'compaction')) return m;
  }
  return null;
}

async function revertTo(sessionID, messageID) {
  const s = await post(`/session/${enc(sessionID)}/revert`, { messageID });
  if (s?.id) state.sessions[s.id] = s;
  changed();
}

/** Reverts to the prompt of the answer at msgs[i] and sends that prompt again, as it was sent. */
async function retry(sessionID, msgs, i) {
  const prompt = promptOf(msgs, i);
  if (!prompt) return;
  const parts = [];
  for (const p of prompt.parts) {
    if (p.type === 'text' && !p.synthetic) parts.push({ type: 'text', text: p.text });
    else if (p.type === 'file') parts.push({ type: 'file', mime: p.mime, url: p.url, ...(p.filename ? { filename: p.filename } : {}) });
  }
  if (!parts.length) return;
  const info = prompt.info;
  const body = { parts };
  if (info.agent) body.agent = info.agent;
  if (info.model?.providerID) body.model = { providerID: info.model.providerID, modelID: info.model.modelID };
  await revertTo(sessionID, info.id);
  delete state.sessionErrors[sessionID];
  await post(`/session/${enc(sessionID)}/prompt_async`, body);
  window.dispatchEvent(new CustomEvent('tandem:follow', { detail: sessionID }));
}

/** Copy (the whole answer) and, on the session's last answer, Retry. */
export function AnswerTools({ msgs, index, isLast, busy }) {
  const msg = msgs[index];
  const text = answerText(msgs, index);
  return (
    <span class="answer-tools">
      {text && (
        <button type="button" class="ghost" aria-label="Copy the answer" title="Copy the whole answer" data-testid="copy-answer" onClick={(e) => flash(e.currentTarget, text)}>
          Copy
        </button>
      )}
      {isLast && (
        <button
          type="button"
          class="ghost"
          disabled={busy}
          title="Undo this answer and send its prompt again"
          data-testid="retry"
          onClick={() => retry(msg.info.sessionID, msgs, index).catch(reportError)}
        >
          Retry
        </button>
      )}
    </span>
  );
}

/**
 * Edit: reverts to this prompt (it and what followed hide, files are put back; Redo undoes it) and
 * puts its text in the composer, to change and send again.
 */
export function EditButton({ msg, text, busy }) {
  const edit = async () => {
    await revertTo(msg.info.sessionID, msg.info.id);
    window.dispatchEvent(new CustomEvent('tandem:compose', { detail: { sessionID: msg.info.sessionID, text } }));
  };
  return (
    <button type="button" class="ghost" disabled={busy} title="Undo from this prompt on and edit it in the composer" data-testid="edit-prompt" onClick={() => edit().catch(reportError)}>
      Edit
    </button>
  );
}
