import type * as Cairn from '../src/index.js';

/** The package's entry module, as `src/index.ts` exports it. */
type CairnModule = typeof Cairn;
/** Where the OpenAPI document lives, relative to the repository. */
export const DOCUMENT_FILE: string;
/** The OpenAPI document a Cairn serves with its default routes (without `servers`). */
export function servedDocument(cairn: CairnModule): Promise<Record<string, unknown>>;
/** The text of the committed document for `document`: JSON indented by two spaces, one newline at the end. */
export function documentText(document: Record<string, unknown>): string;
