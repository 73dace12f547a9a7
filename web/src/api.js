// Thin fetch wrapper. Every mutating request carries a JSON body and
// Content-Type, because the server answers 415 otherwise.

export class ApiError extends Error {
  constructor(status, name, message, body) {
    super(message);
    this.status = status;
    this.name = name;
    this.body = body;
  }
}

let unauthorized = () => {};

/** Registers what happens when any request comes back 401 (show the login form). */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

export async function api(method, path, body) {
  const init = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (method !== 'GET' && method !== 'HEAD') {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body ?? {});
  }
  return answer(fetch(path, init));
}

/**
 * The answer of a request already sent (the page's first question, sent by index.html before
 * this script arrived), read as api() reads its own: JSON, and an ApiError when it failed.
 */
export async function answer(sent) {
  let res;
  try {
    res = await sent;
  } catch (e) {
    throw new ApiError(0, 'NetworkError', 'Cannot reach the server: ' + e.message);
  }
  if (res.status === 401) {
    unauthorized();
    throw new ApiError(401, 'Unauthorized', 'Login required');
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    const message =
      (data && typeof data === 'object' && (data.data?.message || data.message || data.error)) ||
      (typeof data === 'string' && data) ||
      res.statusText;
    throw new ApiError(res.status, (data && data.name) || 'Error', String(message), data);
  }
  return data;
}

export const get = (p) => api('GET', p);
export const post = (p, b) => api('POST', p, b);
export const patch = (p, b) => api('PATCH', p, b);
export const put = (p, b) => api('PUT', p, b);
export const del = (p) => api('DELETE', p);

export const enc = encodeURIComponent;
