import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { isRecord, requiredNames, topLevelProperties, type JsonObject } from './schema.js';

/**
 * Arguments of a deferred tool call, before dispatch (DESIGN.md, "Tool hub"): a required-argument probe
 * on the raw arguments, conservative schema-guided coercion, then JSON Schema validation. The provider
 * only ever saw `tool_call`'s generic `arguments` object, so this is the tool's only schema check before
 * it runs. Schemas Cairn cannot check safely (malformed, external `$ref`) fail open.
 */

/** Why a call was refused before dispatch; the tool was not invoked. */
export type ArgumentFailure = {
  error: string;
  /** Where the problem is, e.g. `arguments.options.count`. */
  path: string;
  /** The JSON Schema keyword that failed (`required`, `type`, `enum`, …) or `schema`. */
  constraint: string;
  /** The tool's parameters schema, so the caller can retry without another describe. */
  parameters: JsonObject;
  hint: string;
};

/** The arguments to dispatch, or why not. */
export type PreparedArguments = { ok: true; arguments: JsonObject } | { ok: false; failure: ArgumentFailure };

export const RETRY_HINT = "Retry with 'arguments' matching the parameters schema above.";
const DETAIL_MAX_CHARS = 600;
const LITERAL_KEYS = new Set(['const', 'default', 'enum', 'example', 'examples']);

/**
 * Probes, coerces and validates `args` for `toolName` against its `schema`. Returns the (coerced)
 * arguments to send, or a failure naming the path and the constraint.
 */
export function prepareArguments(toolName: string, args: JsonObject, schema: unknown): PreparedArguments {
  if (!isRecord(schema)) return { ok: true, arguments: args };
  const missing = requiredNames(schema).filter((name) => !Object.hasOwn(args, name));
  if (missing.length > 0) {
    return failure(`'${toolName}' is missing required argument(s): ${missing.join(', ')}. The tool was NOT invoked.`, 'arguments', 'required', schema);
  }
  let coerced: JsonObject;
  try {
    coerced = coerceArguments(structuredClone(args), schema);
  } catch {
    coerced = structuredClone(args);
  }
  const validate = compile(schema);
  if (validate === null || validate(coerced)) return { ok: true, arguments: coerced };
  const err = bestError(validate.errors ?? []);
  if (!err) return { ok: true, arguments: coerced };
  const path = errorPath(err, coerced);
  const detail = clip(errorDetail(err));
  return failure(`'${toolName}' failed argument validation at ${path} (${err.keyword}): ${detail}. The tool was NOT invoked.`, path, err.keyword, schema);
}

function failure(error: string, path: string, constraint: string, parameters: JsonObject): PreparedArguments {
  return { ok: false, failure: { error, path, constraint, parameters, hint: RETRY_HINT } };
}

// ---- coercion -----------------------------------------------------------------------------------

/**
 * Repairs top-level argument values that a model commonly sends as strings, only where the schema makes
 * the repair unambiguous: `"42"` → 42 for integer/number, `"true"`/`"false"` for boolean, JSON text for
 * array/object, `"null"` where null is allowed, a blank string → `{}` for an object with no required
 * keys. Anything else is left as it is for validation to judge. Mutates and returns `args`.
 */
export function coerceArguments(args: JsonObject, schema: unknown): JsonObject {
  return mapProperties(args, schema, coerceValue);
}

/** Replaces each value of `object` that `schema` has a property schema for with `map(value, that schema)`; mutates and returns `object`. */
function mapProperties(object: JsonObject, schema: unknown, map: (value: unknown, property: JsonObject) => unknown): JsonObject {
  const properties = topLevelProperties(schema);
  for (const [key, value] of Object.entries(object)) {
    const property = properties[key];
    if (isRecord(property)) object[key] = map(value, property);
  }
  return object;
}

function coerceValue(value: unknown, schema: JsonObject): unknown {
  const types = typesOf(schema);
  if (types.includes('array') && !Array.isArray(value) && value !== null && value !== undefined) {
    if (typeof value === 'string') {
      const repaired = coerceString(value, schema);
      if (repaired !== value) return repaired;
    }
    return [value];
  }
  if (Array.isArray(value) || isRecord(value)) return normalizeJsonStrings(value, schema);
  if (typeof value === 'string') return coerceString(value, schema);
  return value;
}

