import { createHash } from 'node:crypto';
import type { Command } from 'commander';
import { z } from 'zod';
import type { Cairn } from '../../cairn.js';
import { MESSAGE_ROLES, type NewMessage } from '../../types.js';
import { badLines, explainOf, print, withCairn } from '../context.js';
import { isExportFile, restoreData } from './data-commands.js';
import { readJsonl } from '../jsonl.js';
import { ProgressBar } from '../progress.js';

/** One line of an import file (seed wire names). */
const importLine = z
  .object({
    id: z.string().min(1).optional(),
    session_key: z.string().min(1),
    role: z.enum(MESSAGE_ROLES),
    content: z.string().min(1),
    name: z.string().min(1).nullish(),
    timestamp: z.string().nullish(),
    user_id: z.string().min(1).optional(),
    agent_id: z.string().min(1).optional(),
  })
  .strict();

/** `cairn import FILE`: every line is validated first; one bad line imports nothing. */
export async function importCommand(file: string, _opts: unknown, cmd: Command): Promise<void> {
  if (await isExportFile(file)) return restoreData(explainOf(cmd).config, file);
  await withCairn(cmd, (cairn) => importFile(cairn, file));
}

async function importFile(cairn: Cairn, file: string): Promise<void> {
  const { values, errors } = await readJsonl(file, importLine);
  if (errors.length > 0) throw badLines(file, errors, 'nothing was imported');
  const occurrences = new Map<string, number>();
  const messages: NewMessage[] = values.map(({ value: v }) => ({
    id: v.id ?? derivedId(v, occurrences),
    scope: { userId: v.user_id ?? 'default', agentId: v.agent_id ?? 'default' },
    sessionKey: v.session_key,
    role: v.role,
    content: v.content,
    name: v.name ?? null,
    timestamp: v.timestamp ?? null,
  }));
  const bar = new ProgressBar('importing', messages.length);
  const result = await cairn.recordMessages(messages, { onProgress: (done) => bar.update(done), commitEvery: IMPORT_CHUNK });
  print(`imported ${result.inserted} message(s) from ${file}; ${result.skipped} already present`);
  await waitForEmbeddings(cairn);
}

/**
 * A line without an id gets one derived from its content and its occurrence in the file, so importing
 * the same file twice writes nothing new.
 */
function derivedId(v: z.infer<typeof importLine>, occurrences: Map<string, number>): string {
  const key = [v.user_id ?? '', v.agent_id ?? '', v.session_key, v.role, v.content, v.timestamp ?? ''].join('\u0000');
  const n = (occurrences.get(key) ?? 0) + 1;
  occurrences.set(key, n);
  return `msg_${createHash('sha256').update(`${key}\u0000${n}`).digest('hex').slice(0, 24)}`;
}

async function waitForEmbeddings(cairn: Cairn): Promise<void> {
  const status = await cairn.health.embeddingStatus();
  if (!status.vectorSearch || status.pending === 0) return;
  const bar = new ProgressBar('embedding', status.pending);
  const timer = setInterval(() => {
    void cairn.health.embeddingStatus().then((s) => bar.update(status.pending - s.pending));
  }, 250);
  const done = await cairn.drainEmbeddings(10 * 60_000);
  clearInterval(timer);
  const after = await cairn.health.embeddingStatus();
  bar.update(status.pending - after.pending);
  if (!done || after.pending > 0) {
    cairn.log.warn(`${after.pending} message(s) still without vectors (${after.lastError ?? 'timed out'}); they are embedded the next time Cairn runs`);
  }
}

/**
 * Messages per import transaction: a server on the same data directory gets the write lock between two
 * chunks, and an interrupted import leaves whole chunks that a re-run skips (every line has a stable id).
 */
export const IMPORT_CHUNK = 1_000;
