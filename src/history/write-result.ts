import { existsSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { extname, join } from 'node:path';
import { z } from 'zod';
import { CairnError, describeError } from '../errors.js';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../private-files.js';
import { checkHtml } from './html-check.js';

/** Parameters of write_result; unknown fields are refused (a misspelt `fileName` must not silently pick a default name). */
export const writeResultParams = z.strictObject({
  content: z
    .string({ error: 'content is required' })
    .refine((s) => s.trim() !== '', 'content must not be empty')
    .describe('The complete file in the chosen format, not a diff.'),
  format: z
    .enum(['md', 'html'], { error: 'format must be md or html' })
    .optional()
    .describe('md (default): a Markdown report. html: one self-contained HTML page, checked before it is written.'),
  filename: z
    .string({ error: 'filename must be a string' })
    .optional()
    .describe(
      'File name in the output directory (default report-YYYYMMDD-HHMMSS); a plain name, no folders. The format extension is added when missing; a taken name gets a -2, -3 … suffix.',
    ),
});
export type WriteResultParams = z.infer<typeof writeResultParams>;

/** The write receipt. */
export type WriteResultReceipt = { path: string; format: 'md' | 'html'; bytes: number; lines: number; text: string };

/** Largest file write_result writes, in bytes. */
export const MAX_RESULT_BYTES = 20 * 1024 * 1024;
/** Characters of the first and last line the receipt quotes. */
const RECEIPT_LINE_CHARS = 128;
/** Suffixes tried after a name is taken (`-2` … `-999`). */
const MAX_SUFFIX = 999;
/** Longest `filename` accepted, in characters. */
const MAX_FILENAME_CHARS = 120;
const EXTENSIONS: Readonly<Record<'md' | 'html', readonly string[]>> = { md: ['.md', '.markdown'], html: ['.html', '.htm'] };

/**
 * Where results go: `history.output_dir` when set, else `~/Downloads` when it exists, else
 * `<data_dir>/download` (`$CAIRN_HOME/download`).
 */
export function resolveOutputDir(outputDir: string | undefined, dataDir: string, home: string = homedir()): string {
  if (outputDir !== undefined) return outputDir;
  const downloads = join(home, 'Downloads');
  try {
    if (statSync(downloads).isDirectory()) return downloads;
  } catch {
    // No Downloads folder: fall through to the data directory.
  }
  return join(dataDir, 'download');
}

/** write_result: saves one long-form deliverable as `report-YYYYMMDD-HHMMSS.<md|html>`, never overwriting a file. */
export class ResultWriter {
  /** `htmlRules`: the html_render guide, quoted in the refusal of a page that does not mount QuickUI. */
  constructor(
    private readonly dir: string,
    private readonly clock: () => Date = () => new Date(),
    private readonly htmlRules: () => string = () => '',
  ) {}

  write(params: WriteResultParams): WriteResultReceipt {
    const format = params.format ?? 'md';
    const name = params.filename === undefined ? { base: `report-${stamp(this.clock())}`, ext: format } : fileName(params.filename, format);
    const bytes = Buffer.byteLength(params.content);
    if (bytes > MAX_RESULT_BYTES) throw new CairnError('payload_too_large', `content is ${bytes} bytes; write_result writes at most ${MAX_RESULT_BYTES}`);
    if (format === 'html') {
      const { problems, mountsQuickUi } = checkHtml(params.content);
      if (problems.length > 0) {
        const rules = mountsQuickUi ? '' : this.htmlRules().trim();
        throw new CairnError(
          'invalid_input',
          `the HTML page was not written; fix every problem and call write_result again:\n${problems.map((p) => `- ${p}`).join('\n')}` + (rules === '' ? '' : `\n\n${rules}`),
        );
      }
    }
    try {
      makePrivateDir(this.dir);
    } catch (err) {
      throw new CairnError('unavailable', `cannot create the output directory ${this.dir}: ${describeError(err)}`, { cause: err });
    }
    const path = this.writeNew(name.base, name.ext, params.content);
    const lines = lineCount(params.content);
    const all = params.content.split(/\r?\n/);
    const first = all.find((l) => l.trim() !== '') ?? '';
    const last = [...all].reverse().find((l) => l.trim() !== '') ?? '';
    const text = [`created ${path} (${bytes} bytes, ${lines} lines)`, `first line: ${first.slice(0, RECEIPT_LINE_CHARS)}`, `last line: ${last.slice(0, RECEIPT_LINE_CHARS)}`].join(
      '\n',
    );
    return { path, format, bytes, lines, text };
  }

  /** Creates `<base>.<ext>`, or `<base>-2.<ext>`, `-3` … when taken; the exclusive flag makes a race lose, not overwrite. */
  private writeNew(base: string, ext: string, content: string): string {
    for (let n = 1; n <= MAX_SUFFIX; n++) {
      const path = join(this.dir, `${base}${n === 1 ? '' : `-${n}`}.${ext}`);
      if (existsSync(path)) continue;
      try {
        writeFileSync(path, content, { flag: 'wx', mode: PRIVATE_FILE_MODE });
        return path;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw new CairnError('unavailable', `cannot write ${path}: ${describeError(err)}`, { cause: err });
      }
    }
    throw new CairnError('conflict', `${base}.${ext} and its ${MAX_SUFFIX - 1} suffixed names are all taken in ${this.dir}`);
  }
}

/**
 * A caller's `filename` as base and extension: a plain name that stays in the output directory (no
 * folders, no leading dot, no control or reserved characters), with the format's extension added when it
 * has none and refused when it has the other format's.
 */
function fileName(filename: string, format: 'md' | 'html'): { base: string; ext: string } {
  const name = filename.trim();
  const refuse = (why: string) => new CairnError('invalid_input', `invalid write_result.filename '${filename}': ${why}; nothing was written`);
  if (name === '') throw refuse('it is empty (leave it out for report-YYYYMMDD-HHMMSS)');
  if (name.length > MAX_FILENAME_CHARS) throw refuse(`it is longer than ${MAX_FILENAME_CHARS} characters`);
  if (/[/\\]/.test(name)) throw refuse('it must be a plain file name in the output directory, without folders');
  if (name.startsWith('.')) throw refuse('it must not start with a dot');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f<>:"|?*]/.test(name)) throw refuse('it holds a control character or one of < > : " | ? *');
  const ext = extname(name).toLowerCase();
  if (EXTENSIONS[format].includes(ext)) return { base: name.slice(0, -ext.length), ext: ext.slice(1) };
  const other = format === 'md' ? 'html' : 'md';
  if (EXTENSIONS[other].includes(ext)) throw refuse(`its extension ${ext} is not that of format ${format}`);
  return { base: name, ext: format };
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split(/\r?\n/).length - (text.endsWith('\n') ? 1 : 0);
}
