import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { describeError } from '../errors.js';

export type FolderWatcherOptions = {
  /** Directories (by name) never watched, like the ones the scan skips. */
  skipDir: (name: string) => boolean;
  /** A file or folder changed; `path` is relative to the root, with `/` separators. */
  onChange: (path: string) => void;
  onError: (message: string) => void;
};

/**
 * Watches a folder tree with one non-recursive `fs.watch` per directory, skipping the directories the
 * index skips. Node's recursive mode would also watch every folder under `node_modules` and can run out
 * of inotify watches on Linux. New directories are picked up as they appear.
 */
export class FolderWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private closed = false;

  constructor(
    private readonly root: string,
    private readonly options: FolderWatcherOptions,
  ) {}

  /** False once the root itself can no longer be watched (removed, or the watch failed). */
  get alive(): boolean {
    return !this.closed && this.watchers.has(this.root);
  }

  /** Starts watching the root and every directory under it; resolves once all are watched. */
  async start(): Promise<void> {
    await this.add(this.root);
  }

  close(): void {
    this.closed = true;
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }

  private async add(dir: string): Promise<void> {
    if (this.closed || this.watchers.has(dir)) return;
    let watcher: FSWatcher;
    try {
      watcher = watch(dir, { persistent: false });
    } catch (err) {
      if (dir === this.root) this.options.onError(`cannot watch ${dir}: ${describeError(err)}`);
      return;
    }
    this.watchers.set(dir, watcher);
    watcher.on('change', (_event, filename) => void this.changed(dir, filename === null ? null : String(filename)));
    watcher.on('error', (err) => {
      this.drop(dir);
      if (dir === this.root) this.options.onError(`stopped watching ${dir}: ${describeError(err)}`);
    });
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isDirectory() && !this.options.skipDir(entry.name)) await this.add(join(dir, entry.name));
    }
  }

  private async changed(dir: string, filename: string | null): Promise<void> {
    if (this.closed) return;
    const full = filename === null ? dir : join(dir, filename);
    this.options.onChange(relative(this.root, full).split(sep).join('/'));
    if (filename === null || this.options.skipDir(filename)) return;
    // A directory that appeared is watched from now on; one that vanished is forgotten.
    const info = await stat(full).catch(() => null);
    if (info?.isDirectory()) await this.add(full);
    else if (!info) this.drop(full);
  }

  private drop(dir: string): void {
    for (const [path, watcher] of this.watchers) {
      if (path === dir || path.startsWith(`${dir}${sep}`)) {
        watcher.close();
        this.watchers.delete(path);
      }
    }
  }
}
