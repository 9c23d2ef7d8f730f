// Writes openapi.json, the REST API's OpenAPI 3.1 document, from the routes in src/ (`npm run openapi`, which
// then regenerates the client's types from it). test/client-types.test.ts makes the document again from the
// routes and fails when the committed file differs, so a route cannot change unnoticed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the document lives, relative to the repository. */
export const DOCUMENT_FILE = 'openapi.json';

/**
 * The OpenAPI document a Cairn serves at GET /openapi.json with its default routes, without `servers` (the URL
 * a request reached it at), from `cairn` — the package's entry module, `src/index.ts` (loaded by Vite here,
 * by Vitest in the test), so both read the same routes.
 */
export async function servedDocument(cairn) {
  const dataDir = mkdtempSync(join(tmpdir(), 'cairn-openapi-'));
  // Keyword search and no pipeline: nothing to load or download, and neither changes the routes.
  const config = cairn.parseConfig({ data_dir: dataDir, embedding: { provider: 'none' }, pipeline: { enabled: false }, log: { level: 'warn' } });
  const instance = await cairn.createCairn(config);
  try {
    const app = cairn.createHttpApp(instance, { log: () => {} });
    const { servers: _servers, ...document } = await (await app.request('http://localhost/openapi.json')).json();
    return document;
  } finally {
    await instance.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The text of {@link DOCUMENT_FILE} for `document`: JSON indented by two spaces, one newline at the end. */
export function documentText(document) {
  return `${JSON.stringify(document, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  // src/ through Vite's module runner (transpiled, not type-checked), not dist/: the build's client types come
  // from this file, so client code for a new route only compiles once the document has it.
  const { runnerImport } = await import('vite');
  const { module: cairn } = await runnerImport(join(root, 'src/index.ts'), { configFile: false, logLevel: 'error' });
  writeFileSync(join(root, DOCUMENT_FILE), documentText(await servedDocument(cairn)));
  console.log(`wrote ${DOCUMENT_FILE}`);
}
