/**
 * Embedding models written in the real file formats, for tests and benches on a machine that cannot
 * download weights: a BERT WordPiece `tokenizer.json`, a static model in model2vec's layout
 * (`model.safetensors` with an `embeddings` tensor, `config.json`, `tokenizer.json`) and a BERT encoder in
 * the sentence-transformers ONNX layout (`onnx/model.onnx` as ONNX protobuf, `config.json`,
 * `tokenizer.json`, `tokenizer_config.json`, `1_Pooling/config.json`). Weights are random (seeded) or
 * hand-made: `vectorOf` gives chosen words chosen directions, which is how a test makes "eat", "food"
 * and "vegetarian" close. Costs do not depend on the values, so random weights of a real model's
 * geometry measure its speed.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prng } from './corpus.mjs';

/** BERT's special tokens and their ids (as in bert-base-uncased). */
const SPECIAL = { '[PAD]': 0, '[UNK]': 100, '[CLS]': 101, '[SEP]': 102, '[MASK]': 103 };
const CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789.,!?;:\'"-()[]{}/_@#$%&*+=<>`~^|\\';
const SUFFIXES = ['s', 'ed', 'ing', 'ly', 'er', 'est', 'ion', 'ment', 'ness', 'able', 'al', 'y'];

/**
 * A BERT-style WordPiece vocabulary: the special tokens at BERT's ids, every character alone and as a
 * `##` continuation, common suffixes, then `words`, then filler tokens up to `size` entries.
 */
export function bertVocabulary(words, size = 0) {
  const vocab = new Map(Object.entries(SPECIAL));
  let next = 1;
  const add = (token) => {
    if (vocab.has(token)) return;
    while ([...Object.values(SPECIAL)].includes(next)) next++;
    vocab.set(token, next++);
  };
  for (let i = 1; i < 100; i++) vocab.set(`[unused${i}]`, i);
  next = 104;
  for (const c of CHARS) {
    add(c);
    add(`##${c}`);
  }
  for (const s of SUFFIXES) add(`##${s}`);
  for (const w of words) add(w.toLowerCase());
  for (let i = 0; vocab.size < size; i++) add(`[fill${i}]`);
  return vocab;
}

/** The `tokenizer.json` of a BERT uncased WordPiece tokenizer over `vocab` (a Map token → id). */
export function bertTokenizerJson(vocab, { lowercase = true } = {}) {
  const special = Object.entries(SPECIAL).map(([content, id]) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: special,
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '[SEP]', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 1 } },
        { SpecialToken: { id: '[SEP]', type_id: 1 } },
      ],
      special_tokens: { '[CLS]': { id: '[CLS]', ids: [101], tokens: ['[CLS]'] }, '[SEP]': { id: '[SEP]', ids: [102], tokens: ['[SEP]'] } },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: Object.fromEntries(vocab) },
  };
}

/** A safetensors file holding `tensors` ({name: {dtype: 'F32' | 'F16' | 'I32', shape, data: TypedArray}}). */
export function safetensorsBytes(tensors) {
  const header = {};
  const parts = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  header.__metadata__ = { format: 'pt' };
  let json = JSON.stringify(header);
  // The format pads the header with spaces so the data starts 8-byte aligned.
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  return Buffer.concat([head, Buffer.from(json), ...parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))]);
}

/** Random normal values (Box–Muller over the seeded PRNG), scaled by `std`. */
function normals(count, random, std = 1) {
  const out = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    const r = Math.sqrt(-2 * Math.log(random() || 1e-12));
    const a = 2 * Math.PI * random();
    out[i] = r * Math.cos(a) * std;
    if (i + 1 < count) out[i + 1] = r * Math.sin(a) * std;
  }
  return out;
}

/** The row of every token: `vectorOf(token, id)` where it returns one, else seeded random values. */
function embeddingTable(vocab, dims, vectorOf, seed, std = 1) {
  const rows = Math.max(...vocab.values()) + 1;
  const table = normals(rows * dims, prng(seed), std);
  if (vectorOf) {
    for (const [token, id] of vocab) {
      const v = vectorOf(token, id);
      if (v) table.set(v, id * dims);
    }
  }
  return { rows, table };
}

/**
 * Writes a static model in model2vec's `save_pretrained` layout into `dir`: `model.safetensors`
 * (`embeddings` [vocab, dims]), `tokenizer.json`, `config.json`, `modules.json`. `dtype` 'F16' stores
 * half precision, as some model2vec models do. Random rows get model2vec's Zipf weighting (`zipf`).
 */
