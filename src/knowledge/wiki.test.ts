import { describe, expect, it } from 'vitest';
import { parseWikiPage, slugify } from './wiki.js';

describe('parseWikiPage', () => {
  it('takes the title from front matter, then the first # heading, then any heading, then the file name', () => {
    expect(parseWikiPage('a.md', '---\ntitle: From Front\n---\n# Heading\n').title).toBe('From Front');
    expect(parseWikiPage('a.md', '## Second level\n\n# First level\n').title).toBe('First level');
    expect(parseWikiPage('a.md', '## Only this\n').title).toBe('Only this');
    expect(parseWikiPage('notes/my-page.md', 'No heading at all.\n').title).toBe('my-page');
  });

  it('records headings with their source lines (front matter and CRLF included)', () => {
    const page = parseWikiPage('a.md', '---\ntitle: T\n---\r\n# One\r\n\r\ntext\r\n\r\nTwo\r\n---\r\n\r\n### Three *bold*\r\n');
    expect(page.headings).toEqual([
      { depth: 1, text: 'One', slug: 'one', line: 4 },
      { depth: 2, text: 'Two', slug: 'two', line: 8 },
      { depth: 3, text: 'Three bold', slug: 'three-bold', line: 11 },
    ]);
  });

  it('collects wikilinks (alias, anchor, embed) and relative links, not code, URLs or anchors', () => {
    const page = parseWikiPage(
      'dir/page.md',
      [
        'See [[Other Page]], [[target|alias]] and ![[Embedded#Part]].',
        'Relative: [a](../top.md#sec), [b](sub/c%20d.md), [c](/root.md), [ext](https://x.org/a.md), [in](#here).',
        '`[[in code span]]`',
        '```',
        '[[in fence]]',
        '```',
        '- item with [[Listed]]',
      ].join('\n'),
    );
    expect(page.links.map((l) => [l.kind, l.target, l.anchor])).toEqual([
      ['wikilink', 'Other Page', null],
      ['wikilink', 'target', null],
      ['wikilink', 'Embedded', 'Part'],
      ['link', 'top.md', 'sec'],
      ['link', 'dir/sub/c d.md', null],
      ['link', 'root.md', null],
      ['wikilink', 'Listed', null],
    ]);
  });

  it('indexes the visible text: link text and aliases, not URLs', () => {
    const page = parseWikiPage('a.md', 'Read [the manual](https://example.com/guide) and [[target|the alias]].\n');
    expect(page.terms.split(' ')).toEqual(expect.arrayContaining(['read', 'manual', 'alia']));
    expect(page.terms).not.toContain('exampl');
  });

  it('slugify follows GitHub anchors', () => {
    expect(slugify('Hello, World!')).toBe('hello-world');
    expect(slugify('知识库 简介')).toBe('知识库-简介');
  });
});
