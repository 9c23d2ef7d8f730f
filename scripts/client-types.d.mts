/** Where the generated client types live, relative to the repository. */
export const TYPES_FILE: string;
import type * as Cairn from '../src/index.js';

/** The package's entry module, as `dist/index.js` or `src/index.ts` exports it. */
type CairnModule = typeof Cairn;
/** The OpenAPI document a Cairn serves with its default routes (without `servers`). */
export function servedDocument(cairn: CairnModule): Promise<Record<string, unknown>>;
/** The TypeScript source openapi-typescript makes of `document`. */
export function clientTypes(document: Record<string, unknown>): Promise<string>;