export function writeStaticModel(dir, { words = [], vocabSize = 0, dims = 256, vectorOf, seed = 1, dtype = 'F32', normalize = true, zipf = vectorOf === undefined } = {}) {
  mkdirSync(dir, { recursive: true });
  const vocab = bertVocabulary(words, vocabSize);
  const { rows, table } = embeddingTable(vocab, dims, vectorOf, seed);
  if (zipf) {
    // model2vec's Zipf weighting: a word's row grows with the log of its frequency rank (words come most
    // frequent first), so the frequent words every text holds weigh little in the mean, as in a real model.
    const rank = new Map(words.map((w, i) => [w.toLowerCase(), i]));
    for (const [token, id] of vocab) {
      const r = rank.get(token);
      const weight = Math.log(2 + (r ?? words.length));
      for (let j = 0; j < dims; j++) table[id * dims + j] *= weight;
    }
  }
  const data = dtype === 'F16' ? toFloat16(table) : table;
  writeFileSync(join(dir, 'model.safetensors'), safetensorsBytes({ embeddings: { dtype, shape: [rows, dims], data } }));
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(bertTokenizerJson(vocab)));
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      model_type: 'model2vec',
      architectures: ['StaticModel'],
      tokenizer_name: 'generated',
      apply_pca: dims,
      apply_zipf: true,
      hidden_dim: dims,
      seq_length: 1000000,
      normalize,
    }),
  );
  writeFileSync(join(dir, 'modules.json'), JSON.stringify([{ idx: 0, name: '0', path: '.', type: 'sentence_transformers.models.StaticEmbedding' }]));
  return { dir, vocab, rows, dims };
}

function toFloat16(values) {
  const out = new Uint16Array(values.length);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < values.length; i++) {
    f[0] = values[i];
    const x = u[0];
    const sign = (x >>> 16) & 0x8000;
    const e = ((x >>> 23) & 0xff) - 112;
    const m = x & 0x7fffff;
    if (e <= 0) out[i] = sign;
    else if (e >= 0x1f) out[i] = sign | 0x7c00;
    else out[i] = sign | (e << 10) | (m >>> 13);
  }
  return out;
}

// ONNX protobuf: the few messages a BERT graph needs (onnx.proto3 field numbers).
const varint = (n) => {
  const out = [];
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Buffer.from(out);
};
const tag = (field, wire) => varint((field << 3) | wire);
const bytesField = (field, bytes) => Buffer.concat([tag(field, 2), varint(bytes.length), bytes]);
const stringField = (field, s) => bytesField(field, Buffer.from(s, 'utf8'));
const intField = (field, n) => Buffer.concat([tag(field, 0), varint(n)]);
const floatField = (field, x) => {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return Buffer.concat([tag(field, 5), b]);
};
const ONNX_FLOAT = 1;
const ONNX_INT8 = 3;
const ONNX_INT64 = 7;

function tensorProto(name, dims, dataType, raw) {
  return Buffer.concat([...dims.map((d) => intField(1, d)), intField(2, dataType), stringField(8, name), bytesField(9, Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength))]);
}

function attribute(name, value) {
  if (Array.isArray(value)) return Buffer.concat([stringField(1, name), ...value.map((v) => intField(8, v)), intField(20, 7)]);
  if (Number.isInteger(value)) return Buffer.concat([stringField(1, name), intField(3, value), intField(20, 2)]);
  return Buffer.concat([stringField(1, name), floatField(2, value), intField(20, 1)]);
}

function valueInfo(name, elemType, dims) {
  const shape = Buffer.concat(dims.map((d) => bytesField(1, typeof d === 'number' ? intField(1, d) : stringField(2, d))));
  return Buffer.concat([stringField(1, name), bytesField(2, bytesField(1, Buffer.concat([intField(1, elemType), bytesField(2, shape)])))]);
}

/**
 * Writes a BERT encoder in the sentence-transformers ONNX layout into `dir` (inputs `input_ids`,
 * `attention_mask`, `token_type_ids`; output `last_hidden_state` [batch, sequence, hidden]). Geometry:
 * `layers`, `hidden`, `heads`, `ffn`, `vocabSize`. With `vectorOf`, word embeddings take the given rows and
 * every layer's attention output and feed-forward weights are zero, so each token's output is its own
 * (layer-normalised) word embedding and mean pooling averages them: a transformer file whose vectors
 * have the meaning the test gave its words. `pooling` ('mean' or 'cls') goes to `1_Pooling/config.json`.
 * `quantized` writes `onnx/model_quantized.onnx` with int8 weights, as Xenova's repositories ship it.
 */
