import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { z } from 'zod';
import { CairnError, describeError, isCairnError } from '../errors.js';
import type { KnowledgeResourceRecord, KnowledgeStore, KnowledgeType } from '../store/store.js';
import { CodeGraph, isCodePath, type CodeFileData } from './code-graph.js';
import { FolderWatcher } from './folder-watcher.js';
import { IndexRunner } from './index-runner.js';
import type { IndexJobResult, IndexProgress } from './indexer.js';
import { skipsDirectory, type IgnoredEntry } from './scan-folder.js';
import { notReadyAnswer, paramsJsonSchema, toolsOf, type KnowledgeTool } from './tools.js';
import { WikiIndex, type WikiFileData } from './wiki.js';

/** How often a watching registry looks for resources added or removed by another process (the CLI). */
const RESOURCE_POLL_MS = 5_000;

/** `wiki-` or `cg-` and eight hex digits. */
export const KNOWLEDGE_ID_PATTERN = /^(wiki|cg)-[0-9a-f]{8}$/;

/** What `add` takes (the wire body of `POST /v1/knowledge` and the CLI's arguments). */
export const newKnowledgeSchema = z.strictObject({
  type: z.enum(['wiki', 'code']).describe('`wiki`: a folder of Markdown files; `code`: a TypeScript/JavaScript source folder.'),
  path: z.string().trim().min(1).max(4096).describe('The folder to index (absolute, or relative to the working directory).'),
  name: z.string().trim().min(1).max(200).optional().describe('Display name; default the folder name.'),
});
export type NewKnowledge = z.input<typeof newKnowledgeSchema>;

/** A resource as surfaces show it: the stored row plus what this process knows about a running sync. */
export type KnowledgeResource = Omit<KnowledgeResourceRecord, 'version'> & {
  /** A sync is running in this process (a ready resource keeps answering from its last index meanwhile). */
  syncing: boolean;
  progress: IndexProgress | null;
};

/** What one sync did. */
export type SyncReport = {
  at: string;
  /** Files parsed again (content hash changed, new, or references to re-resolve). */
  reindexed: string[];
  removed: string[];
  unchanged: number;
  /** Files over the size limit. */
  skipped: string[];
  /** Files that are not text (a code graph leaves them out; a wiki keeps them as raw files). */
  binary: string[];
  /** Entries the ignore rules left out (defaults and `.gitignore`; a directory counts once). */
  ignored: IgnoredEntry[];
  /** Files of a kind the resource does not index. */
  otherFiles: number;
  durationMs: number;
  error: string | null;
};

/** A knowledge tool as a deferred tool of the tool hub's catalog: `source` is the resource id, so its name is `<resource id>__<tool>`. */
export type KnowledgeCatalogTool = { source: string; toolName: string; description: string; inputSchema: Record<string, unknown> };

/** A tool result in MCP form (what the tool hub returns for a catalog tool). */
export type KnowledgeToolResult = { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown>; isError?: boolean };

export type KnowledgeRegistryOptions = {
  warn: (message: string) => void;
  /** Milliseconds of quiet after a file change before the resource re-syncs. */
  debounceMs: number;
  /** Files larger than this many bytes are left out. */
  maxFileBytes: number;
  /** Folders with more indexable files than this are refused. */
  maxFiles: number;
};

type Index = WikiIndex | CodeGraph;

/**
 * Knowledge resources (DESIGN.md, "Knowledge resources"): wiki folders and code graphs registered in the
 * store, indexed in the background (a worker thread) and re-synced incrementally by content hash, on
 * demand or when files change while serving. Tools answer from an in-memory index loaded from the store;
 * a resource being re-synced keeps answering from its last complete index.
 */
export class KnowledgeRegistry {
  /** Index jobs run in a worker thread when the built worker exists, else inline. */
  private readonly runner = new IndexRunner();
  private readonly loaded = new Map<string, { version: number; index: Promise<Index> }>();
  private readonly jobs = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly progress = new Map<string, IndexProgress>();
  private readonly listeners = new Map<string, Set<(progress: IndexProgress) => void>>();
  private readonly reports = new Map<string, SyncReport>();
  private readonly watchers = new Map<string, FolderWatcher>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private catalog: readonly KnowledgeCatalogTool[] = [];
  private readonly catalogListeners = new Set<() => void>();
  private poller: NodeJS.Timeout | null = null;
  private watching = false;
  private closed = false;

