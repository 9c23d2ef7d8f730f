import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientTypes, TYPES_FILE } from '../scripts/client-types.mjs';
import { DOCUMENT_FILE, documentText, servedDocument } from '../scripts/openapi.mjs';
import * as cairn from '../src/index.js';

const committed = (file: string) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

// The committed openapi.json is what GET /openapi.json serves (less `servers`), and the client's types are
// generated from it at build time: making the document again from the routes in src/ must give the committed
// file byte for byte.
describe('openapi.json', () => {
  it('is what `npm run openapi` makes of the current routes', async () => {
    const fresh = documentText(await servedDocument(cairn));
    expect(committed(DOCUMENT_FILE) === fresh, `${DOCUMENT_FILE} is stale: a route or its schema changed; run npm run openapi`).toBe(true);
  });
});

describe(TYPES_FILE, () => {
  it('holds every path and operation of openapi.json', async () => {
    const document = JSON.parse(committed(DOCUMENT_FILE)) as { paths: Record<string, Record<string, { operationId: string }>> };
    const types = await clientTypes(document);
    for (const [path, operations] of Object.entries(document.paths)) {
      expect(types).toContain(`"${path}": {`);
      for (const { operationId } of Object.values(operations)) expect(types).toContain(`    ${operationId}: {`);
    }
  });

  it('changes when a route does', async () => {
    const document = await servedDocument(cairn);
    const before = await clientTypes(document);
    const paths = document.paths as Record<string, Record<string, { summary: string; operationId: string }>>;
    paths['/v1/memories/{id}']!.get!.summary = 'Renamed';
    paths['/v1/extra'] = { get: { ...paths['/health']!.get!, operationId: 'getExtra' } };
    const after = await clientTypes(document);
    expect(after).not.toBe(before);
    expect(after).toContain('"/v1/extra"');
    expect(after).toContain('Renamed');
  });
});