export function writeOnnxModel(
  dir,
  { words = [], vocabSize = 0, layers = 1, hidden = 32, heads = 4, ffn = 64, maxPositions = 512, vectorOf, seed = 2, pooling = 'mean', quantized = false } = {},
) {
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  mkdirSync(join(dir, '1_Pooling'), { recursive: true });
  const vocab = bertVocabulary(words, vocabSize);
  const random = prng(seed);
  const handMade = vectorOf !== undefined;
  const inits = [];
  const nodes = [];
  let counter = 0;
  const weight = (name, shape, std = 0.02, zero = false) => {
    const count = shape.reduce((a, b) => a * b, 1);
    inits.push(tensorProto(name, shape, ONNX_FLOAT, zero ? new Float32Array(count) : normals(count, random, std)));
    return name;
  };
  const constant = (name, shape, values, type = ONNX_FLOAT) => {
    inits.push(tensorProto(name, shape, type, type === ONNX_INT64 ? BigInt64Array.from(values.map(BigInt)) : Float32Array.from(values)));
    return name;
  };
  const nodeN = (op, inputs, outputs, attrs = {}) => {
    const name = `${op}_${++counter}`;
    const outs = Array.from({ length: outputs }, (_, i) => `${name}_${i}`);
    nodes.push(
      Buffer.concat([
        ...inputs.map((i) => stringField(1, i)),
        ...outs.map((o) => stringField(2, o)),
        stringField(3, name),
        stringField(4, op),
        ...Object.entries(attrs).map(([k, v]) => bytesField(5, attribute(k, v))),
      ]),
    );
    return outs;
  };
  const node = (op, inputs, attrs = {}) => nodeN(op, inputs, 1, attrs)[0];
  const ones = (name) => constant(name, [hidden], new Array(hidden).fill(1));
  const zeros = (name) => constant(name, [hidden], new Array(hidden).fill(0));
  const layerNorm = (x, p) => node('LayerNormalization', [x, ones(`${p}.g`), zeros(`${p}.b`)], { axis: -1, epsilon: 1e-12 });
  const biasOf = (p, o) => constant(`${p}.b`, [o], new Array(o).fill(0));
  // An int8 model as onnxruntime's dynamic quantization writes it (Xenova's model_quantized.onnx): int8
  // weights with one scale, activations quantized per call (DynamicQuantizeLinear), MatMulInteger.
  const quantizedLinear = (x, p, i, o, zero) => {
    const w = zero ? new Float32Array(i * o) : normals(i * o, random, 0.02);
    const scale = (w.reduce((m, v) => Math.max(m, Math.abs(v)), 0) || 1) / 127;
    inits.push(
      tensorProto(
        `${p}.wq`,
        [i, o],
        ONNX_INT8,
        Int8Array.from(w, (v) => Math.round(v / scale)),
      ),
    );
    inits.push(tensorProto(`${p}.wz`, [], ONNX_INT8, new Int8Array(1)));
    const [xq, xs, xz] = nodeN('DynamicQuantizeLinear', [x], 3);
    const product = node('Cast', [node('MatMulInteger', [xq, `${p}.wq`, xz, `${p}.wz`])], { to: ONNX_FLOAT });
    return node('Add', [node('Mul', [product, node('Mul', [xs, constant(`${p}.ws`, [], [scale])])]), biasOf(p, o)]);
  };
  const linear = (x, p, i, o, zero = false) =>
    quantized ? quantizedLinear(x, p, i, o, zero) : node('Add', [node('MatMul', [x, weight(`${p}.w`, [i, o], 0.02, zero)]), biasOf(p, o)]);

  const { rows, table } = embeddingTable(vocab, hidden, vectorOf, seed, handMade ? 1 : 0.02);
  inits.push(tensorProto('word_embeddings', [rows, hidden], ONNX_FLOAT, table));
  const words_ = node('Gather', ['word_embeddings', 'input_ids']);
  const length = node('Gather', [node('Shape', ['input_ids']), constant('one_index', [], [1], ONNX_INT64)], { axis: 0 });
  const positions = node('Range', [constant('zero_scalar', [], [0], ONNX_INT64), length, constant('one_scalar', [], [1], ONNX_INT64)]);
  const positionEmb = node('Gather', [weight('position_embeddings', [maxPositions, hidden], 0.02, handMade), positions]);
  const typeEmb = node('Gather', [weight('token_type_embeddings', [2, hidden], 0.02, handMade), 'token_type_ids']);
  let x = layerNorm(node('Add', [node('Add', [words_, positionEmb]), typeEmb]), 'embeddings.ln');
  const mask = node('Cast', ['attention_mask'], { to: ONNX_FLOAT });
  const bias = node('Unsqueeze', [
    node('Mul', [node('Sub', [constant('one_float', [], [1]), mask]), constant('minus_big', [], [-10000])]),
    constant('axes_12', [2], [1, 2], ONNX_INT64),
  ]);
  const headSize = hidden / heads;
  const split = constant('shape_split', [4], [0, 0, heads, headSize], ONNX_INT64);
  const merge = constant('shape_merge', [3], [0, 0, hidden], ONNX_INT64);
  const scale = constant('attention_scale', [], [1 / Math.sqrt(headSize)]);
  for (let l = 0; l < layers; l++) {
    const p = `layer${l}`;
    const q = node('Transpose', [node('Reshape', [linear(x, `${p}.q`, hidden, hidden), split])], { perm: [0, 2, 1, 3] });
    const k = node('Transpose', [node('Reshape', [linear(x, `${p}.k`, hidden, hidden), split])], { perm: [0, 2, 3, 1] });
    const v = node('Transpose', [node('Reshape', [linear(x, `${p}.v`, hidden, hidden), split])], { perm: [0, 2, 1, 3] });
    const scores = node('Add', [node('Mul', [node('MatMul', [q, k]), scale]), bias]);
    const context = node('Reshape', [node('Transpose', [node('MatMul', [node('Softmax', [scores], { axis: -1 }), v])], { perm: [0, 2, 1, 3] }), merge]);
    x = layerNorm(node('Add', [x, linear(context, `${p}.o`, hidden, hidden, handMade)]), `${p}.ln1`);
    const h = linear(x, `${p}.ffn1`, hidden, ffn);
    const gelu = node('Mul', [
      node('Mul', [h, constant(`${p}.half`, [], [0.5])]),
      node('Add', [node('Erf', [node('Div', [h, constant(`${p}.sqrt2`, [], [Math.SQRT2])])]), constant(`${p}.one`, [], [1])]),
    ]);
    x = layerNorm(node('Add', [x, linear(gelu, `${p}.ffn2`, ffn, hidden, handMade)]), `${p}.ln2`);
  }
  nodes.push(Buffer.concat([stringField(1, x), stringField(2, 'last_hidden_state'), stringField(3, 'output'), stringField(4, 'Identity')]));
  const graph = Buffer.concat([
    ...nodes.map((n) => bytesField(1, n)),
    stringField(2, 'bert'),
    ...inits.map((t) => bytesField(5, t)),
    ...['input_ids', 'attention_mask', 'token_type_ids'].map((name) => bytesField(11, valueInfo(name, ONNX_INT64, ['batch', 'sequence']))),
    bytesField(12, valueInfo('last_hidden_state', ONNX_FLOAT, ['batch', 'sequence', hidden])),
  ]);
  const model = Buffer.concat([intField(1, 8), stringField(2, 'cairn-model-files'), bytesField(7, graph), bytesField(8, Buffer.concat([stringField(1, ''), intField(2, 17)]))]);
  writeFileSync(join(dir, 'onnx', quantized ? 'model_quantized.onnx' : 'model.onnx'), model);
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify(bertTokenizerJson(vocab)));
  writeFileSync(
    join(dir, 'tokenizer_config.json'),
    JSON.stringify({
      do_lower_case: true,
      model_max_length: maxPositions,
      tokenizer_class: 'BertTokenizer',
      cls_token: '[CLS]',
      sep_token: '[SEP]',
      pad_token: '[PAD]',
      unk_token: '[UNK]',
      mask_token: '[MASK]',
    }),
  );
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      model_type: 'bert',
      architectures: ['BertModel'],
      hidden_size: hidden,
      num_attention_heads: heads,
      num_hidden_layers: layers,
      intermediate_size: ffn,
      vocab_size: rows,
      max_position_embeddings: maxPositions,
      type_vocab_size: 2,
      pad_token_id: 0,
    }),
  );
  writeFileSync(
    join(dir, '1_Pooling', 'config.json'),
    JSON.stringify({
      word_embedding_dimension: hidden,
      pooling_mode_cls_token: pooling === 'cls',
      pooling_mode_mean_tokens: pooling === 'mean',
      pooling_mode_max_tokens: false,
      pooling_mode_mean_sqrt_len_tokens: false,
    }),
  );
  writeFileSync(
    join(dir, 'modules.json'),
    JSON.stringify([
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]),
  );
  return { dir, vocab, rows, hidden };
}

/** Unit vector along axis `axis` of `dims`, plus `noise` × a seeded random direction (hand-made rows). */
export function directionVector(dims, axis, { noise = 0.1, seed = axis + 1 } = {}) {
  const v = normals(dims, prng(seed), noise / Math.sqrt(dims));
  v[axis] += 1;
  return v;
}

/** A seeded random unit vector of `dims` (a hand-made model's row for a word of no chosen topic). */
export function randomUnit(dims, seed) {
  const v = normals(dims, prng(seed));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}
