import type { Pooling } from './onnx-model.js';

/** The two folder layouts a local model comes in. */
export type ModelKind = 'static' | 'transformer';

/** A model `cairn models list` knows: what it is, what it costs, and which files make it. */
export type KnownModel = {
  /** The Hugging Face Hub id, also `embedding.model`. */
  id: string;
  kind: ModelKind;
  dimensions: number;
  languages: string;
  licence: string;
  /** Approximate download in MB (every file below). */
  sizeMb: number;
  /**
   * The Hub revision pulled: a commit id pins the files; `main` takes the Hub's current commit, which the
   * pull records with every file's SHA-256 in the folder's manifest (DESIGN.md, "Local models").
   */
  revision: string;
  /** Files to pull, as the Hub names them; each is checked against the SHA-256 (or git blob id) the Hub lists for the revision. */
  files: readonly string[];
  /** Transformer models: how token vectors are pooled, unless the folder's `1_Pooling/config.json` says. */
  pooling?: Pooling;
  /** Text put before a query / a stored text, as the model was trained (e5: `query: ` / `passage: `). */
  queryPrefix?: string;
  documentPrefix?: string;
  note: string;
};

const STATIC_FILES = ['config.json', 'tokenizer.json', 'model.safetensors'] as const;
const TRANSFORMER_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx'] as const;

/**
 * Local models Cairn knows by id, the recommended one first. Any other Hub id in either layout can be
 * pulled too (`cairn models pull ORG/NAME`); these add sizes, pooling and prefixes.
 */
export const KNOWN_MODELS: readonly KnownModel[] = [
  {
    id: 'minishlab/potion-base-8M',
    kind: 'static',
    dimensions: 256,
    languages: 'English',
    licence: 'MIT',
    sizeMb: 31,
    revision: 'main',
    files: STATIC_FILES,
    note: 'recommended: tens of thousands of texts per second on one core, no native runtime',
  },
  {
    id: 'minishlab/potion-retrieval-32M',
    kind: 'static',
    dimensions: 512,
    languages: 'English',
    licence: 'MIT',
    sizeMb: 130,
    revision: 'main',
    files: STATIC_FILES,
    note: 'static, tuned for retrieval; four times the table of potion-base-8M',
  },
  {
    id: 'minishlab/potion-multilingual-128M',
    kind: 'static',
    dimensions: 256,
    languages: '101 languages, Chinese included',
    licence: 'MIT',
    sizeMb: 513,
    revision: 'main',
    files: STATIC_FILES,
    note: 'static and multilingual; a 500k-token table',
  },
  {
    id: 'Xenova/all-MiniLM-L6-v2',
    kind: 'transformer',
    dimensions: 384,
    languages: 'English',
    licence: 'Apache-2.0',
    sizeMb: 91,
    revision: 'main',
    files: TRANSFORMER_FILES,
    pooling: 'mean',
    note: 'transformer (6 layers); needs onnxruntime-node; tens of texts per second per core',
  },
  {
    id: 'Xenova/bge-small-en-v1.5',
    kind: 'transformer',
    dimensions: 384,
    languages: 'English',
    licence: 'MIT',
    sizeMb: 134,
    revision: 'main',
    files: TRANSFORMER_FILES,
    pooling: 'cls',
    queryPrefix: 'Represent this sentence for searching relevant passages: ',
    note: 'transformer (12 layers); needs onnxruntime-node',
  },
  {
    id: 'Xenova/multilingual-e5-small',
    kind: 'transformer',
    dimensions: 384,
    languages: '~100 languages, Chinese included',
    licence: 'MIT',
    sizeMb: 472,
    revision: 'main',
    files: TRANSFORMER_FILES,
    pooling: 'mean',
    queryPrefix: 'query: ',
    documentPrefix: 'passage: ',
    note: 'transformer (12 layers), multilingual; needs onnxruntime-node',
  },
];

/** The model `provider: local` uses when `embedding.model` names none. */
export const DEFAULT_LOCAL_MODEL = KNOWN_MODELS[0]!.id;

/** The known model with this id (case as the Hub spells it), or undefined. */
export function knownModel(id: string): KnownModel | undefined {
  return KNOWN_MODELS.find((m) => m.id === id);
}
