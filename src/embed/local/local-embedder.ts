import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { CairnError, describeError } from '../../errors.js';
import type { Embedder, EmbedKind } from '../embedder.js';
import { DEFAULT_LOCAL_MODEL, KNOWN_MODELS, knownModel, type KnownModel, type ModelKind } from './known-models.js';
import { MANIFEST_FILE, modelFolder, pullModel, readManifest, type ModelManifest, type PullProgress } from './model-hub.js';
import { checkOnnxModel, OnnxModel, type OnnxModelFiles } from './onnx-model.js';
import { embedStatic, loadStaticModel, type StaticModel } from './static-model.js';

/** Where a local model comes from and how it may be fetched (the `embedding` config, resolved). */
export type LocalModelSource = {
  /** `embedding.model`: a Hub id under `modelsDir`; default {@link DEFAULT_LOCAL_MODEL}. */
  model?: string | undefined;
  /** `embedding.model_path`: a folder in either layout, used as it is (nothing is downloaded). */
  modelPath?: string | undefined;
  modelsDir: string;
  hubUrl?: string | undefined;
  /** False: a model that is not present is a start-up error naming `cairn models pull`. */
  allowDownload: boolean;
  /** Intra-op threads of a transformer's runtime. */
  threads: number;
  /** Download progress while the model is pulled at start. */
  onProgress?: (progress: PullProgress) => void;
};

/** Texts a transformer runs per call: the queue's batch is split so padding to the longest stays cheap. */
const TRANSFORMER_BATCH = 16;

/**
 * The in-process embedder of `embedding.provider: local` (DESIGN.md, "Local models"): a static model
 * (model2vec layout: look-up, mean, normalise, in TypeScript) or a transformer (sentence-transformers
 * ONNX layout, run by onnxruntime-node). A model folder that is present is checked when the embedder is
 * made, so a missing file, a tokenizer Cairn cannot load or a table of the wrong shape is a start-up
 * error naming the file. A known model that is not present yet is pulled by {@link prepare} (unless
 * downloads are off): the embedder is not `ready` until then and searches answer by keywords.
 */
export class LocalEmbedder implements Embedder {
  private idValue: string;
  readonly dimensions: number;
  private readonly folder: string;
  private readonly known: KnownModel | undefined;
  private readonly name: string;
  private kind: ModelKind;
  private staticModel: StaticModel | null = null;
  private onnxFiles: OnnxModelFiles | null = null;
  private onnx: OnnxModel | null = null;
  private preparing: Promise<void> | null = null;
  private lastError: string | null = null;

  constructor(private readonly source: LocalModelSource) {
    if (source.modelPath !== undefined) {
      this.folder = source.modelPath;
      if (!existsSync(this.folder) || !statSync(this.folder).isDirectory()) {
        throw new CairnError('config_invalid', `invalid config at embedding.model_path: ${this.folder} is not a folder`);
      }
      const manifest = readManifest(this.folder);
      this.known = manifest ? knownModel(manifest.id) : undefined;
      this.name = manifest?.id ?? basename(this.folder);
      this.kind = folderKind(this.folder);
      this.dimensions = this.load();
      this.idValue = `local:${this.name}@${manifest ? manifest.revision.slice(0, 12) : fingerprint(this.folder, this.kind)}:${this.dimensions}`;
      return;
    }
    const id = source.model ?? DEFAULT_LOCAL_MODEL;
    this.folder = modelFolder(source.modelsDir, id);
    this.known = knownModel(id);
    this.name = id;
    const manifest = readManifest(this.folder);
    if (manifest !== null) {
      this.kind = manifest.kind;
      this.dimensions = this.load();
      this.idValue = `local:${id}@${manifest.revision.slice(0, 12)}:${this.dimensions}`;
      return;
    }
    const hint = `cairn models pull ${id}`;
    if (!source.allowDownload) {
      throw new CairnError('config_invalid', `the local model ${id} is not in ${source.modelsDir} and embedding.allow_download is false: run \`${hint}\` first`);
    }
    if (this.known === undefined) {
      throw new CairnError(
        'config_invalid',
        `the model ${id} is not in ${source.modelsDir}; Cairn downloads only the models \`cairn models list\` shows at start: run \`${hint}\` first`,
      );
    }
    this.kind = this.known.kind;
    this.dimensions = this.known.dimensions;
    // Provisional until the pull says which revision it got; nothing is embedded before (see ready).
    this.idValue = `local:${id}:${this.dimensions}`;
  }

  get id(): string {
    return this.idValue;
  }

  get preparesFromDisk(): boolean {
    return this.staticModel !== null || this.onnxFiles !== null;
  }

  /** False until the model is present and loaded (a transformer's session too). */
  get ready(): boolean {
    return this.staticModel !== null || this.onnx !== null;
  }

