import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

function capture(options: Parameters<typeof createLogger>[0]) {
  const lines: string[] = [];
  return { log: createLogger({ ...options, write: (line) => lines.push(line) }), lines };
}

describe('createLogger', () => {
  it('text: `cairn: message` for info, the level named for warn and error, fields as key=value', () => {
    const { log, lines } = capture({ format: 'text' });
    log.info('listening on http://127.0.0.1:8420', { port: 8420 });
    log.warn('slow query', { route: '/v1/memories/:id', note: 'two words' });
    log.error('boom');
    log.debug('hidden at info');
    expect(lines).toEqual(['cairn: listening on http://127.0.0.1:8420 port=8420\n', 'cairn: warn: slow query route=/v1/memories/:id note="two words"\n', 'cairn: error: boom\n']);
  });

  it('json: one object per line with time, level, msg and the fields; undefined fields left out', () => {
    const { log, lines } = capture({ format: 'json', level: 'debug' });
    log.debug('request', { status: 200, key_id: undefined });
    expect(lines).toHaveLength(1);
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(record).toEqual({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), level: 'debug', msg: 'request', status: 200 });
  });

  it('drops lines below the configured level', () => {
    const { log, lines } = capture({ level: 'warn' });
    log.debug('a');
    log.info('b');
    log.warn('c');
    log.error('d');
    expect(lines).toEqual(['cairn: warn: c\n', 'cairn: error: d\n']);
  });
});
