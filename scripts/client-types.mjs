// Generates the client's types, src/client/openapi-types.gen.ts (git-ignored), from the committed openapi.json
// with openapi-typescript. `npm run build` and `npm run typecheck` run it before tsc; it reads no code of
// Cairn's, so it works on a fresh clone before anything is built. openapi.json itself comes from the routes
// (scripts/openapi.mjs, `npm run openapi`).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { DOCUMENT_FILE } from './openapi.mjs';

/** Where the generated types go, relative to the repository. */
export const TYPES_FILE = 'src/client/openapi-types.gen.ts';

/** The TypeScript source openapi-typescript makes of `document`. */
export async function clientTypes(document) {
  const ast = await openapiTS(document, { silent: true });
  const note = `// Generated from ${DOCUMENT_FILE} by scripts/client-types.mjs (run by npm run build and npm run typecheck).\n\n`;
  return `${COMMENT_HEADER}${note}${astToString(ast)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const target = join(root, TYPES_FILE);
  const types = await clientTypes(JSON.parse(readFileSync(join(root, DOCUMENT_FILE), 'utf8')));
  // Rewritten only when it changes, so tsc and watchers see an unchanged file as unchanged.
  if (!existsSync(target) || readFileSync(target, 'utf8') !== types) writeFileSync(target, types);
}
