type Vocabulary = Map<string, number>;
type VectorOf = (token: string, id: number) => Float32Array | undefined;

export function bertVocabulary(words: readonly string[], size?: number): Vocabulary;
export function bertTokenizerJson(vocab: Vocabulary, options?: { lowercase?: boolean }): Record<string, unknown>;
export function safetensorsBytes(tensors: Record<string, { dtype: string; shape: number[]; data: ArrayBufferView }>): Buffer;
export function writeStaticModel(
  dir: string,
  options?: { words?: readonly string[]; vocabSize?: number; dims?: number; vectorOf?: VectorOf; seed?: number; dtype?: 'F32' | 'F16'; normalize?: boolean },
): { dir: string; vocab: Vocabulary; rows: number; dims: number };
export function writeOnnxModel(
  dir: string,
  options?: {
    words?: readonly string[];
    vocabSize?: number;
    layers?: number;
    hidden?: number;
    heads?: number;
    ffn?: number;
    maxPositions?: number;
    vectorOf?: VectorOf;
    seed?: number;
    pooling?: 'mean' | 'cls';
  },
): { dir: string; vocab: Vocabulary; rows: number; hidden: number };
export function directionVector(dims: number, axis: number, options?: { noise?: number; seed?: number }): Float32Array;
export function randomUnit(dims: number, seed: number): Float32Array;
