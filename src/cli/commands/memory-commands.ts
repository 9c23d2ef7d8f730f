import type { Command } from 'commander';
import { CairnError } from '../../errors.js';
import type { MemoryType } from '../../types.js';
import { print, scopeOf, withCairn, type ScopeOptions } from '../context.js';

type ListMemoriesOptions = ScopeOptions & {
  type?: MemoryType;
  scene?: string;
  limit: number;
  offset: number;
  includeSuperseded?: boolean;
  json?: boolean;
};

/** `cairn remember TEXT --type T`. */
export async function rememberCommand(text: string, opts: ScopeOptions & { type: MemoryType; priority?: number; scene?: string }, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const memory = await cairn.remember(scopeOf(opts), { content: text, type: opts.type, priority: opts.priority, sceneName: opts.scene });
    print(`${memory.id} (version ${memory.version})`);
  });
}

/** `cairn memories list`. */
export async function listMemoriesCommand(opts: ListMemoriesOptions, cmd: Command): Promise<void> {
  await withCairn(
    cmd,
    async (cairn) => {
      const list = await cairn.listMemories(scopeOf(opts), {
        type: opts.type,
        scene: opts.scene,
        limit: opts.limit,
        offset: opts.offset,
        includeSuperseded: opts.includeSuperseded,
      });
      if (opts.json) return print(JSON.stringify(list, null, 2));
      if (list.length === 0) return print('No memories.');
      for (const m of list) {
        const superseded = m.supersededBy ? `  (superseded by ${m.supersededBy})` : '';
        print(`${m.id}  [${m.type}] p=${m.priority}${m.sceneName ? ` scene=${m.sceneName}` : ''} v${m.version}  ${m.content}${superseded}`);
      }
    },
    { readOnly: true },
  );
}

/** `cairn memories delete ID`. */
export async function deleteMemoryCommand(id: string, opts: ScopeOptions, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    if (!(await cairn.deleteMemory(scopeOf(opts), id))) throw new CairnError('not_found', `memory ${id} not found`);
    print(`deleted ${id}`);
  });
}

/** `cairn memories why ID`: the source messages, the extractor and the audit trail. */
export async function whyMemoryCommand(id: string, opts: ScopeOptions & { json?: boolean }, cmd: Command): Promise<void> {
  await withCairn(
    cmd,
    async (cairn) => {
      const sources = await cairn.pipeline.memorySources(scopeOf(opts), id);
      if (opts.json) return print(JSON.stringify(sources, null, 2));
      const m = sources.memory;
      print(`${m.id}  [${m.type}] p=${m.priority} v${m.version}  ${m.content}`);
      print(`extractor: ${sources.extractor}${m.supersededBy ? `; superseded by ${m.supersededBy} (undo: cairn memories undo ${m.id})` : ''}`);
      print(sources.messages.length > 0 || sources.missingMessageIds.length > 0 ? 'sources:' : 'sources: none (written directly)');
      for (const msg of sources.messages) print(`  ${msg.id}  [${msg.role}] ${msg.sessionKey} ${msg.timestamp ?? msg.recordedAt}  ${msg.content}`);
      for (const missing of sources.missingMessageIds) print(`  ${missing}  (message deleted)`);
      print('history:');
      for (const h of sources.history) {
        const versions = h.oldVersion !== null || h.newVersion !== null ? ` v${h.oldVersion ?? '-'}→v${h.newVersion ?? '-'}` : '';
        print(`  ${h.at}  ${h.action}${versions} by ${h.actor}${h.relatedId ? ` (${h.relatedId})` : ''}`);
      }
    },
    { readOnly: true },
  );
}

/** `cairn memories undo ID`. */
export async function undoMemoryCommand(id: string, opts: ScopeOptions, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const restored = await cairn.pipeline.undoSupersession(scopeOf(opts), id, 'cli');
    for (const m of restored) print(`restored ${m.id}  ${m.content}`);
  });
}

/** `cairn flush [--session KEY]`: extraction now. */
export async function flushCommand(opts: ScopeOptions & { session?: string }, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const run = opts.session === undefined ? await cairn.pipeline.flushAll() : await cairn.pipeline.flush(scopeOf(opts), opts.session);
    const { extractor } = await cairn.pipeline.status();
    print(
      `extracted ${run.messages} message(s) in ${run.batches} batch(es) with ${extractor}: ` +
        `${run.created} memory(ies) stored, ${run.skipped} skipped as duplicates, ${run.superseded} superseded`,
    );
  });
}
