import { describe, expect, it } from 'vitest';
import { redactUrl } from './redact-url.js';

describe('redactUrl', () => {
  it('hides the password and secret-named query parameters', () => {
    expect(redactUrl('postgres://cairn:s3cret@db.example:5433/cairn?sslmode=require')).toBe('postgres://cairn:***@db.example:5433/cairn?sslmode=require');
    expect(redactUrl('postgresql://db.example/cairn?password=s3cret')).toBe('postgresql://db.example/cairn?password=***');
    expect(redactUrl('https://mcp.example/sse?api_key=k1&token=t2&page=2')).toBe('https://mcp.example/sse?api_key=***&token=***&page=2');
  });

  it('gives a URL with nothing to hide back as it was written', () => {
    expect(redactUrl('postgres://cairn@db.example/cairn')).toBe('postgres://cairn@db.example/cairn');
    expect(redactUrl('http://127.0.0.1:3000')).toBe('http://127.0.0.1:3000');
  });

  it('shows only the scheme of a URL that does not parse, since its password cannot be found', () => {
    expect(redactUrl('postgres://cairn:s3cret@[bad')).toBe('postgres://***');
    expect(redactUrl('http://u:s3cret@host:99999999/')).toBe('http://***');
  });
});