  constructor(
    private readonly store: KnowledgeStore,
    private readonly options: KnowledgeRegistryOptions,
  ) {
    void this.refreshCatalog();
  }

  /** Registers a folder and starts indexing it in the background; returns at once with status `indexing`. */
  async add(input: NewKnowledge): Promise<KnowledgeResource> {
    const valid = parse(newKnowledgeSchema, input, 'knowledge resource');
    const root = resolve(valid.path);
    let isDirectory = false;
    try {
      isDirectory = (await stat(root)).isDirectory();
    } catch (err) {
      throw new CairnError('invalid_input', `cannot read ${root}: ${describeError(err)}`);
    }
    if (!isDirectory) throw new CairnError('invalid_input', `${root} is not a directory`);
    const existing = (await this.store.listKnowledgeResources()).find((r) => r.type === valid.type && r.root === root);
    if (existing) throw new CairnError('conflict', `${root} is already registered as ${existing.id}`);
    const id = `${valid.type === 'wiki' ? 'wiki' : 'cg'}-${randomBytes(4).toString('hex')}`;
    const record = await this.store.createKnowledgeResource({ id, type: valid.type, name: valid.name ?? basename(root), root });
    void this.schedule(id);
    if (this.watching) this.watchResource(record);
    await this.refreshCatalog();
    return this.view(record);
  }

  /** Every resource, oldest first. */
  async list(): Promise<KnowledgeResource[]> {
    return (await this.store.listKnowledgeResources()).map((r) => this.view(r));
  }

  /** One resource; `invalid_input` for a malformed id, `not_found` for an unknown one. */
  async get(id: unknown): Promise<KnowledgeResource> {
    return this.view(await this.record(id));
  }

  /** Unregisters a resource and drops its index (the folder is not touched). */
  async remove(id: unknown): Promise<void> {
    const record = await this.record(id);
    this.unwatch(record.id);
    await this.store.deleteKnowledgeResource(record.id);
    this.loaded.delete(record.id);
    this.reports.delete(record.id);
    await this.refreshCatalog();
  }

  /** Starts a re-sync (or queues one behind a running sync); returns at once. */
  async sync(id: unknown): Promise<KnowledgeResource> {
    const record = await this.record(id);
    void this.schedule(record.id);
    return this.view(record);
  }

  /** Waits until no sync of the resource is running or queued; `onProgress` sees each file indexed meanwhile. */
  async whenIdle(id: unknown, onProgress?: (progress: IndexProgress) => void): Promise<{ resource: KnowledgeResource; lastSync: SyncReport | null }> {
    const record = await this.record(id);
    const listeners = this.listeners.get(record.id) ?? new Set();
    this.listeners.set(record.id, listeners);
    if (onProgress) listeners.add(onProgress);
    try {
      for (let job = this.jobs.get(record.id); job; job = this.jobs.get(record.id)) await job;
    } finally {
      if (onProgress) listeners.delete(onProgress);
    }
    return { resource: await this.get(record.id), lastSync: this.reports.get(record.id) ?? null };
  }

