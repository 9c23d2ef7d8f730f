import type { Command } from 'commander';
import { modelsDir } from '../../embed/create-embedder.js';
import { DEFAULT_LOCAL_MODEL, KNOWN_MODELS } from '../../embed/local/known-models.js';
import { pulledModels } from '../../embed/local/local-embedder.js';
import { modelFolder, pullModel, readManifest, type PullProgress } from '../../embed/local/model-hub.js';
import { explainOf, print } from '../context.js';

/** `cairn models list`: the known local models with size, dimensions, languages and licence, and which are pulled. */
export async function listModelsCommand(opts: { json?: boolean }, cmd: Command): Promise<void> {
  const { config } = explainOf(cmd);
  const dir = modelsDir(config.embedding, { dataDir: config.data_dir });
  const pulled = new Map(pulledModels(dir).map((m) => [m.id, m]));
  const rows = [
    ...KNOWN_MODELS.map((m) => ({
      id: m.id,
      kind: m.kind,
      dimensions: m.dimensions,
      size_mb: m.sizeMb,
      languages: m.languages,
      licence: m.licence,
      pulled: pulled.get(m.id)?.revision ?? null,
      note: m.note,
    })),
    // Other Hub models pulled by id.
    ...[...pulled.values()]
      .filter((p) => !KNOWN_MODELS.some((m) => m.id === p.id))
      .map((p) => ({
        id: p.id,
        kind: p.kind,
        dimensions: null,
        size_mb: Math.round(p.files.reduce((n, f) => n + f.size, 0) / 1e6),
        languages: '',
        licence: '',
        pulled: p.revision,
        note: '',
      })),
  ];
  if (opts.json) return print(JSON.stringify({ models_dir: dir, models: rows }, null, 2));
  print(`# models in ${dir}; embedding.provider local uses embedding.model (default ${DEFAULT_LOCAL_MODEL})`);
  for (const r of rows) {
    const state = r.pulled === null ? 'not pulled' : `pulled (${r.pulled.slice(0, 12)})`;
    print(`${r.id.padEnd(36)} ${r.kind.padEnd(11)} ${String(r.dimensions ?? '?').padStart(4)} dims ${String(r.size_mb).padStart(5)} MB  ${r.licence.padEnd(10)} ${state}`);
    if (r.languages || r.note) print(`${''.padEnd(36)} ${[r.languages, r.note].filter(Boolean).join('; ')}`);
  }
}

/**
 * `cairn models pull [MODEL]`: downloads a model (default `embedding.model`, else the recommended one) from
 * `embedding.hub_url` into the models folder, with progress on stderr; an interrupted pull resumes, a file
 * that fails its check is deleted and the pull fails. A model already pulled is left as it is unless `--force`.
 */
export async function pullModelCommand(model: string | undefined, opts: { revision?: string; force?: boolean }, cmd: Command): Promise<void> {
  const { config } = explainOf(cmd);
  const id = model ?? config.embedding.model ?? DEFAULT_LOCAL_MODEL;
  const dir = modelsDir(config.embedding, { dataDir: config.data_dir });
  const folder = modelFolder(dir, id);
  const present = readManifest(folder);
  if (present !== null && opts.force !== true) {
    print(`${id} is already pulled (revision ${present.revision}) in ${folder}; --force pulls it again`);
    return;
  }
  const manifest = await pullModel(id, folder, { hubUrl: config.embedding.hub_url, revision: opts.revision, onProgress: progressLine });
  const bytes = manifest.files.reduce((n, f) => n + f.size, 0);
  print(`pulled ${id} (revision ${manifest.revision}, ${manifest.files.length} files, ${mb(bytes)} MB, each checked) into ${folder}`);
}

/** One progress line on stderr per report: `cairn: pull ORG/NAME: FILE 12.3 of 30.2 MB (41%)`, resumed files say from where. */
export function progressLine(p: PullProgress): void {
  const pct = p.total > 0 ? Math.floor((100 * p.done) / p.total) : 100;
  const resumed = p.resumedFrom > 0 ? `, resumed at ${mb(p.resumedFrom)} MB` : '';
  process.stderr.write(`cairn: pull ${p.model}: ${p.file} ${mb(p.done)} of ${mb(p.total)} MB (${pct}%${resumed})\n`);
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(1);
}
