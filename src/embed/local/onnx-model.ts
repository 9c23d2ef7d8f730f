import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as OnnxRuntime from 'onnxruntime-node';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { CairnError, describeError } from '../../errors.js';
import { normalize } from '../embedder.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';

/** The optional runtime transformer models need; static models need none. */
export const ONNX_RUNTIME_PACKAGE = 'onnxruntime-node';
/** The release Cairn is tested with (package.json devDependencies). */
export const ONNX_RUNTIME_VERSION = '1.30.0';

/** How token vectors become the text's vector: the mean over the real tokens, or the first token's. */
export type Pooling = 'mean' | 'cls';

/** The files of a transformer folder, checked before the runtime is loaded. */
export type OnnxModelFiles = {
  dir: string;
  onnxPath: string;
  tokenizer: ModelTokenizer;
  /** Hidden size from config.json: the vector length. */
  dimensions: number;
  /** Longest input in tokens, special tokens included. */
  maxTokens: number;
  /** From `1_Pooling/config.json` when the folder has one. */
  pooling: Pooling | null;
};

/** Where the ONNX graph is in a sentence-transformers folder: full precision first, then the int8 export. */
const ONNX_FILES = ['onnx/model.onnx', 'model.onnx', 'onnx/model_quantized.onnx'];

/** Longest input any model here is fed; longer texts are cut (BERT-family position tables hold 512). */
const MAX_INPUT_TOKENS = 512;

/**
 * Checks a transformer folder in the sentence-transformers ONNX layout (`onnx/model.onnx`,
 * `tokenizer.json`, `config.json`, optionally `tokenizer_config.json` and `1_Pooling/config.json`)
 * without loading the graph: each missing or unreadable file is a `config_invalid` error naming it.
 */
export function checkOnnxModel(dir: string): OnnxModelFiles {
  const onnx = ONNX_FILES.map((f) => join(dir, f)).find((p) => existsSync(p));
  if (onnx === undefined) throw new CairnError('config_invalid', `the transformer model folder ${dir} has no ${ONNX_FILES[0]}`);
  const config = readJson(join(dir, 'config.json'), true) as { hidden_size?: unknown; d_model?: unknown; max_position_embeddings?: unknown };
  const hidden = config.hidden_size ?? config.d_model;
  if (!Number.isInteger(hidden) || (hidden as number) < 1) throw new CairnError('config_invalid', `${join(dir, 'config.json')} names no hidden_size (the vector length)`);
  const tokenizerConfig = readJson(join(dir, 'tokenizer_config.json'), false) as { model_max_length?: unknown } | null;
  const limits = [MAX_INPUT_TOKENS, tokenizerConfig?.model_max_length, config.max_position_embeddings].filter((n): n is number => typeof n === 'number' && n > 2);
  const poolingConfig = readJson(join(dir, '1_Pooling', 'config.json'), false) as { pooling_mode_cls_token?: boolean; pooling_mode_mean_tokens?: boolean } | null;
  const pooling: Pooling | null = poolingConfig === null ? null : poolingConfig.pooling_mode_cls_token === true ? 'cls' : 'mean';
  return { dir, onnxPath: onnx, tokenizer: loadModelTokenizer(dir), dimensions: hidden as number, maxTokens: Math.min(...limits), pooling };
}

function readJson(path: string, required: boolean): unknown {
  if (!existsSync(path)) {
    if (required) throw new CairnError('config_invalid', `the model folder has no ${path}`);
    return null;
  }
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new CairnError('config_invalid', `${path} is not JSON: ${describeError(err)}`);
  }
}

type Runtime = typeof OnnxRuntime;

/** The runtime, loaded only when a transformer model is configured; a clear error when it is not installed. */
async function loadRuntime(): Promise<Runtime> {
  try {
    const loaded = (await import(ONNX_RUNTIME_PACKAGE)) as Runtime & { default?: Runtime };
    return loaded.default ?? loaded;
  } catch (err) {
    throw new CairnError(
      'config_invalid',
      `transformer models need the optional package ${ONNX_RUNTIME_PACKAGE}, which is not installed: ` +
        `npm install ${ONNX_RUNTIME_PACKAGE}@${ONNX_RUNTIME_VERSION} (offline: ONNXRUNTIME_NODE_INSTALL=skip npm install …). ` +
        `Static models (cairn models list) need no runtime. (${describeError(err)})`,
    );
  }
}

