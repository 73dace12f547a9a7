// The elicitation form's validation, against the exact schema that
// server-everything's trigger-elicitation-request sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { schemaFields, initialValues, validateField, validateAll, toContent } from '../../web/src/schemaform.js';
import { splitCommand } from '../../web/src/command.js';

const schema = JSON.parse(readFileSync(new URL('./testdata/everything-elicitation-schema.json', import.meta.url)));
const fields = schemaFields(schema);
const field = (name) => fields.find((f) => f.name === name);

test('every property of the schema becomes a field of the right kind', () => {
  const kinds = Object.fromEntries(fields.map((f) => [f.name, f.kind]));
  assert.deepEqual(kinds, {
    name: 'string',
    check: 'boolean',
    firstLine: 'string',
    email: 'string',
    homepage: 'string',
    birthdate: 'string',
    integer: 'integer',
    number: 'number',
    untitledSingleSelectEnum: 'enum',
    untitledMultipleSelectEnum: 'multi',
    titledSingleSelectEnum: 'enum',
    titledMultipleSelectEnum: 'multi',
    legacyTitledEnum: 'enum',
  });
  assert.equal(field('name').required, true);
  assert.deepEqual(field('titledSingleSelectEnum').options[0], { value: 'hero-1', label: 'Superman' });
  assert.deepEqual(field('titledMultipleSelectEnum').options[1], { value: 'fish-2', label: 'Salmon' });
  assert.deepEqual(field('legacyTitledEnum').options[1], { value: 'pet-2', label: 'Dogs' });
});

test('the defaults fill the form and only the required name is missing', () => {
  const values = initialValues(fields);
  assert.equal(values.firstLine, 'It was a dark and stormy night.');
  assert.equal(values.integer, '42');
  assert.deepEqual(values.untitledMultipleSelectEnum, ['Guitar']);
  assert.deepEqual(Object.keys(validateAll(fields, values)), ['name']);
});

for (const [name, value, wrong] of [
  ['email', 'not-an-email', true],
  ['email', 'ada@example.com', false],
  ['homepage', 'example.com', true],
  ['homepage', 'https://example.com/ada', false],
  ['birthdate', '1815-02-30', true],
  ['birthdate', '1815-12-10', false],
  ['integer', '3.5', true],
  ['integer', '101', true],
  ['integer', '7', false],
  ['number', '-1', true],
  ['number', '999.5', false],
  ['untitledSingleSelectEnum', 'Janice', true],
  ['untitledMultipleSelectEnum', ['Guitar', 'Piano', 'Violin', 'Drums'], true],
  ['untitledMultipleSelectEnum', [], true],
  ['titledMultipleSelectEnum', ['fish-1', 'fish-3'], false],
]) {
  test(`${name} = ${JSON.stringify(value)} is ${wrong ? 'flagged' : 'accepted'}`, () => {
    const err = validateField(field(name), value);
    if (wrong) assert.ok(err, 'no error');
    else assert.equal(err, null);
  });
}

test('the content sent is typed and leaves out empty optional fields', () => {
  const values = { ...initialValues(fields), name: ' Ada ', email: '', integer: '7', number: '2.5', check: true };
  assert.deepEqual(toContent(fields, values), {
    name: 'Ada',
    check: true,
    firstLine: 'It was a dark and stormy night.',
    integer: 7,
    number: 2.5,
    untitledSingleSelectEnum: 'Monica',
    untitledMultipleSelectEnum: ['Guitar'],
    titledSingleSelectEnum: 'hero-1',
    titledMultipleSelectEnum: ['fish-1'],
    legacyTitledEnum: 'pet-1',
  });
});

test('an emptied multi-select with a default is sent empty, so the server does not put the default back', () => {
  const values = { ...initialValues(fields), name: 'Ada', untitledMultipleSelectEnum: [] };
  assert.deepEqual(toContent(fields, values).untitledMultipleSelectEnum, []);
  assert.deepEqual(Object.keys(validateAll(fields, values)), ['untitledMultipleSelectEnum']);
});

test('a command line splits on spaces and keeps quoted words whole', () => {
  assert.deepEqual(splitCommand(`node "/a b/index.js" stdio ''`), ['node', '/a b/index.js', 'stdio', '']);
  assert.deepEqual(splitCommand('  npx  -y   pkg '), ['npx', '-y', 'pkg']);
});
