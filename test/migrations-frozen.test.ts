import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS as POSTGRES_STEPS } from '../src/store/postgres/postgres-migrations.js';
import { MIGRATIONS as SQLITE_STEPS } from '../src/store/sqlite/sqlite-migrations.js';

// "Never edit a released step: add a new one" (sqlite-migrations.ts, postgres-migrations.ts). A database
// that ran a step never runs it again, so an edit would make new installs differ from old ones in silence.
// Each released step is pinned here by the SHA-256 of its SQL (its first 16 hex digits); a step that is a
// function is pinned by its name. A new step appends its line; a changed line is an edit of history.
const fingerprint = (step: string | ((...args: never[]) => unknown)): string =>
  typeof step === 'string' ? createHash('sha256').update(step).digest('hex').slice(0, 16) : `function ${step.name}`;

const SQLITE_RELEASED = [
  '7ff20e98975ac453',
  '4a2472ae1a111304',
  '92da3e223786e4c7',
  'c065d5d5954e00d3',
  '6d2d2b2d979fab41',
  'function rebuildMessageIndex',
  'ced1968f0e861066',
  'function widenMessageRoles',
  'function buildMessageTerms',
  'function addVectorSaveOrder',
  'function ownKnowledgeResources',
  'function keepAnalysedTerms',
  '7a3f1397c67f1f2c',
  '1bb4cb24d55c5bbb',
  'd60cf6c2e3a521a1',
  '3eab6318a90533ea',
];

const POSTGRES_RELEASED = [
  'core 8e13ca8762d528dc',
  'coordination 76327de770b941ea',
  'history 963ef300a91527e4',
  'knowledge ed879cde0b897ae8',
  'scope-statistics 403fe03310f92aff',
  'proxy_turns 24f359d1cbeba1fb',
];

describe('released schema steps', () => {
  it('are unchanged on SQLite, in their order', () => {
    expect(SQLITE_STEPS.map(fingerprint)).toEqual(SQLITE_RELEASED);
  });

  it('are unchanged on PostgreSQL, in their order and under their names', () => {
    expect(POSTGRES_STEPS.map((step) => `${step.name} ${fingerprint(step.up)}`)).toEqual(POSTGRES_RELEASED);
  });
});