/** A loaded transformer: its session and how to feed it. */
export class OnnxModel {
  private constructor(
    private readonly runtime: Runtime,
    private readonly session: InferenceSession,
    readonly files: OnnxModelFiles,
    private readonly pooling: Pooling,
    private readonly output: string,
    private readonly feedsTypeIds: boolean,
  ) {}

  /** Loads the graph with `threads` intra-op threads; a graph the runtime rejects is a `config_invalid` error naming the file. */
  static async load(files: OnnxModelFiles, options: { pooling: Pooling; threads: number }): Promise<OnnxModel> {
    const runtime = await loadRuntime();
    let session: InferenceSession;
    try {
      session = await runtime.InferenceSession.create(files.onnxPath, { intraOpNumThreads: options.threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
    } catch (err) {
      throw new CairnError('config_invalid', `${files.onnxPath} is not an ONNX model the runtime can load: ${describeError(err)}`);
    }
    for (const name of ['input_ids', 'attention_mask']) {
      if (!session.inputNames.includes(name)) throw new CairnError('config_invalid', `${files.onnxPath} takes no "${name}" input (inputs: ${session.inputNames.join(', ')})`);
    }
    const output = ['last_hidden_state', 'token_embeddings'].find((n) => session.outputNames.includes(n)) ?? session.outputNames[0];
    if (output === undefined) throw new CairnError('config_invalid', `${files.onnxPath} has no output`);
    return new OnnxModel(runtime, session, files, files.pooling ?? options.pooling, output, session.inputNames.includes('token_type_ids'));
  }

  /** The texts' vectors, run as one padded batch; a text with no token gets null. */
  async embedBatch(texts: readonly string[]): Promise<(Float32Array | null)[]> {
    const { tokenizer, maxTokens, dimensions, onnxPath } = this.files;
    const encoded = texts.map((t) => tokenizer.encode(t, maxTokens, true));
    const width = Math.max(1, ...encoded.map((e) => e.length));
    const count = texts.length;
    const ids = new BigInt64Array(count * width);
    const mask = new BigInt64Array(count * width);
    encoded.forEach((e, b) => {
      for (let i = 0; i < e.length; i++) {
        ids[b * width + i] = BigInt(e[i]!);
        mask[b * width + i] = 1n;
      }
    });
    const { Tensor: TensorClass } = this.runtime;
    const feeds: Record<string, Tensor> = {
      input_ids: new TensorClass('int64', ids, [count, width]),
      attention_mask: new TensorClass('int64', mask, [count, width]),
    };
    if (this.feedsTypeIds) feeds.token_type_ids = new TensorClass('int64', new BigInt64Array(count * width), [count, width]);
    const result = await this.session.run(feeds);
    const out = result[this.output]!;
    const data = out.data as Float32Array;
    const dims = out.dims;
    if (dims.length === 2 && dims[1] === dimensions) {
      // Some exports pool inside the graph (`sentence_embedding`).
      return encoded.map((e, b) => (e.length === 0 ? null : normalize(data.slice(b * dimensions, (b + 1) * dimensions))));
    }
    if (dims.length !== 3 || dims[2] !== dimensions)
      throw new CairnError('embedding_failed', `${onnxPath} answered a ${this.output} of shape [${dims.join(', ')}], expected [batch, tokens, ${dimensions}]`);
    return encoded.map((e, b) => {
      if (e.length === 0) return null;
      const vector = new Float32Array(dimensions);
      const rows = this.pooling === 'cls' ? 1 : e.length;
      for (let t = 0; t < rows; t++) {
        const at = (b * width + t) * dimensions;
        for (let j = 0; j < dimensions; j++) vector[j]! += data[at + j]!;
      }
      return normalize(vector);
    });
  }

  /** Frees the session's native memory. */
  async release(): Promise<void> {
    await this.session.release();
  }
}
