import { randomBytes } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { z } from 'zod';
import { CairnError, describeError, isCairnError } from '../errors.js';
import { parseInput } from '../parse-input.js';
import { errorResult, textResult, type ToolResult } from '../tool-result.js';
import { claimWhenFree, workNames } from '../store/coordination.js';
import type { KnowledgeResourceRecord, KnowledgeType, Store } from '../store/store.js';
import type { Scope } from '../types.js';
import { type AllowedRoot, type Grants, isUnder, outsideRoots, resolveGrants } from './allowed-roots.js';
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

/**
 * A knowledge tool as a deferred tool of the tool hub's catalog: `source` is the resource id, so its name
 * is `<resource id>__<tool>`; only callers of `owner`, the resource's scope, see it.
 */
export type KnowledgeCatalogTool = { source: string; toolName: string; description: string; inputSchema: Record<string, unknown>; owner: Scope };

/**
 * Who registers a folder. `operator` (the CLI, a library caller) may register any folder it can read;
 * `loopback` (REST in local mode, the user's own machine) too, unless `knowledge.roots` is set, which
 * then confines it; `tenant` (REST in keys mode) only folders under its `knowledge.roots` (none set: none).
 * Confined registrars never get a folder overlapping another scope's unless the roots share it.
 */
export type Registrar = 'operator' | 'loopback' | 'tenant';

