/** Small readers of untrusted JSON Schema documents (downstream tool schemas are not ours to trust). */

/** A plain JSON object. */
export type JsonObject = Record<string, unknown>;

/** True for a non-null, non-array object. */
export function isRecord(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The `properties` map of an object schema, or `{}` when the schema is missing or malformed. */
export function topLevelProperties(schema: unknown): JsonObject {
  if (!isRecord(schema) || !isRecord(schema.properties)) return {};
  return schema.properties;
}

/** The string entries of an object schema's `required` list, or `[]` when missing or malformed. */
export function requiredNames(schema: unknown): string[] {
  if (!isRecord(schema) || !Array.isArray(schema.required)) return [];
  return schema.required.filter((r): r is string => typeof r === 'string');
}
