import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCairnError } from '../errors.js';
import { parseLenientJson } from './lenient-json.js';

describe('parseLenientJson', () => {
  it('parses plain JSON', () => {
    expect(parseLenientJson('[{"a": 1}]')).toEqual([{ a: 1 }]);
  });

  it('takes the JSON out of a code fence with prose around it', () => {
    expect(parseLenientJson('Here you go:\n```json\n[{"a": 1}]\n```\nAnything else?')).toEqual([{ a: 1 }]);
    expect(parseLenientJson('```\n{"b": true}\n```')).toEqual({ b: true });
  });

  it('skips leading prose and reasoning blocks', () => {
    expect(parseLenientJson('<think>maybe [1]?</think>Sure! The memories are: [{"a": "x"}] Hope this helps.')).toEqual([{ a: 'x' }]);
  });

  it('drops trailing commas', () => {
    expect(parseLenientJson('[{"a": 1, "b": [1, 2,],},]')).toEqual([{ a: 1, b: [1, 2] }]);
  });

  it('escapes raw control characters inside strings', () => {
    expect(parseLenientJson('[{"content": "line one\nline two\tend"}]')).toEqual([{ content: 'line one\nline two\tend' }]);
  });

  it('reads smart quotes and Python literals', () => {
    expect(parseLenientJson('{“ok”: True, “none”: None, “no”: False}')).toEqual({ ok: true, none: null, no: false });
  });

  it('keeps looking past a value of the wrong shape', () => {
    const objects = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'object');
    expect(parseLenientJson('Step [1] done. Result: [{"a": 1}]', objects)).toEqual([{ a: 1 }]);
  });

  it('fails with llm_failed when nothing can be recovered', () => {
    for (const text of ['no json here', '[{"a": 1', '']) {
      try {
        parseLenientJson(text);
        expect.unreachable();
      } catch (err) {
        expect(isCairnError(err, 'llm_failed')).toBe(true);
      }
    }
  });

  it('round-trips any JSON value, fenced or wrapped in prose', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom('', 'Answer: ', '```json\n'), (value, prefix) => {
        const text = `${prefix}${JSON.stringify([value])}${prefix.startsWith('```') ? '\n```' : ''}`;
        expect(parseLenientJson(text)).toEqual(JSON.parse(JSON.stringify([value])));
      }),
    );
  });
});