export type KnowledgeRegistryOptions = {
  warn: (message: string) => void;
  /** Milliseconds of quiet after a file change before the resource re-syncs. */
  debounceMs: number;
  /** Files larger than this many bytes are left out. */
  maxFileBytes: number;
  /** Folders with more indexable files than this are refused. */
  maxFiles: number;
  /**
   * Absolute folders under which callers other than the operator may register resources, by tenant
   * (`knowledge.roots`: `*`, `user` or `user/agent` to folders).
   */
  roots?: Readonly<Record<string, readonly string[]>>;
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
  /** Aborted by close: a sync waiting for another process's claim on its resource stops waiting. */
  private readonly closing = new AbortController();
  /** Registrations run one at a time (across processes too, by a work claim), so two scopes cannot both pass the overlap check for one folder. */
  private adding: Promise<unknown> = Promise.resolve();

  constructor(
    /** The resources, and the claims that keep two processes from syncing one resource at once. */
    private readonly store: Pick<Store, 'knowledge' | 'coordination'>,
    private readonly options: KnowledgeRegistryOptions,
  ) {}

  /** Loads the stored resources' tools into the catalog in the background (the façade's `start()`); listeners hear when it is in. */
  start(): void {
    if (!this.closed) void this.refreshCatalog();
  }

  /**
   * Registers a folder for `scope` and starts indexing it in the background; returns at once with status
   * `indexing`. The folder is stored as its real path, and unless the registrar is the operator (see
   * {@link Registrar}) must lie under the scope's `knowledge.roots` and not overlap (be, hold or lie inside)
   * another scope's resource unless both scopes are mapped by name to a root holding both; refused with
   * `forbidden` otherwise.
   */
  add(scope: Scope, input: NewKnowledge, registrar: Registrar = 'operator'): Promise<KnowledgeResource> {
    const added = this.adding.then(() => this.addNow(scope, input, registrar));
    this.adding = added.catch(() => undefined);
    return added;
  }

  private async addNow(scope: Scope, input: NewKnowledge, registrar: Registrar): Promise<KnowledgeResource> {
    const valid = parseInput(newKnowledgeSchema, input, 'knowledge resource');
    const requested = resolve(valid.path);
    const grants = registrar === 'operator' ? null : await resolveGrants(this.options.roots, registrar);
    const roots = grants && grants.of(scope);
    // Lexical check first, so a caller confined to the roots learns nothing about folders outside them.
    if (roots && !roots.some((r) => isUnder(requested, r.given) || isUnder(requested, r.real))) throw outsideRoots(requested, roots);
    let root: string;
    try {
      root = await realpath(requested);
      if (!(await stat(root)).isDirectory()) throw new CairnError('invalid_input', `${requested} is not a directory`);
    } catch (err) {
      if (isCairnError(err)) throw err;
      throw new CairnError('invalid_input', `cannot read ${requested}: ${describeError(err)}`);
    }
    if (roots && !roots.some((r) => isUnder(root, r.real))) throw outsideRoots(root, roots);
    // Another process (a second server on the store) registering at once holds the claim until its insert.
    const claim = grants ? await claimWhenFree(this.store.coordination, workNames.knowledgeRegistration(), { signal: this.closing.signal }) : null;
    let record: KnowledgeResourceRecord;
    try {
      if (grants) await this.requireUnshared(scope, root, grants);
      const existing = (await this.store.knowledge.listKnowledgeResources(scope)).find((r) => r.type === valid.type && r.root === root);
      if (existing) throw new CairnError('conflict', `${root} is already registered as ${existing.id}`);
      const id = `${valid.type === 'wiki' ? 'wiki' : 'cg'}-${randomBytes(4).toString('hex')}`;
      record = await this.store.knowledge.createKnowledgeResource(scope, { id, type: valid.type, name: valid.name ?? basename(root), root });
    } finally {
      await claim?.release().catch((err: unknown) => this.options.warn(`knowledge: cannot release the registration claim: ${describeError(err)}`));
    }
    void this.schedule(record);
    if (this.watching) this.watchResource(record);
    await this.refreshCatalog();
    return this.view(record);
  }

  /** Every scope's resources, oldest first: for the operator's own work (restore), never a caller's request. */
  async listAll(): Promise<KnowledgeResource[]> {
    return (await this.store.knowledge.listAllKnowledgeResources()).map((r) => this.view(r));
  }

  /** The resources of `scope`, oldest first. */
  async list(scope: Scope): Promise<KnowledgeResource[]> {
    return (await this.store.knowledge.listKnowledgeResources(scope)).map((r) => this.view(r));
  }

  /** One resource of `scope`; `invalid_input` for a malformed id, `not_found` for an unknown one or another scope's. */
  async get(scope: Scope, id: string): Promise<KnowledgeResource> {
    return this.view(await this.record(scope, id));
  }

  /** Unregisters a resource of `scope` and drops its index (the folder is not touched). */
  async remove(scope: Scope, id: string): Promise<void> {
    const record = await this.record(scope, id);
    this.unwatch(record.id);
    if (!(await this.store.knowledge.deleteKnowledgeResource(scope, record.id))) throw new CairnError('not_found', `knowledge resource ${record.id} not found`);
    this.loaded.delete(record.id);
    this.reports.delete(record.id);
    await this.refreshCatalog();
  }

  /** Starts a re-sync of a resource of `scope` (or queues one behind a running sync); returns at once. */
  async sync(scope: Scope, id: string): Promise<KnowledgeResource> {
    const record = await this.record(scope, id);
    void this.schedule(record);
    return this.view(record);
  }

  /** Waits until no sync of the resource is running or queued; `onProgress` sees each file indexed meanwhile. */
  async whenIdle(scope: Scope, id: string, onProgress?: (progress: IndexProgress) => void): Promise<{ resource: KnowledgeResource; lastSync: SyncReport | null }> {
    const record = await this.record(scope, id);
    const listeners = this.listeners.get(record.id) ?? new Set();
    this.listeners.set(record.id, listeners);
    if (onProgress) listeners.add(onProgress);
    try {
      for (let job = this.jobs.get(record.id); job; job = this.jobs.get(record.id)) await job;
    } finally {
      if (onProgress) listeners.delete(onProgress);
    }
    return { resource: await this.get(scope, record.id), lastSync: this.reports.get(record.id) ?? null };
  }

  /**
   * Runs one tool of a resource of `scope`. Bad input is `invalid_input` naming the parameter, an unknown
   * resource (or another scope's) or tool `not_found`; a resource that is not ready answers with its status.
   */
  async callTool(scope: Scope, id: string, toolName: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const record = await this.record(scope, id);
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
    const valid = parseInput(tool.params, params ?? {}, 'params') as Record<string, unknown>;
    const resource = this.view(record);
    const ready = record.status === 'ready';
    if (!ready && !tool.anyStatus) return notReadyAnswer(resource);
    const index = ready || record.version > 0 ? await this.load(record) : null;
    return (tool as KnowledgeTool<Index>).run(
      { resource, folder: { root: record.root, maxFileBytes: this.options.maxFileBytes }, index, lastSync: this.reports.get(record.id) ?? null },
      valid,
    );
  }

  // ---- the tool hub's catalog provider -------------------------------------------------------

  /** Every tool of every resource, as deferred catalog tools (`<resource id>__<tool>`), each visible to its owner only. */
  catalogTools(): readonly KnowledgeCatalogTool[] {
    return this.catalog;
  }

  /** Calls `listener` when resources are added, removed or re-summarised; returns the unsubscribe function. */
  onCatalogChange(listener: () => void): () => void {
    this.catalogListeners.add(listener);
    return () => this.catalogListeners.delete(listener);
  }

  /** Runs a catalog tool for `scope` (the hub has validated the arguments against its schema); Cairn errors become error results. */
  async callCatalogTool(source: string, toolName: string, args: Record<string, unknown>, scope: Scope): Promise<ToolResult> {
    try {
      const data = (await this.callTool(scope, source, toolName, args)) as Record<string, unknown>;
      return textResult(JSON.stringify(data), data);
    } catch (err) {
      // The code rides along so `/v3/tools/call` answers with the status it stands for (400, 404), not 502.
      if (isCairnError(err) && err.code !== 'internal') {
        return errorResult(err.message, { error: { code: err.code, message: err.message } });
      }
      throw err;
    }
  }

  /** Rebuilds the catalog from the stored resources; listeners hear of it when it changed. */
  private async refreshCatalog(): Promise<void> {
    let resources: KnowledgeResourceRecord[];
    try {
      resources = await this.store.knowledge.listAllKnowledgeResources();
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
        owner: r.scope,
      })),
    );
    const key = (list: readonly KnowledgeCatalogTool[]) =>
      list.map((t) => `${t.source}__${t.toolName}\u0000${t.description}\u0000${t.owner.userId}\u0000${t.owner.agentId}`).join('\n');
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
    void this.store.knowledge.listAllKnowledgeResources().then(
      (records) => {
        for (const record of records) {
          if (this.closed) return;
          this.watchResource(record);
          void this.schedule(record);
        }
      },
      (err: unknown) => this.options.warn(`knowledge: cannot list resources to watch: ${describeError(err)}`),
    );
    this.poller = setInterval(() => void this.pollResources(), RESOURCE_POLL_MS).unref();
  }

  private async pollResources(): Promise<void> {
    if (this.closed) return;
    const records = await this.store.knowledge.listAllKnowledgeResources().catch(() => null);
    if (!records || this.closed) return;
    const ids = new Set(records.map((r) => r.id));
    for (const record of records) {
      // A folder that vanished and came back is watched again, and re-synced.
      const revived = this.watchers.has(record.id) && !this.watchers.get(record.id)!.alive;
      this.watchResource(record);
      if (revived) void this.schedule(record);
    }
    for (const id of this.watchers.keys()) if (!ids.has(id)) this.unwatch(id);
    await this.refreshCatalog();
  }

  /** Stops watching and indexing; waits for a sync that is writing its result. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    if (this.poller) clearInterval(this.poller);
    this.catalogListeners.clear();
    for (const id of [...this.watchers.keys(), ...this.timers.keys()]) this.unwatch(id);
    await this.runner.close();
    await Promise.allSettled([...this.jobs.values()]);
  }

  // ---- syncing -----------------------------------------------------------------------------

  /** Syncs a resource (the record names its owner, in whose scope every store call of the sync runs). */
  private schedule(target: Pick<KnowledgeResourceRecord, 'id' | 'scope'>): Promise<void> {
    const { id } = target;
    const running = this.jobs.get(id);
    if (running) {
      this.again.add(id);
      return running;
    }
    if (this.closed) return Promise.resolve();
    const job = this.runSync(target).finally(() => {
      this.jobs.delete(id);
      this.progress.delete(id);
      if (this.again.delete(id) && !this.closed) void this.schedule(target);
    });
    this.jobs.set(id, job);
    return job;
  }

  /**
   * One sync, holding the resource's claim: when another process is syncing it, this one waits and then
   * syncs what changed since (usually nothing), so no change is skipped and none is parsed twice at once.
   */
  private async runSync(target: Pick<KnowledgeResourceRecord, 'id' | 'scope'>): Promise<void> {
    let claim;
    try {
      claim = await claimWhenFree(this.store.coordination, workNames.knowledgeSync(target.id), { signal: this.closing.signal });
    } catch (err) {
      if (!this.closed) this.options.warn(`knowledge ${target.id}: cannot claim the sync: ${describeError(err)}`);
      return;
    }
    try {
      await this.syncClaimed(target);
    } finally {
      await claim.release().catch((err: unknown) => this.options.warn(`knowledge ${target.id}: cannot release the sync's claim: ${describeError(err)}`));
    }
  }

  /** Index what changed, store it, reload; for a code graph, re-resolve files whose references broke. */
  private async syncClaimed({ id, scope }: Pick<KnowledgeResourceRecord, 'id' | 'scope'>): Promise<void> {
    const started = performance.now();
    const record = await this.store.knowledge.getKnowledgeResource(scope, id);
    if (!record) return;
    const report: SyncReport = {
      at: new Date().toISOString(),
      reindexed: [],
      removed: [],
      unchanged: 0,
      skipped: [],
      binary: [],
      ignored: [],
      otherFiles: 0,
      durationMs: 0,
      error: null,
    };
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
      await this.store.knowledge.updateKnowledgeResource(scope, id, {
        status: 'ready',
        error: null,
        stats: index.stats(),
        summary: index.summary(),
        syncedAt: new Date().toISOString(),
      });
    } catch (err) {
      if (this.closed) return;
      report.error = describeError(err);
      this.options.warn(`knowledge ${id}: sync failed: ${report.error}`);
      await this.store.knowledge.updateKnowledgeResource(scope, id, { status: 'error', error: report.error });
    } finally {
      report.durationMs = Math.round(performance.now() - started);
      if (!this.closed) this.reports.set(id, report);
    }
    // The catalog's descriptions carry the summary, which changes with the index.
    if (!this.closed) await this.refreshCatalog();
  }

  private async index(record: KnowledgeResourceRecord, force: readonly string[]): Promise<IndexJobResult> {
    const known = Object.fromEntries((await this.store.knowledge.listKnowledgeFiles(record.scope, record.id, { withData: false })).map((f) => [f.path, f.hash]));
    const onProgress = (p: IndexProgress) => {
      this.progress.set(record.id, p);
      for (const listener of this.listeners.get(record.id) ?? []) listener(p);
    };
    return this.runner.run({ type: record.type, root: record.root, known, force, maxFileBytes: this.options.maxFileBytes, maxFiles: this.options.maxFiles }, onProgress);
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
    return this.store.knowledge.applyKnowledgeSync(record.scope, record.id, { upserts: result.upserts, deletes: result.deletes, patch: {} });
  }

  /** The in-memory index of a resource at its stored version (loaded once per version, shared by concurrent calls). */
  private load(record: KnowledgeResourceRecord): Promise<Index> {
    const cached = this.loaded.get(record.id);
    if (cached && cached.version === record.version) return cached.index;
    const index = this.store.knowledge
      .listKnowledgeFiles(record.scope, record.id)
      .then((files) =>
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
          void this.schedule(record);
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

  private async record(scope: Scope, id: unknown): Promise<KnowledgeResourceRecord> {
    if (id === undefined || id === null || id === '') throw new CairnError('invalid_input', 'knowledge_id is required');
    if (typeof id !== 'string' || !KNOWLEDGE_ID_PATTERN.test(id)) {
      throw new CairnError('invalid_input', `invalid knowledge_id format: ${JSON.stringify(id)} (expected wiki-xxxxxxxx or cg-xxxxxxxx)`);
    }
    const record = await this.store.knowledge.getKnowledgeResource(scope, id);
    if (!record) throw new CairnError('not_found', `knowledge resource ${id} not found`);
    return record;
  }

  /**
   * Refuses `root` when it is, holds or lies inside another scope's resource, unless both scopes are mapped
   * by name (not `*`) to roots holding both folders: the operator shared them. Which scope and folder it
   * overlaps is not said.
   */
  private async requireUnshared(scope: Scope, root: string, grants: Grants): Promise<void> {
    const holds = (folders: readonly AllowedRoot[], a: string, b: string) => folders.some((r) => isUnder(a, r.real) && isUnder(b, r.real));
    const mine = grants.named(scope);
    for (const other of await this.store.knowledge.listAllKnowledgeResources()) {
      if (other.scope.userId === scope.userId && other.scope.agentId === scope.agentId) continue;
      if (!isUnder(root, other.root) && !isUnder(other.root, root)) continue;
      if (holds(mine, root, other.root) && holds(grants.named(other.scope), root, other.root)) continue;
      throw new CairnError(
        'forbidden',
        `${root} is, holds or lies inside a folder another tenant registered; knowledge.roots does not share it with you (the operator can, by mapping a root holding both to both tenants)`,
      );
    }
  }

  private view(record: KnowledgeResourceRecord): KnowledgeResource {
    const { version: _version, ...rest } = record;
    return { ...rest, syncing: this.jobs.has(record.id), progress: this.progress.get(record.id) ?? null };
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
