import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load.js';

/** `mcp.allowedOrigins`: origins exactly as browsers send them, so a listed one always matches. */
describe('mcp.allowedOrigins', () => {
  it('defaults to none', () => {
    expect(parseConfig({}).mcp.allowedOrigins).toEqual([]);
  });

  it('takes origins as a browser writes them', () => {
    const origins = ['https://console.example.com', 'http://localhost:6274', 'http://[::1]:3000'];
    expect(parseConfig({ mcp: { allowedOrigins: origins } }).mcp.allowedOrigins).toEqual(origins);
  });

  it.each([
    ['a trailing slash', 'https://console.example.com/'],
    ['a path', 'https://console.example.com/app'],
    ['upper case', 'https://Console.example.com'],
    ['a default port', 'https://console.example.com:443'],
    ['another scheme', 'ftp://console.example.com'],
    ['a wildcard', '*'],
  ])('refuses %s with one line naming the key', (_what, origin) => {
    const parse = () => parseConfig({ mcp: { allowedOrigins: [origin] } });
    expect(parse).toThrow(ConfigError);
    expect(parse).toThrow(/mcp\.allowedOrigins\.0.*must be an origin/);
  });
});
