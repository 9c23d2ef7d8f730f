import { describe, expect, it } from 'vitest';
import { coerceArguments, prepareArguments } from './args.js';

// Ports of the reference suite's probe, coercion and validation tests (hermes-tool-search.md §6.A 40-51,
// §6.B after #40/#41) against the pure argument pipeline; dispatch-side checks live in tool-hub.test.ts.

const docSchema = { type: 'object', properties: { document_id: { type: 'string' }, format: { type: 'string' } }, required: ['document_id'] };

function refused(result: ReturnType<typeof prepareArguments>) {
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.arguments)}`);
  return result.failure;
}

function accepted(result: ReturnType<typeof prepareArguments>) {
  if (!result.ok) throw new Error(`expected acceptance, got ${result.failure.error}`);
  return result.arguments;
}

describe('required-argument probe', () => {
  it('returns the schema when a required argument is missing, and the tool is not invoked', () => {
    const f = refused(prepareArguments('docs__get', {}, docSchema));
    expect(f.error).toContain('document_id');
    expect(f.error).toContain('NOT invoked');
    expect(f).toMatchObject({ path: 'arguments', constraint: 'required' });
    expect(f.parameters.required).toEqual(['document_id']);
    expect(f.parameters.properties).toHaveProperty('document_id');
    expect(f.hint).toMatch(/Retry/);
  });

  it('counts a null value as present (presence, not value, is probed)', () => {
    expect(refused(prepareArguments('t', { document_id: null }, docSchema)).constraint).toBe('type');
  });

  it('passes valid calls and calls with optional arguments', () => {
    expect(accepted(prepareArguments('t', { document_id: 'abc' }, docSchema))).toEqual({ document_id: 'abc' });
    expect(accepted(prepareArguments('t', { document_id: 'abc', format: 'md' }, docSchema))).toEqual({ document_id: 'abc', format: 'md' });
  });

  it('dispatches a schema with no required list called with no arguments', () => {
    expect(accepted(prepareArguments('t', {}, { type: 'object', properties: { a: { type: 'string' } } }))).toEqual({});
  });
});

describe('validation', () => {
  it('blocks an invalid enum with the path and the constraint', () => {
    const schema = { type: 'object', properties: { priority: { type: 'string', enum: ['low', 'high'] } }, required: ['priority'] };
    const f = refused(prepareArguments('tickets__create', { priority: 'urgent' }, schema));
    expect(f).toMatchObject({ path: 'arguments.priority', constraint: 'enum' });
    expect(f.error).toContain('NOT invoked');
    expect(f.error).toContain('"low","high"');
  });

  it.each([
    [{ options: { count: 'not-an-integer' } }, 'arguments.options.count', 'type'],
    [{ options: {} }, 'arguments.options', 'required'],
    [{ options: { count: 1, extra: true } }, 'arguments.options', 'additionalProperties'],
  ])('reports the nested path of %j', (args, path, constraint) => {
    const schema = {
      type: 'object',
      properties: { options: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'], additionalProperties: false } },
      required: ['options'],
    };
    expect(refused(prepareArguments('t', args, schema))).toMatchObject({ path, constraint });
  });

  it('names array items and odd keys in the path', () => {
    const schema = { type: 'object', properties: { items: { type: 'array', items: { type: 'integer' } }, 'odd key': { type: 'string' } } };
    expect(refused(prepareArguments('t', { items: [1, 'x'] }, schema)).path).toBe('arguments.items[1]');
    expect(refused(prepareArguments('t', { 'odd key': 5 }, schema)).path).toBe('arguments["odd key"]');
  });

  it('accepts OpenAPI nullable: true', () => {
    const schema = { type: 'object', properties: { value: { type: 'string', nullable: true } }, required: ['value'] };
    expect(accepted(prepareArguments('t', { value: null }, schema))).toEqual({ value: null });
  });

  it('reads enum, const and default values as literals, never as schemas', () => {
    const literal = { nullable: true, $ref: 'literal-not-a-schema' };
    const schema = { type: 'object', properties: { value: { enum: [literal] } }, required: ['value'] };
    expect(accepted(prepareArguments('t', { value: literal }, schema))).toEqual({ value: literal });
  });

  it('fails open on a malformed schema', () => {
    const schema = { type: 'object', properties: { value: { type: 'not-a-json-schema-type' } }, required: ['value'] };
    expect(accepted(prepareArguments('t', { value: 'kept' }, schema))).toEqual({ value: 'kept' });
  });

  it('fails open on an external $ref without fetching it', () => {
    const schema = { type: 'object', properties: { value: { $ref: 'https://example.invalid/schema.json' } } };
    expect(accepted(prepareArguments('t', { value: 1 }, schema))).toEqual({ value: 1 });
  });

  it('validates draft 2020-12 schemas and resolves local $refs', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { n: { type: 'integer', minimum: 1 } },
      properties: { n: { $ref: '#/$defs/n' } },
    };
    expect(refused(prepareArguments('t', { n: 0 }, schema))).toMatchObject({ path: 'arguments.n', constraint: 'minimum' });
    expect(accepted(prepareArguments('t', { n: 2 }, schema))).toEqual({ n: 2 });
  });

  it('lets anything through when the tool has no schema', () => {
    expect(accepted(prepareArguments('t', { a: 1 }, undefined))).toEqual({ a: 1 });
  });

  it('never changes the caller’s object', () => {
    const args = { count: '42' };
    prepareArguments('t', args, { type: 'object', properties: { count: { type: 'integer' } } });
    expect(args).toEqual({ count: '42' });
  });
});

describe('coercion', () => {
  const coerce = (value: unknown, schema: Record<string, unknown>) => coerceArguments({ v: value }, { type: 'object', properties: { v: schema } }).v;

  it('repairs numbers, booleans, JSON containers and null where the schema says so', () => {
    expect(coerce('42', { type: 'integer' })).toBe(42);
    expect(coerce(' 4.0 ', { type: 'integer' })).toBe(4);
    expect(coerce('4.5', { type: 'number' })).toBe(4.5);
    expect(coerce('1e3', { type: 'number' })).toBe(1000);
    expect(coerce('TRUE', { type: 'boolean' })).toBe(true);
    expect(coerce('false', { type: 'boolean' })).toBe(false);
    expect(coerce('[1,2]', { type: 'array' })).toEqual([1, 2]);
    expect(coerce('{"a":1}', { type: 'object' })).toEqual({ a: 1 });
    expect(coerce('null', { type: ['string', 'null'] })).toBeNull();
    expect(coerce('NULL', { type: 'integer', nullable: true })).toBeNull();
    expect(coerce('null', { anyOf: [{ type: 'string' }, { type: 'null' }] })).toBeNull();
  });

  it('leaves ambiguous values alone', () => {
    expect(coerce('4.5', { type: 'integer' })).toBe('4.5');
    expect(coerce('Infinity', { type: 'number' })).toBe('Infinity');
    expect(coerce('0x10', { type: 'integer' })).toBe('0x10');
    expect(coerce('1', { type: 'boolean' })).toBe('1');
    expect(coerce('yes', { type: 'boolean' })).toBe('yes');
    expect(coerce('42', { type: 'string' })).toBe('42');
    expect(coerce('42', {})).toBe('42');
    expect(coerce('{"a":1}', { type: 'array' })).toEqual(['{"a":1}']);
  });

  it('wraps a single value into an array', () => {
    expect(coerce('solo', { type: 'array', items: { type: 'string' } })).toEqual(['solo']);
    expect(coerce(7, { type: 'array' })).toEqual([7]);
    expect(coerce(null, { type: 'array' })).toBeNull();
  });

  it('tries the members of a type union in order', () => {
    expect(coerce('12', { type: ['integer', 'string'] })).toBe(12);
    expect(coerce('true', { type: ['integer', 'boolean'] })).toBe(true);
  });

  it('turns a blank or "{}" optional object into {} but never fabricates one with required keys', () => {
    const open = { type: 'object', properties: {}, required: [] };
    expect(coerce('', open)).toEqual({});
    expect(coerce('{}', open)).toEqual({});
    expect(coerce({}, open)).toEqual({});
    expect(coerce('', { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] })).toBe('');
  });

  it('parses JSON strings nested where the schema expects a container, but not nested scalars', () => {
    const schema = { type: 'object', properties: { list: { type: 'array', items: { type: 'integer' } }, count: { type: 'integer' } } };
    expect(coerce({ list: '[1,2]', count: '3' }, schema)).toEqual({ list: [1, 2], count: '3' });
    expect(coerce(['{"a":1}'], { type: 'array', items: { anyOf: [{ type: 'object' }, { type: 'null' }] } })).toEqual([{ a: 1 }]);
  });

  it('coerces then validates: "42" for an integer reaches the tool as 42', () => {
    const schema = { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] };
    expect(accepted(prepareArguments('t', { count: '42' }, schema))).toEqual({ count: 42 });
  });

  it('keeps a blank string for an object with required keys, which then fails as a type error', () => {
    const schema = {
      type: 'object',
      properties: { stripe_api_operation_id: { type: 'string' }, parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
      required: ['stripe_api_operation_id', 'parameters'],
    };
    expect(refused(prepareArguments('t', { stripe_api_operation_id: 'GetBalance', parameters: '' }, schema))).toMatchObject({ path: 'arguments.parameters', constraint: 'type' });
  });

  it.each([{}, '', '{}'])('an optional object parameter given as %j reaches the tool as {}', (value) => {
    const schema = {
      type: 'object',
      properties: { stripe_api_operation_id: { type: 'string' }, parameters: { type: 'object', properties: {}, required: [] } },
      required: ['stripe_api_operation_id', 'parameters'],
    };
    expect(accepted(prepareArguments('stripe__read', { stripe_api_operation_id: 'GetBalance', parameters: value }, schema))).toEqual({
      stripe_api_operation_id: 'GetBalance',
      parameters: {},
    });
  });
});