  /**
   * Runs one tool of a resource. Bad input is `invalid_input` naming the parameter, an unknown resource or
   * tool `not_found`; a resource that is not ready answers with its status instead of results.
   */
  async callTool(id: unknown, toolName: unknown, params: unknown): Promise<unknown> {
    const record = await this.record(id);
    if (typeof toolName !== 'string' || toolName.trim() === '') throw new CairnError('invalid_input', 'tool_name is required');
    const tool = toolsOf(record.type).find((t) => t.name === toolName);
    if (!tool) {
      throw new CairnError(
        'not_found',
        `unknown tool '${toolName}' for ${record.type === 'wiki' ? 'wiki' : 'code graph'} resource ${record.id}; call /v3/tools/list with {"knowledge_id": "${record.id}"} first to see its tools`,
      );
    }
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      throw new CairnError('invalid_input', 'params must be an object ({} when the tool takes none)');
    }
    const valid = parse(tool.params, params ?? {}, 'params') as Record<string, unknown>;
    const resource = this.view(record);
    const ready = record.status === 'ready';
    if (!ready && !tool.anyStatus) return notReadyAnswer(resource);
    const index = ready || record.version > 0 ? await this.load(record) : null;
    return (tool as KnowledgeTool<Index>).run({ resource, index, lastSync: this.reports.get(record.id) ?? null }, valid);
  }

  // ---- the tool hub's catalog provider -------------------------------------------------------

  /** Every tool of every resource, as deferred catalog tools (`<resource id>__<tool>`) that `tool_search` finds. */
  catalogTools(): readonly KnowledgeCatalogTool[] {
    return this.catalog;
  }

  /** Calls `listener` when resources are added, removed or re-summarised; returns the unsubscribe function. */
  onCatalogChange(listener: () => void): () => void {
    this.catalogListeners.add(listener);
    return () => this.catalogListeners.delete(listener);
  }

  /** Runs a catalog tool (the hub has validated the arguments against its schema); Cairn errors become error results. */
  async callCatalogTool(source: string, toolName: string, args: Record<string, unknown>): Promise<KnowledgeToolResult> {
    try {
      const data = (await this.callTool(source, toolName, args)) as Record<string, unknown>;
      return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
    } catch (err) {
      // The code rides along so `/v3/tools/call` answers with the status it stands for (400, 404), not 502.
      if (isCairnError(err) && err.code !== 'internal') {
        return { content: [{ type: 'text', text: err.message }], structuredContent: { error: { code: err.code, message: err.message } }, isError: true };
      }
      throw err;
    }
  }

  /** Rebuilds the catalog from the stored resources; listeners hear of it when it changed. */
  private async refreshCatalog(): Promise<void> {
    let resources: KnowledgeResourceRecord[];
    try {
      resources = await this.store.listKnowledgeResources();
    } catch (err) {
      if (!this.closed) this.options.warn(`knowledge: cannot list resources: ${describeError(err)}`);
      return;
    }
    const next = resources.flatMap((r) =>
      toolsOf(r.type).map((t) => ({
        source: r.id,
        toolName: t.name,
        description: `${t.description} Resource: ${r.type === 'wiki' ? 'wiki' : 'code graph'} '${r.name}' (${r.id})${r.summary ? `: ${clip(r.summary, 160)}` : ''}.`,
        inputSchema: paramsJsonSchema(t),
      })),
    );
    const key = (list: readonly KnowledgeCatalogTool[]) => list.map((t) => `${t.source}__${t.toolName}\u0000${t.description}`).join('\n');
    if (key(next) === key(this.catalog)) return;
    this.catalog = next;
    for (const listener of this.catalogListeners) {
      try {
        listener();
      } catch (err) {
        this.options.warn(`knowledge: catalog listener failed: ${describeError(err)}`);
      }
    }
  }

  // ---- watching ----------------------------------------------------------------------------

  /**
   * Watches every resource's folder and re-syncs after changes (debounced), catching up on changes made
   * while not watching; picks up resources another process (the CLI) adds or removes meanwhile.
   */
  watch(): void {
    if (this.watching || this.closed) return;
    this.watching = true;
    void this.store.listKnowledgeResources().then(
      (records) => {
        for (const record of records) {
          if (this.closed) return;
          this.watchResource(record);
          void this.schedule(record.id);
        }
      },
      (err: unknown) => this.options.warn(`knowledge: cannot list resources to watch: ${describeError(err)}`),
    );
    this.poller = setInterval(() => void this.pollResources(), RESOURCE_POLL_MS).unref();
  }

  private async pollResources(): Promise<void> {
    if (this.closed) return;
    const records = await this.store.listKnowledgeResources().catch(() => null);
    if (!records || this.closed) return;
    const ids = new Set(records.map((r) => r.id));
    for (const record of records) {
      // A folder that vanished and came back is watched again, and re-synced.
      const revived = this.watchers.has(record.id) && !this.watchers.get(record.id)!.alive;
      this.watchResource(record);
      if (revived) void this.schedule(record.id);
    }
    for (const id of this.watchers.keys()) if (!ids.has(id)) this.unwatch(id);
    await this.refreshCatalog();
  }

  /** Stops watching and indexing; waits for a sync that is writing its result. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.poller) clearInterval(this.poller);
    this.catalogListeners.clear();
    for (const id of [...this.watchers.keys(), ...this.timers.keys()]) this.unwatch(id);
    await this.runner.close();
    await Promise.allSettled([...this.jobs.values()]);
  }

  // ---- syncing -----------------------------------------------------------------------------

  private schedule(id: string): Promise<void> {
    const running = this.jobs.get(id);
    if (running) {
      this.again.add(id);
      return running;
    }
    if (this.closed) return Promise.resolve();
    const job = this.runSync(id).finally(() => {
      this.jobs.delete(id);
      this.progress.delete(id);
      if (this.again.delete(id) && !this.closed) void this.schedule(id);
    });
    this.jobs.set(id, job);
    return job;
  }

  /** One sync: index what changed, store it, reload; for a code graph, re-resolve files whose references broke. */
  private async runSync(id: string): Promise<void> {
    const started = performance.now();
    const record = await this.store.getKnowledgeResource(id);
    if (!record) return;
    const report: SyncReport = { at: new Date().toISOString(), reindexed: [], removed: [], unchanged: 0, skipped: [], binary: [], ignored: [], otherFiles: 0, durationMs: 0, error: null };
    try {
      let result = await this.index(record, []);
      let applied = await this.apply(record, result, report, 'first');
      if (!applied) return;
      let index = await this.load(applied);
      if (index instanceof CodeGraph) {
        const reindexed = new Set(report.reindexed);
        const stale = new Set(index.danglingFiles());
        if (result.added.length > 0) for (const f of index.unresolvedImporters()) stale.add(f);
        const force = [...stale].filter((f) => !reindexed.has(f));
        if (force.length > 0) {
          result = await this.index(applied, force);
          applied = await this.apply(applied, result, report, 'refresh');
          if (!applied) return;
          index = await this.load(applied);
        }
      }
      await this.store.updateKnowledgeResource(id, { status: 'ready', error: null, stats: index.stats(), summary: index.summary(), syncedAt: new Date().toISOString() });
    } catch (err) {
      if (this.closed) return;
      report.error = describeError(err);
      this.options.warn(`knowledge ${id}: sync failed: ${report.error}`);
      await this.store.updateKnowledgeResource(id, { status: 'error', error: report.error });
    } finally {
      report.durationMs = Math.round(performance.now() - started);
      if (!this.closed) this.reports.set(id, report);
    }
    // The catalog's descriptions carry the summary, which changes with the index.
    if (!this.closed) await this.refreshCatalog();
  }

  private async index(record: KnowledgeResourceRecord, force: readonly string[]): Promise<IndexJobResult> {
    const known = Object.fromEntries((await this.store.listKnowledgeFiles(record.id, { withData: false })).map((f) => [f.path, f.hash]));
    const onProgress = (p: IndexProgress) => {
      this.progress.set(record.id, p);
      for (const listener of this.listeners.get(record.id) ?? []) listener(p);
    };
    return this.runner.run(
      { type: record.type, root: record.root, known, force, maxFileBytes: this.options.maxFileBytes, maxFiles: this.options.maxFiles },
      onProgress,
    );
  }

  private async apply(record: KnowledgeResourceRecord, result: IndexJobResult, report: SyncReport, pass: 'first' | 'refresh'): Promise<KnowledgeResourceRecord | null> {
    const fresh = result.upserts.map((u) => u.path).filter((p) => !report.reindexed.includes(p));
    report.reindexed.push(...fresh);
    report.removed.push(...result.deletes);
    report.unchanged = pass === 'first' ? result.unchanged : report.unchanged - fresh.length;
    report.skipped = result.skipped;
    report.binary = result.binary;
    report.ignored = result.ignored;
    report.otherFiles = result.otherFiles;
    return this.store.applyKnowledgeSync(record.id, { upserts: result.upserts, deletes: result.deletes, patch: {} });
  }

  /** The in-memory index of a resource at its stored version (loaded once per version, shared by concurrent calls). */
  private load(record: KnowledgeResourceRecord): Promise<Index> {
    const cached = this.loaded.get(record.id);
    if (cached && cached.version === record.version) return cached.index;
    const index = this.store.listKnowledgeFiles(record.id).then((files) =>
      record.type === 'wiki'
        ? new WikiIndex(files.map((f) => ({ path: f.path, size: f.size, mtimeMs: f.mtimeMs, data: JSON.parse(f.data) as WikiFileData })))
        : new CodeGraph(files.map((f) => ({ path: f.path, size: f.size, mtimeMs: f.mtimeMs, data: JSON.parse(f.data) as CodeFileData }))),
    );
    this.loaded.set(record.id, { version: record.version, index });
    index.catch(() => {
      if (this.loaded.get(record.id)?.index === index) this.loaded.delete(record.id);
    });
    return index;
  }

  // ---- watching ----------------------------------------------------------------------------

  private watchResource(record: KnowledgeResourceRecord): void {
    if (this.watchers.get(record.id)?.alive) return;
    this.watchers.get(record.id)?.close();
    const watcher = new FolderWatcher(record.root, {
      skipDir: skipsDirectory(record.type),
      onChange: (path) => {
        if (!this.relevant(record.type, path)) return;
        clearTimeout(this.timers.get(record.id));
        const timer = setTimeout(() => {
          this.timers.delete(record.id);
          void this.schedule(record.id);
        }, this.options.debounceMs);
        this.timers.set(record.id, timer.unref());
      },
      onError: (message) => this.options.warn(`knowledge ${record.id}: ${message}`),
    });
    this.watchers.set(record.id, watcher);
    void watcher.start();
  }

  /** Whether a changed path can change the index (hidden files and skipped folders cannot). */
  private relevant(type: KnowledgeType, path: string): boolean {
    const parts = path.split('/');
    // A changed .gitignore changes what is indexed.
    if (parts[parts.length - 1] === '.gitignore') return true;
    if (parts.some(skipsDirectory(type))) return false;
    const last = parts[parts.length - 1]!;
    // A name without an extension may be a folder that was renamed or removed.
    return type === 'wiki' || isCodePath(last) || !last.includes('.');
  }

  private unwatch(id: string): void {
    this.watchers.get(id)?.close();
    this.watchers.delete(id);
    clearTimeout(this.timers.get(id));
    this.timers.delete(id);
  }

  // ---- helpers -----------------------------------------------------------------------------

  private async record(id: unknown): Promise<KnowledgeResourceRecord> {
    if (id === undefined || id === null || id === '') throw new CairnError('invalid_input', 'knowledge_id is required');
    if (typeof id !== 'string' || !KNOWLEDGE_ID_PATTERN.test(id)) {
      throw new CairnError('invalid_input', `invalid knowledge_id format: ${JSON.stringify(id)} (expected wiki-xxxxxxxx or cg-xxxxxxxx)`);
    }
    const record = await this.store.getKnowledgeResource(id);
    if (!record) throw new CairnError('not_found', `knowledge resource ${id} not found`);
    return record;
  }

  private view(record: KnowledgeResourceRecord): KnowledgeResource {
    const { version: _version, ...rest } = record;
    return { ...rest, syncing: this.jobs.has(record.id), progress: this.progress.get(record.id) ?? null };
  }
}

function parse<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') throw new CairnError('invalid_input', `invalid ${what}: unknown parameter ${issue.keys.map((k) => `'${k}'`).join(', ')}`);
  const at = issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
  throw new CairnError('invalid_input', `invalid ${what}${at}: ${issue.message}`);
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
