/** Severity of a log line; a logger drops lines below its configured level. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** `text`: `cairn: …` lines for people; `json`: one JSON object per line for log collectors. */
export type LogFormat = 'text' | 'json';

/** Extra fields of a line: plain values only (never secrets or message contents). */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** Where Cairn's operational lines go: always stderr (stdout belongs to MCP stdio and command output). */
export interface Logger {
  readonly level: LogLevel;
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

export type LoggerOptions = {
  /** Default `text`. */
  format?: LogFormat;
  /** Default `info`. */
  level?: LogLevel;
  /** Default process.stderr. */
  write?: (line: string) => void;
};

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/**
 * A logger writing one line per call. Text lines read `cairn: <message>` (info and debug) or
 * `cairn: <level>: <message>`, then ` key=value` per field; JSON lines are `{time, level, msg, …fields}`.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'text';
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const emit = (at: LogLevel, message: string, fields: LogFields = {}) => {
    if (RANK[at] < RANK[level]) return;
    if (format === 'json') {
      write(JSON.stringify({ time: new Date().toISOString(), level: at, msg: message, ...fields }) + '\n');
      return;
    }
    const prefix = at === 'warn' || at === 'error' ? `cairn: ${at}: ` : 'cairn: ';
    const extra = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => ` ${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`)
      .join('');
    write(`${prefix}${message}${extra}\n`);
  };
  return {
    level,
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}
