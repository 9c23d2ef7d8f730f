type Log = { log?: (message: string) => void; seed?: number };
type Answers = { fiveXX: number; hangs: number; samples: string[] };

export const IMPORT_CHUNK: number;
export const CROSS_TENANT_OPERATIONS: readonly { name: string; kind: 'read' | 'write' | 'claim' }[];
export function removeTempDirs(): void;
export function fuzz(
  options?: Log & { mode?: 'local' | 'keys'; requests?: number },
): Promise<Answers & { mode: string; routes: number; tools: number; requests: number; dropped: number; healthAfter: number; byStatus: Record<string, number> }>;
export function crossTenant(
  options?: Log & { operations?: number },
): Promise<Answers & { operations: number; attacks: number; controls: number; controlFailures: number; leaks: number; routes: number }>;
export function killDuringCapture(options?: Log & { kills?: number }): Promise<{ kills: number; acknowledged: number; lost: number; fiveXX: number }>;
export function killDuringImport(options?: Log & { kills?: number; lines?: number }): Promise<{
  kills: number;
  lines: number;
  chunk: number;
  left: number[];
  partial: number;
  incomplete: number;
  duplicates: number;
}>;
export function importUnderWrites(options?: Log & { lines?: number }): Promise<{
  lines: number;
  imported: number;
  importExit: number | null;
  importError: string | null;
  restWrites: number;
  acknowledged: number;
  http500: number;
  fiveXX: number;
  busy: number;
  busyWithoutRetryAfter: number;
  lost: number;
  samples: string[];
}>;
export function twoServers(options?: Log & { writes?: number }): Promise<{
  writes: number;
  acknowledged: number;
  fiveXX: number;
  busy: number;
  busyWithoutRetryAfter: number;
  lost: number;
  samples: string[];
}>;
export function lockHeldPastBound(options?: { boundMs?: number }): Promise<{
  healthWhileWaiting: number;
  rest: { status: number; retryAfter: string | null; code: string | undefined; message: string | undefined };
  tool: { isError: boolean; text: string };
  cli: { code: number | null; stderr: string };
  afterRelease: number;
}>;
type RaceCounts = { inside: number; refused: number; missing: number; leaked: number; outsideBytes: number };
export function knowledgeRace(options?: Log & { reads?: number; concurrency?: number; bin?: string }): Promise<{
  reads: number;
  concurrency: number;
  swaps: number;
  errors: number;
  syncs: number;
  indexLeaks: number;
  reportLeaks: number;
  directory: RaceCounts;
  file: RaceCounts;
  samples: string[];
}>;
