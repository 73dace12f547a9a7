// Turns an MCP elicitation `requestedSchema` (a flat object of primitive
// properties, per the MCP spec) into form fields, and validates answers the
// same way the server will, so mistakes show before anything is sent.

function enumOptions(p) {
  if (Array.isArray(p.oneOf) && p.oneOf.every((o) => 'const' in o)) return p.oneOf.map((o) => ({ value: String(o.const), label: o.title || String(o.const) }));
  if (Array.isArray(p.anyOf) && p.anyOf.every((o) => 'const' in o)) return p.anyOf.map((o) => ({ value: String(o.const), label: o.title || String(o.const) }));
  if (Array.isArray(p.enum)) return p.enum.map((v, i) => ({ value: String(v), label: (p.enumNames && p.enumNames[i]) || String(v) }));
  return null;
}

export function schemaFields(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  return Object.entries(props).map(([name, p]) => {
    const f = {
      name,
      label: p.title || name,
      description: p.description || '',
      required: required.has(name),
      schema: p,
      kind: 'string',
    };
    if (p.type === 'boolean') f.kind = 'boolean';
    else if (p.type === 'integer' || p.type === 'number') f.kind = p.type;
    else if (p.type === 'array') {
      f.kind = 'multi';
      f.options = enumOptions(p.items || {}) || [];
    } else {
      const opts = enumOptions(p);
      if (opts) {
        f.kind = 'enum';
        f.options = opts;
      } else f.format = p.format || '';
    }
    return f;
  });
}

export function initialValues(fields) {
  const v = {};
  for (const f of fields) {
    const d = f.schema.default;
    if (f.kind === 'boolean') v[f.name] = d === true;
    else if (f.kind === 'multi') v[f.name] = Array.isArray(d) ? d.map(String) : [];
    else v[f.name] = d === undefined || d === null ? '' : String(d);
  }
  return v;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function validDate(s) {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
}

/** Returns a human sentence describing what is wrong with the value, or null. */
export function validateField(f, value) {
  const p = f.schema;
  if (f.kind === 'boolean') return null;
  if (f.kind === 'multi') {
    const n = value.length;
    if (f.required && n === 0) return 'Choose at least one.';
    if (n === 0 && !sendsEmpty(f)) return null;
    if (p.minItems !== undefined && n < p.minItems) return `Choose at least ${p.minItems}.`;
    if (p.maxItems !== undefined && n > p.maxItems) return `Choose at most ${p.maxItems}.`;
    return null;
  }
  const s = String(value ?? '').trim();
  if (s === '') return f.required ? 'Required.' : null;
  if (f.kind === 'integer' || f.kind === 'number') {
    const n = Number(s);
    if (!Number.isFinite(n)) return 'Enter a number.';
    if (f.kind === 'integer' && !Number.isInteger(n)) return 'Enter a whole number.';
    if (p.minimum !== undefined && n < p.minimum) return `Must be at least ${p.minimum}.`;
    if (p.maximum !== undefined && n > p.maximum) return `Must be at most ${p.maximum}.`;
    if (p.exclusiveMinimum !== undefined && n <= p.exclusiveMinimum) return `Must be more than ${p.exclusiveMinimum}.`;
    if (p.exclusiveMaximum !== undefined && n >= p.exclusiveMaximum) return `Must be less than ${p.exclusiveMaximum}.`;
    return null;
  }
  if (f.kind === 'enum') return f.options.some((o) => o.value === s) ? null : 'Choose one of the options.';
  if (p.minLength !== undefined && s.length < p.minLength) return `At least ${p.minLength} characters.`;
  if (p.maxLength !== undefined && s.length > p.maxLength) return `At most ${p.maxLength} characters.`;
  if (f.format === 'email' && !EMAIL.test(s)) return 'Enter an email address, like name@example.com.';
  if (f.format === 'uri') {
    try {
      const u = new URL(s);
      if (!u.protocol) throw new Error();
    } catch {
      return 'Enter a full URL, like https://example.com.';
    }
  }
  if (f.format === 'date' && !validDate(s)) return 'Enter a date as YYYY-MM-DD.';
  if (f.format === 'date-time' && Number.isNaN(Date.parse(s))) return 'Enter a date and time.';
  if (p.pattern) {
    try {
      if (!new RegExp(p.pattern, 'u').test(s)) return `Must match ${p.pattern}.`;
    } catch {
      /* a pattern the browser cannot compile is left to the server */
    }
  }
  return null;
}

export function validateAll(fields, values) {
  const errors = {};
  for (const f of fields) {
    const e = validateField(f, values[f.name]);
    if (e) errors[f.name] = e;
  }
  return errors;
}

// A multi-select with a default is always sent, even empty: the server fills in the default for a
// field left out, so leaving out an emptied selection would bring back the choices just unticked.
function sendsEmpty(f) {
  return f.required || Array.isArray(f.schema.default);
}

/** The `content` object to send: typed values, empty optional fields left out. */
export function toContent(fields, values) {
  const out = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.kind === 'boolean') out[f.name] = !!v;
    else if (f.kind === 'multi') {
      if (v.length || sendsEmpty(f)) out[f.name] = v;
    } else {
      const s = String(v ?? '').trim();
      if (s === '') continue;
      out[f.name] = f.kind === 'integer' || f.kind === 'number' ? Number(s) : s;
    }
  }
  return out;
}
