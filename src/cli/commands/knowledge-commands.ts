import type { Command } from 'commander';
import { CairnError } from '../../errors.js';
import { toKnowledgeWire } from '../../http/knowledge-routes.js';
import type { SyncReport } from '../../knowledge/registry.js';
import { print, scopeOf, withCairn, type ScopeOptions } from '../context.js';
import { ProgressBar } from '../progress.js';

/** `cairn knowledge add wiki|code DIR`: registers and indexes a folder; a first index that fails registers nothing. */
export async function addKnowledgeCommand(type: 'wiki' | 'code', dir: string, opts: ScopeOptions & { name?: string; json?: boolean }, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const scope = scopeOf(opts);
    const added = await cairn.knowledge.add(scope, { type, path: dir, name: opts.name }, 'operator');
    const { resource, lastSync } = await cairn.knowledge.whenIdle(scope, added.id, indexingBar());
    if (resource.status === 'error') {
      // The first index failed: nothing usable was registered, so nothing stays registered.
      await cairn.knowledge.remove(scope, added.id);
      throw new CairnError('invalid_input', `cannot index ${resource.root}: ${resource.error ?? 'unknown error'}`);
    }
    if (lastSync && lastSync.reindexed.length + lastSync.unchanged === 0) {
      // An empty index is almost always a folder whose files the ignore rules hide: say which, keep nothing.
      await cairn.knowledge.remove(scope, added.id);
      const kind = type === 'code' ? 'TypeScript or JavaScript files' : 'files';
      const hint = lastSync.ignored.length > 0 ? ' (a `!dir/` line in a .gitignore re-includes a folder the defaults ignore)' : '';
      throw new CairnError(
        'invalid_input',
        `nothing to index in ${resource.root}: no ${kind}${leftOut(lastSync) ? `; left out: ${leftOut(lastSync)}` : ''}${hint}; nothing was registered`,
      );
    }
    if (opts.json) return print(JSON.stringify(toKnowledgeWire(resource), null, 2));
    print(`${resource.id}  ${resource.type}  ${resource.name}  ${resource.status} (${lastSync?.reindexed.length ?? 0} file(s) in ${lastSync?.durationMs ?? 0} ms)`);
    print(`  ${resource.summary}`);
    if (lastSync && leftOut(lastSync)) print(`  left out: ${leftOut(lastSync)}`);
  });
}

/** What a sync did not index and why: too large, binary, ignored (by which rules), other kinds of file. */
function leftOut(report: SyncReport): string {
  const few = (paths: string[]) => `${paths.slice(0, 3).join(', ')}${paths.length > 3 ? `, … ${paths.length - 3} more` : ''}`;
  const parts: string[] = [];
  if (report.skipped.length > 0) parts.push(`${report.skipped.length} file(s) over knowledge.max_file_bytes (${few(report.skipped)})`);
  const binary = report.binary.filter((p) => !report.reindexed.includes(p));
  if (binary.length > 0) parts.push(`${binary.length} binary file(s) (${few(binary)})`);
  if (report.ignored.length > 0) {
    const by = report.ignored.map((i) => `${i.path} by ${i.rule === 'default' ? 'the default rules' : i.rule}`);
    parts.push(`${report.ignored.length} ignored (${few(by)})`);
  }
  if (report.otherFiles > 0) parts.push(`${report.otherFiles} file(s) not TypeScript or JavaScript`);
  return parts.join('; ');
}

/** `cairn knowledge list`. */
export async function listKnowledgeCommand(opts: ScopeOptions & { json?: boolean }, cmd: Command): Promise<void> {
  await withCairn(
    cmd,
    async (cairn) => {
      const resources = await cairn.knowledge.list(scopeOf(opts));
      if (opts.json) return print(JSON.stringify(resources.map(toKnowledgeWire), null, 2));
      if (resources.length === 0) return print('No knowledge resources (add one with: cairn knowledge add wiki|code DIR).');
      for (const r of resources) {
        print(`${r.id}  ${r.type.padEnd(4)}  ${r.status.padEnd(8)}  ${r.name}  ${r.root}${r.error ? `  (${r.error})` : ''}`);
        if (r.summary) print(`  ${r.summary}`);
      }
    },
    { readOnly: true },
  );
}

/** `cairn knowledge sync ID`: re-indexes the files whose content changed. */
export async function syncKnowledgeCommand(id: string, opts: ScopeOptions, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const scope = scopeOf(opts);
    await cairn.knowledge.sync(scope, id);
    const { resource, lastSync } = await cairn.knowledge.whenIdle(scope, id, indexingBar());
    if (resource.status === 'error') throw new CairnError('unavailable', `sync of ${id} failed: ${resource.error ?? 'unknown error'}`);
    const r = lastSync!;
    print(`${id}: ${r.reindexed.length} re-indexed, ${r.removed.length} removed, ${r.unchanged} unchanged (${r.durationMs} ms)`);
    if (leftOut(r)) print(`  left out: ${leftOut(r)}`);
  });
}

/** `cairn knowledge remove ID`: drops the index; the folder is not touched. */
export async function removeKnowledgeCommand(id: string, opts: ScopeOptions, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    await cairn.knowledge.remove(scopeOf(opts), id);
    print(`removed ${id}`);
  });
}

/** Progress of an index job on stderr: one bar per pass (a code graph may re-resolve a few files after the first). */
function indexingBar(): (progress: { done: number; total: number }) => void {
  let bar: ProgressBar | null = null;
  let total = -1;
  return (p) => {
    if (p.total !== total) {
      total = p.total;
      bar = new ProgressBar('indexing', p.total, process.stderr, 1);
    }
    bar!.update(p.done);
  };
}
