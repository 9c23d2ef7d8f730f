import { z } from 'zod';
import { MEMORY_TYPES, MESSAGE_ROLES } from '../types.js';

/** Limits on stored text; inputs beyond them are rejected, never truncated. */
export const LIMITS = {
  idLength: 256,
  sessionKeyLength: 256,
  messageLength: 200_000,
  memoryLength: 20_000,
  sceneLength: 200,
  timestampLength: 100,
  scopeIdLength: 256,
} as const;

const nonBlank = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => s.trim() !== '', 'must not be empty');

export const scopeSchema = z.object({
  userId: nonBlank(LIMITS.scopeIdLength),
  agentId: nonBlank(LIMITS.scopeIdLength),
});

export const newMessageSchema = z.object({
  id: nonBlank(LIMITS.idLength).optional(),
  scope: scopeSchema,
  sessionKey: nonBlank(LIMITS.sessionKeyLength),
  role: z.enum(MESSAGE_ROLES),
  content: nonBlank(LIMITS.messageLength),
  name: nonBlank(LIMITS.idLength).nullish(),
  timestamp: z.string().max(LIMITS.timestampLength).nullish(),
});

const memoryFields = {
  content: nonBlank(LIMITS.memoryLength),
  type: z.enum(MEMORY_TYPES),
  priority: z.number().int().min(-1000).max(1000),
  sceneName: z.string().max(LIMITS.sceneLength),
  activityStart: z.string().max(LIMITS.timestampLength).nullable(),
  activityEnd: z.string().max(LIMITS.timestampLength).nullable(),
  sourceMessageIds: z.array(nonBlank(LIMITS.idLength)).max(1000),
};

export const newMemorySchema = z.object({
  id: nonBlank(LIMITS.idLength).optional(),
  content: memoryFields.content,
  type: memoryFields.type,
  priority: memoryFields.priority.optional(),
  sceneName: memoryFields.sceneName.optional(),
  activityStart: memoryFields.activityStart.optional(),
  activityEnd: memoryFields.activityEnd.optional(),
  sourceMessageIds: memoryFields.sourceMessageIds.optional(),
});

export const memoryPatchSchema = z
  .object({
    content: memoryFields.content,
    type: memoryFields.type,
    priority: memoryFields.priority,
    sceneName: memoryFields.sceneName,
    activityStart: memoryFields.activityStart,
    activityEnd: memoryFields.activityEnd,
    sourceMessageIds: memoryFields.sourceMessageIds,
  })
  .partial()
  .refine((p) => Object.values(p).some((v) => v !== undefined), 'a patch must change at least one field');

/** One page of a listing: at most 1000 rows (default 50), after skipping `offset` (default 0). */
const page = {
  limit: z.number().int().min(1).max(1000).default(50),
  offset: z.number().int().min(0).default(0),
};

export const listMessagesSchema = z.strictObject({ sessionKey: nonBlank(LIMITS.sessionKeyLength).optional(), ...page });

export const listMemoriesSchema = z.strictObject({
  type: z.enum(MEMORY_TYPES).optional(),
  scene: z.string().max(LIMITS.sceneLength).optional(),
  includeSuperseded: z.boolean().optional(),
  ...page,
});
