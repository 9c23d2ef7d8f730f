import type { Command } from 'commander';
import { print, withCairn } from '../context.js';

/** `cairn guide [TOPICS…]`: reasoning guides (no topics: the list of them). */
export async function guideCommand(topics: string[], _opts: unknown, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    print(topics.length === 0 ? cairn.history.guideTopics().join('\n') : cairn.history.reasoningGuide({ topics }).text);
  });
}

/** `cairn history prune`: applies `history.retention_days` now. */
export async function pruneHistoryCommand(_opts: unknown, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => print(`pruned ${await cairn.history.prune()} runs`));
}
