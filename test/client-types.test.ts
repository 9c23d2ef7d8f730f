import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clientTypes, servedDocument, TYPES_FILE } from '../scripts/client-types.mjs';
import * as cairn from '../src/index.js';

// The client's types are generated from /openapi.json, which is generated from the routes: regenerating
// them from the routes in src/ must give the committed file byte for byte.
describe('src/client/openapi-types.ts', () => {
  it('is what `npm run client:types` makes of the current routes', async () => {
    const document = await servedDocument(cairn);
    const committed = readFileSync(new URL(`../${TYPES_FILE}`, import.meta.url), 'utf8');
    const fresh = await clientTypes(document);
    expect(committed === fresh, `${TYPES_FILE} is stale: a route or its schema changed; run npm run client:types`).toBe(true);
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