  /** Pulls the model when it is not present, then loads it; one run at a time, a failure may be retried. */
  prepare(): Promise<void> {
    if (this.ready) return Promise.resolve();
    this.preparing ??= this.prepareOnce().finally(() => {
      this.preparing = null;
    });
    return this.preparing;
  }

  private async prepareOnce(): Promise<void> {
    try {
      if (this.staticModel === null && this.onnxFiles === null) {
        const manifest = await pullModel(this.name, this.folder, { hubUrl: this.source.hubUrl, onProgress: this.source.onProgress });
        this.kind = manifest.kind;
        const dimensions = this.load();
        if (dimensions !== this.dimensions) {
          throw new CairnError('config_invalid', `${this.folder}: the model gives ${dimensions}-dimensional vectors, Cairn expected ${this.dimensions}`);
        }
        this.idValue = `local:${this.name}@${manifest.revision.slice(0, 12)}:${this.dimensions}`;
      }
      if (this.onnxFiles !== null && this.onnx === null) {
        this.onnx = await OnnxModel.load(this.onnxFiles, { pooling: this.known?.pooling ?? 'mean', threads: this.source.threads });
      }
      this.lastError = null;
    } catch (err) {
      this.lastError = describeError(err);
      throw err;
    }
  }

  /** Checks and loads the folder's files (a transformer's graph loads in prepare); returns the vector length. */
  private load(): number {
    if (this.kind === 'static') {
      this.staticModel = loadStaticModel(this.folder);
      return this.staticModel.dimensions;
    }
    this.onnxFiles = checkOnnxModel(this.folder);
    return this.onnxFiles.dimensions;
  }

  async embed(texts: readonly string[], signal?: AbortSignal, kind: EmbedKind = 'document'): Promise<(Float32Array | null)[]> {
    if (!this.ready) await this.prepare();
    const prefix = (kind === 'query' ? this.known?.queryPrefix : this.known?.documentPrefix) ?? '';
    const inputs = prefix === '' ? texts : texts.map((t) => prefix + t);
    const model = this.staticModel;
    if (model !== null) return inputs.map((t) => embedStatic(model, t));
    const out: (Float32Array | null)[] = [];
    for (let i = 0; i < inputs.length; i += TRANSFORMER_BATCH) {
      signal?.throwIfAborted();
      out.push(...(await this.onnx!.embedBatch(inputs.slice(i, i + TRANSFORMER_BATCH))));
    }
    return out;
  }

  /** One line for `/health` and `cairn doctor`. */
  describe(): string {
    const what = `${this.kind} model ${this.name} (${this.dimensions} dimensions) in ${this.folder}`;
    if (this.ready) return `local: ${what}`;
    return `local: ${what}, ${this.lastError ? `not ready: ${this.lastError}` : existsSync(join(this.folder, MANIFEST_FILE)) ? 'loading' : 'downloading'}`;
  }

  /** Frees a transformer's native session. */
  async close(): Promise<void> {
    await this.onnx?.release();
    this.onnx = null;
  }
}

/** Which layout a folder holds, or a `config_invalid` error saying what neither layout found. */
function folderKind(folder: string): ModelKind {
  if (existsSync(join(folder, 'model.safetensors'))) return 'static';
  if (['onnx/model.onnx', 'model.onnx', 'onnx/model_quantized.onnx'].some((f) => existsSync(join(folder, f)))) return 'transformer';
  throw new CairnError(
    'config_invalid',
    `${folder} holds neither a static model (model.safetensors, tokenizer.json, config.json) nor a transformer (onnx/model.onnx, tokenizer.json, config.json)`,
  );
}

/** The first 12 hex digits of the SHA-256 of the folder's weights: a different file makes a different embedder. */
function fingerprint(folder: string, kind: ModelKind): string {
  const file = kind === 'static' ? 'model.safetensors' : (['onnx/model.onnx', 'model.onnx', 'onnx/model_quantized.onnx'].find((f) => existsSync(join(folder, f))) ?? '');
  return createHash('sha256')
    .update(readFileSync(join(folder, file)))
    .digest('hex')
    .slice(0, 12);
}

/** Models pulled into `modelsDir` (complete folders only), known ones first in the list's order. */
export function pulledModels(modelsDir: string): ModelManifest[] {
  if (!existsSync(modelsDir)) return [];
  const found: ModelManifest[] = [];
  for (const org of readdirSync(modelsDir, { withFileTypes: true })) {
    if (!org.isDirectory()) continue;
    for (const name of readdirSync(join(modelsDir, org.name), { withFileTypes: true })) {
      if (!name.isDirectory()) continue;
      const manifest = readManifest(join(modelsDir, org.name, name.name));
      if (manifest !== null) found.push(manifest);
    }
  }
  const rank = (id: string): number => {
    const i = KNOWN_MODELS.findIndex((m) => m.id === id);
    return i < 0 ? KNOWN_MODELS.length : i;
  };
  return found.sort((a, b) => rank(a.id) - rank(b.id) || a.id.localeCompare(b.id));
}
