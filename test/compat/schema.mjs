// A small JSON Schema checker for the subset OpenCode's OpenAPI document uses ($ref, type, enum,
// const, required, properties, additionalProperties, items, anyOf/oneOf/allOf, pattern, minimum).
// It reports every place a value disagrees with the schema, so one run lists all the differences
// instead of stopping at the first.

/** Checks value against schema; returns a list of "path: problem" strings (empty when it fits). */
export function check(doc, schema, value, at = '$') {
  const problems = [];
  walk(doc, schema, value, at, problems);
  return problems;
}

function resolve(doc, schema) {
  while (schema && schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    schema = doc.components.schemas[name];
    if (!schema) throw new Error(`unknown schema ${name}`);
  }
  return schema;
}

function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeFits(want, v) {
  const got = typeOf(v);
  return want === got || (want === 'number' && got === 'integer');
}

function walk(doc, schema, v, at, out) {
  schema = resolve(doc, schema);
  if (!schema || Object.keys(schema).length === 0) return;
  for (const key of ['anyOf', 'oneOf']) {
    if (!schema[key]) continue;
    // A union discriminated by "type" (events, parts) is checked against the matching member only.
    let members = schema[key];
    const tagged = members.filter((s) => {
      const t = resolve(doc, s)?.properties?.type;
      return v && typeof v === 'object' && t && ((t.enum && t.enum.includes(v.type)) || t.const === v.type);
    });
    if (tagged.length) members = tagged;
    const branches = members.map((s) => check(doc, s, v, at));
    if (branches.some((b) => b.length === 0)) return;
    // Report the branch that came closest, which is the one a reader can act on.
    const best = branches.reduce((a, b) => (b.length < a.length ? b : a));
    out.push(...best);
    return;
  }
  for (const s of schema.allOf ?? []) walk(doc, s, v, at, out);
  if (schema.const !== undefined && v !== schema.const) out.push(`${at}: expected ${JSON.stringify(schema.const)}, got ${JSON.stringify(v)}`);
  if (schema.enum && !schema.enum.includes(v)) out.push(`${at}: expected one of ${JSON.stringify(schema.enum)}, got ${JSON.stringify(v)}`);
  const types = schema.type === undefined ? [] : [].concat(schema.type);
  if (types.length && !types.some((t) => typeFits(t, v))) {
    out.push(`${at}: expected ${types.join('|')}, got ${typeOf(v)} ${JSON.stringify(v)?.slice(0, 80)}`);
    return;
  }
  if (typeof v === 'string' && schema.pattern && !new RegExp(schema.pattern).test(v)) out.push(`${at}: ${JSON.stringify(v)} does not match ${schema.pattern}`);
  if (typeof v === 'number' && schema.minimum !== undefined && v < schema.minimum) out.push(`${at}: ${v} is below ${schema.minimum}`);
  if (Array.isArray(v) && schema.items) v.forEach((item, i) => walk(doc, schema.items, item, `${at}[${i}]`, out));
  if (typeOf(v) === 'object' && (schema.properties || schema.additionalProperties !== undefined || schema.required)) {
    for (const name of schema.required ?? []) if (!(name in v)) out.push(`${at}: missing required field "${name}"`);
    for (const [name, item] of Object.entries(v)) {
      const sub = schema.properties?.[name];
      if (sub) walk(doc, sub, item, `${at}.${name}`, out);
      else if (schema.additionalProperties === false) out.push(`${at}: field "${name}" is not in OpenCode's schema`);
      else if (typeof schema.additionalProperties === 'object') walk(doc, schema.additionalProperties, item, `${at}.${name}`, out);
    }
  }
}

/** The schema of an operation's 200 (or 2xx) JSON response in the document. */
export function responseSchema(doc, method, path) {
  const op = doc.paths[path]?.[method.toLowerCase()];
  if (!op) throw new Error(`OpenCode has no ${method} ${path}`);
  for (const status of ['200', '201', '204']) {
    const s = op.responses?.[status]?.content?.['application/json']?.schema;
    if (s) return s;
  }
  return null;
}

/** The OpenAPI path template a concrete request path matches, e.g. /session/ses_1 → /session/{sessionID}. */
export function templateOf(doc, method, concrete) {
  const m = method.toLowerCase();
  let best = null;
  for (const template of Object.keys(doc.paths)) {
    if (!doc.paths[template][m]) continue;
    const re = new RegExp('^' + template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$');
    // A literal segment (/session/status) wins over a parameter (/session/{sessionID}).
    if (re.test(concrete) && (!best || template.split('{').length < best.split('{').length)) best = template;
  }
  return best;
}

/**
 * Splits problems into differences and extensions: a field OpenCode's schema does not have is an
 * extension when one of the allowed patterns matches where it was found (e.g. "GET /permission[].time"
 * or "permission.asked.properties.time"), and a difference otherwise.
 */
export function partition(problems, allowedExtensions) {
  const differences = [];
  const extensions = [];
  for (const p of problems) {
    const m = p.match(/^(.*): field "([^"]+)" is not in OpenCode's schema$/);
    const where = m && `${m[1].replace(/\[\d+\]/g, '[]')}.${m[2]}`;
    if (m && allowedExtensions.some((re) => re.test(where))) extensions.push(where);
    else differences.push(p);
  }
  return { differences, extensions: [...new Set(extensions)] };
}