function coerceString(value: string, schema: JsonObject): unknown {
  const types = typesOf(schema);
  const nullable = allowsNull(schema);
  if (types.length === 0 && !nullable) return value;
  if (nullable && value.trim().toLowerCase() === 'null') return null;
  for (const type of types) {
    const repaired = coerceAs(value, type, schema);
    if (repaired !== value) return repaired;
  }
  return value;
}

function coerceAs(value: string, type: string, schema: JsonObject): unknown {
  const trimmed = value.trim();
  switch (type) {
    case 'integer': {
      const n = parseDecimal(trimmed);
      return n !== null && Number.isInteger(n) ? n : value;
    }
    case 'number': {
      const n = parseDecimal(trimmed);
      return n ?? value;
    }
    case 'boolean': {
      const lower = trimmed.toLowerCase();
      return lower === 'true' ? true : lower === 'false' ? false : value;
    }
    case 'object': {
      if (trimmed === '' && requiredNames(schema).length === 0) return {};
      const parsed = parseJson(trimmed);
      return isRecord(parsed) ? normalizeJsonStrings(parsed, schema) : value;
    }
    case 'array': {
      const parsed = parseJson(trimmed);
      return Array.isArray(parsed) ? normalizeJsonStrings(parsed, schema) : value;
    }
    case 'null':
      return trimmed.toLowerCase() === 'null' ? null : value;
    default:
      return value;
  }
}

/** Inside a container, parses JSON strings where the schema expects a container; scalars are left alone. */
function normalizeJsonStrings(value: unknown, schema: JsonObject): unknown {
  const branch = branchFor(value, schema);
  if (Array.isArray(value)) {
    const items = isRecord(branch.items) ? branch.items : null;
    return items ? value.map((item) => normalizeNested(item, items)) : value;
  }
  if (isRecord(value)) mapProperties(value, branch, normalizeNested);
  return value;
}

function normalizeNested(value: unknown, schema: JsonObject): unknown {
  if (typeof value === 'string') {
    const containers = containerTypes(schema);
    if (containers.has('object') && value.trim() === '' && requiredNames(schema).length === 0) return {};
    if (containers.size > 0) {
      const parsed = parseJson(value.trim());
      if ((Array.isArray(parsed) && containers.has('array')) || (isRecord(parsed) && containers.has('object'))) {
        return normalizeJsonStrings(parsed, schema);
      }
    }
    return value;
  }
  return Array.isArray(value) || isRecord(value) ? normalizeJsonStrings(value, schema) : value;
}

/** The schema, or the first combinator branch (anyOf/oneOf/allOf) whose type fits the value's kind. */
function branchFor(value: unknown, schema: JsonObject): JsonObject {
  const kind = Array.isArray(value) ? 'array' : 'object';
  if (typesOf(schema).includes(kind)) return schema;
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const branches = schema[key];
    if (!Array.isArray(branches)) continue;
    for (const b of branches) if (isRecord(b) && typesOf(b).includes(kind)) return b;
  }
  return schema;
}

function containerTypes(schema: JsonObject): Set<string> {
  const out = new Set<string>(typesOf(schema).filter((t) => t === 'array' || t === 'object'));
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const branches = schema[key];
    if (Array.isArray(branches)) for (const b of branches) if (isRecord(b)) for (const t of containerTypes(b)) out.add(t);
  }
  return out;
}

function typesOf(schema: JsonObject): string[] {
  const t = schema.type;
  if (typeof t === 'string') return [t];
  return Array.isArray(t) ? t.filter((x): x is string => typeof x === 'string') : [];
}

function allowsNull(schema: JsonObject): boolean {
  if (typesOf(schema).includes('null') || schema.nullable === true) return true;
  return ['anyOf', 'oneOf'].some((key) => {
    const branches = schema[key];
    return Array.isArray(branches) && branches.some((b) => isRecord(b) && typesOf(b).includes('null'));
  });
}

