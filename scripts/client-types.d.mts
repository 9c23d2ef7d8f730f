/** Where the generated client types go, relative to the repository. */
export const TYPES_FILE: string;
/** The TypeScript source openapi-typescript makes of `document`. */
export function clientTypes(document: Record<string, unknown>): Promise<string>;
