import type { Command } from 'commander';
import { print, withCairn } from '../context.js';

/** `cairn keys create --user U`: prints the key once. */
export async function createKeyCommand(opts: { user: string; agent?: string; label?: string }, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    const { key, token } = await cairn.keys.create({ userId: opts.user, agentId: opts.agent, label: opts.label });
    print(token);
    cairn.log.info(`created key ${key.id} for user ${key.userId}${key.agentId ? `, agent ${key.agentId}` : ''}; it is not shown again`);
  });
}

/** `cairn keys list`: never the secrets. */
export async function listKeysCommand(opts: { json?: boolean }, cmd: Command): Promise<void> {
  await withCairn(
    cmd,
    async (cairn) => {
      const list = await cairn.keys.list();
      if (opts.json) return print(JSON.stringify(list, null, 2));
      if (list.length === 0) return print('No API keys.');
      for (const k of list) {
        const state = k.revokedAt ? `revoked ${k.revokedAt}` : 'active';
        print(`${k.id}  user=${k.userId} agent=${k.agentId ?? '*'}  created ${k.createdAt}  ${state}${k.label ? `  ${k.label}` : ''}`);
      }
    },
    { readOnly: true },
  );
}

/** `cairn keys revoke ID`. */
export async function revokeKeyCommand(id: string, _opts: unknown, cmd: Command): Promise<void> {
  await withCairn(cmd, async (cairn) => {
    await cairn.keys.revoke(id);
    print(`revoked ${id}`);
  });
}