// A plain decimal: what a model writes for a number. No hex, no "Infinity", no digit separators.
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function parseDecimal(text: string): number | null {
  if (!DECIMAL.test(text)) return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---- validation ---------------------------------------------------------------------------------

const validators = new WeakMap<object, ValidateFunction | null>();
let ajvDraft7: Ajv | undefined;
let ajv2019: Ajv2019 | undefined;
let ajv2020: Ajv2020 | undefined;

/** A validator for `schema`, or null when the schema cannot be checked safely (then the call goes through). */
function compile(schema: JsonObject): ValidateFunction | null {
  const cached = validators.get(schema);
  if (cached !== undefined) return cached;
  let validate: ValidateFunction | null = null;
  try {
    const normalized = normalizeForValidation(schema) as JsonObject;
    if (!hasExternalRef(normalized)) {
      const draft = typeof normalized.$schema === 'string' ? normalized.$schema : '';
      delete normalized.$schema;
      validate = validatorFor(draft).compile(normalized);
    }
  } catch {
    validate = null;
  }
  validators.set(schema, validate);
  return validate;
}

function validatorFor(draft: string): Ajv | Ajv2019 | Ajv2020 {
  // Downstream schemas are not ours: unknown keywords and formats are ignored rather than refused.
  const options = { strict: false, allErrors: true, validateFormats: false, validateSchema: true } as const;
  if (draft.includes('2020-12')) return (ajv2020 ??= new Ajv2020(options));
  if (draft.includes('2019-09')) return (ajv2019 ??= new Ajv2019(options));
  return (ajvDraft7 ??= new Ajv(options));
}

/**
 * OpenAPI's `nullable: true` becomes a `null` type (or an `anyOf` with null when the node has no type);
 * literal values (`enum`, `const`, `default`, examples) are copied as they are, never read as schemas.
 */
function normalizeForValidation(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(normalizeForValidation);
  if (!isRecord(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'nullable') continue;
    out[key] = LITERAL_KEYS.has(key) ? structuredClone(value) : normalizeForValidation(value);
  }
  if (node.nullable === true) {
    const type = out.type;
    if (typeof type === 'string') out.type = type === 'null' ? type : [type, 'null'];
    else if (Array.isArray(type)) out.type = type.includes('null') ? type : [...type, 'null'];
    else return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

function hasExternalRef(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasExternalRef);
  if (!isRecord(node)) return false;
  for (const [key, value] of Object.entries(node)) {
    if (LITERAL_KEYS.has(key)) continue;
    if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) return true;
    if (hasExternalRef(value)) return true;
  }
  return false;
}

/**
 * The most useful of several errors: the deepest instance path first (it names the exact value), then
 * a concrete keyword over the combinators that merely report their branches failed.
 */
function bestError(errors: readonly ErrorObject[]): ErrorObject | undefined {
  const weak = new Set(['anyOf', 'oneOf', 'allOf', 'if', 'not']);
  return [...errors].sort((a, b) => depth(b) - depth(a) || Number(weak.has(a.keyword)) - Number(weak.has(b.keyword)))[0];
}

function depth(err: ErrorObject): number {
  return err.instancePath === '' ? 0 : err.instancePath.split('/').length - 1;
}

/** `arguments.options.count`, `arguments.items[2]`, `arguments["odd key"]`. */
function errorPath(err: ErrorObject, value: unknown): string {
  let path = 'arguments';
  let cursor: unknown = value;
  const segments = err.instancePath === '' ? [] : err.instancePath.slice(1).split('/');
  for (const raw of segments) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cursor) && /^\d+$/.test(key)) {
      path += `[${key}]`;
      cursor = cursor[Number(key)];
    } else {
      path += /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
      cursor = isRecord(cursor) ? cursor[key] : undefined;
    }
  }
  return path;
}

function errorDetail(err: ErrorObject): string {
  const params = err.params as Record<string, unknown>;
  const message = err.message ?? 'is invalid';
  switch (err.keyword) {
    case 'additionalProperties':
      return `${message} (${JSON.stringify(params.additionalProperty)})`;
    case 'enum':
      return `${message}: ${JSON.stringify(params.allowedValues)}`;
    case 'const':
      return `${message}: ${JSON.stringify(params.allowedValue)}`;
    default:
      return message;
  }
}

function clip(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim();
  return collapsed.length > DETAIL_MAX_CHARS ? `${collapsed.slice(0, DETAIL_MAX_CHARS - 3)}...` : collapsed;
}
