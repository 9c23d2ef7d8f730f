import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CairnError, describeError } from '../../errors.js';
import { normalize } from '../embedder.js';
import { loadModelTokenizer, type ModelTokenizer } from './model-tokenizer.js';
import { RowPooling } from './static-pooling.js';
import { floatValues, integerValues, readSafetensors } from './safetensors.js';

/** Tokens of one text a static model averages; model2vec's `encode` cuts at the same length. */
export const STATIC_MAX_TOKENS = 512;

/** A static model loaded from its folder: the embedding table and how tokens map onto its rows. */
export type StaticModel = {
  dimensions: number;
  tokenizer: ModelTokenizer;
  /** Row `r` of the table is `table[r * dimensions … (r + 1) * dimensions)`. */
  table: Float32Array;
  /** Per token id, its row (model2vec's vocabulary quantization); absent: the id is the row. */
  mapping: Int32Array | null;
  /** Per token id, the weight of its row in the mean; absent: every token weighs 1. */
  weights: Float32Array | null;
  /** The SIMD sum of rows (the table lives in it), or null: the rows are summed in JavaScript. */
  pooling: RowPooling | null;
};

/**
 * Loads a static model in model2vec's layout (`model.safetensors` with an `embeddings` [tokens, dims]
 * tensor and optional `weights` [tokens] and `mapping` [tokens] tensors, `tokenizer.json`, `config.json`,
 * as `save_pretrained` writes them). Every inconsistency is a `config_invalid` error naming the file:
 * a missing file, a tokenizer Cairn cannot load, a table with fewer rows than the tokenizer has tokens.
 */
export function loadStaticModel(dir: string): StaticModel {
  const configPath = join(dir, 'config.json');
  if (!existsSync(configPath)) throw new CairnError('config_invalid', `the static model folder ${dir} has no config.json`);
  try {
    JSON.parse(readFileSync(configPath, 'utf8'));
  } catch (err) {
    throw new CairnError('config_invalid', `${configPath} is not JSON: ${describeError(err)}`);
  }
  const weightsPath = join(dir, 'model.safetensors');
  if (!existsSync(weightsPath)) throw new CairnError('config_invalid', `the static model folder ${dir} has no model.safetensors`);
  const tokenizer = loadModelTokenizer(dir);
  const tensors = readSafetensors(weightsPath);
  const embeddings = tensors.get('embeddings') ?? tensors.get('embedding.weight');
  if (embeddings === undefined) throw new CairnError('config_invalid', `${weightsPath} has no "embeddings" tensor (it holds: ${[...tensors.keys()].join(', ') || 'none'})`);
  if (embeddings.shape.length !== 2 || embeddings.shape[1]! < 1) {
    throw new CairnError('config_invalid', `${weightsPath}: the "embeddings" tensor has shape [${embeddings.shape.join(', ')}], not [tokens, dimensions]`);
  }
  const [rows, dimensions] = embeddings.shape as [number, number];
  const table = floatValues(embeddings, weightsPath);
  const mappingTensor = tensors.get('mapping');
  const mapping = mappingTensor === undefined ? null : integerValues(mappingTensor, weightsPath);
  const weightsTensor = tensors.get('weights');
  const weights = weightsTensor === undefined ? null : floatValues(weightsTensor, weightsPath);
  const tokens = tokenizer.vocabularySize;
  if (mapping !== null) {
    if (mapping.length < tokens) throw new CairnError('config_invalid', `${weightsPath}: the "mapping" tensor has ${mapping.length} entries, tokenizer.json has ${tokens} tokens`);
    for (const row of mapping) {
      if (row < 0 || row >= rows) throw new CairnError('config_invalid', `${weightsPath}: the "mapping" tensor names row ${row} of a table of ${rows} rows`);
    }
  } else if (rows < tokens) {
    throw new CairnError('config_invalid', `${weightsPath}: the "embeddings" tensor has ${rows} rows, tokenizer.json has ${tokens} tokens`);
  }
  if (weights !== null && weights.length < tokens)
    throw new CairnError('config_invalid', `${weightsPath}: the "weights" tensor has ${weights.length} entries, tokenizer.json has ${tokens} tokens`);
  const pooling = RowPooling.of(table, dimensions, STATIC_MAX_TOKENS);
  return { dimensions, tokenizer, table: pooling?.table ?? table, mapping, weights, pooling };
}

/**
 * A text's vector from a static model, as model2vec computes it: the tokens' rows (the unknown token
 * left out), weighted when the model has weights, averaged and L2-normalised; null when no token has a row.
 */
export function embedStatic(model: StaticModel, text: string): Float32Array | null {
  const { dimensions, table, mapping, weights, pooling } = model;
  const ids = model.tokenizer.encode(text, STATIC_MAX_TOKENS, false);
  const unknown = model.tokenizer.unknownId;
  let used = 0;
  for (const id of ids) {
    if (id === unknown) continue;
    rowList[used] = mapping === null ? id : mapping[id]!;
    weightList[used] = weights === null ? 1 : weights[id]!;
    used++;
  }
  if (used === 0) return null;
  if (pooling !== null) return normalize(pooling.sum(rowList, weightList, used));
  const sum = new Float32Array(dimensions);
  for (let t = 0; t < used; t++) {
    const at = rowList[t]! * dimensions;
    const w = weightList[t]!;
    for (let j = 0; j < dimensions; j++) sum[j]! += w * table[at + j]!;
  }
  return normalize(sum);
}

/** The rows and weights of the text being embedded (one text at a time on a thread). */
const rowList = new Int32Array(STATIC_MAX_TOKENS);
const weightList = new Float32Array(STATIC_MAX_TOKENS);
