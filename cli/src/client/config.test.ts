// The kept login (issue 24): in the user's config directory, 0600;
// GPUX_URL / GPUX_API_TOKEN override it; GPUX_TOKEN (the agent's) is not read.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { configPath, normalizeUrl, readLogin, resolveLogin, writeLogin } from './config.js';
import type { CliError } from './exit.js';

const dir = mkdtempSync(join(tmpdir(), 'gpux-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('configPath', () => {
  it('is under XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configPath({ XDG_CONFIG_HOME: '/x', HOME: '/h' })).toBe('/x/gpux/config.json');
    expect(configPath({ XDG_CONFIG_HOME: '', HOME: '/h' })).toBe('/h/.config/gpux/config.json');
  });
});

describe('writeLogin', () => {
  it('writes a file only the user can read, even over a readable one', () => {
    const path = join(dir, 'a', 'gpux', 'config.json');
    mkdirSync(join(dir, 'a', 'gpux'), { recursive: true });
    writeFileSync(path, '{}');
    chmodSync(path, 0o644);
    writeLogin(path, { url: 'http://x', token: 'gpux_t' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readLogin(path)).toEqual({ url: 'http://x', token: 'gpux_t' });
  });
});

describe('resolveLogin', () => {
  const home = join(dir, 'home');
  writeLogin(configPath({ XDG_CONFIG_HOME: home }), {
    url: 'http://kept:8080',
    token: 'gpux_kept',
  });

  it('reads the kept login', () => {
    expect(resolveLogin({ XDG_CONFIG_HOME: home })).toMatchObject({
      url: 'http://kept:8080',
      token: 'gpux_kept',
      urlFrom: 'config',
      tokenFrom: 'config',
    });
  });

  it('lets GPUX_URL and GPUX_API_TOKEN override it, each on its own', () => {
    expect(
      resolveLogin({
        XDG_CONFIG_HOME: home,
        GPUX_URL: 'https://other/',
        GPUX_API_TOKEN: 'gpux_env',
      }),
    ).toMatchObject({
      url: 'https://other',
      token: 'gpux_env',
      urlFrom: 'GPUX_URL',
      tokenFrom: 'GPUX_API_TOKEN',
    });
    expect(resolveLogin({ XDG_CONFIG_HOME: home, GPUX_API_TOKEN: 'gpux_env' })).toMatchObject({
      url: 'http://kept:8080',
      token: 'gpux_env',
    });
  });

  it("never reads GPUX_TOKEN, the agent's: without a login it is not logged in (exit 3)", () => {
    const env = {
      XDG_CONFIG_HOME: join(dir, 'nobody'),
      GPUX_URL: 'http://x',
      GPUX_TOKEN: 'gpux_agent',
    };
    expect(() => resolveLogin(env)).toThrow(/not logged in/);
    try {
      resolveLogin(env);
    } catch (e) {
      expect((e as CliError).exitCode).toBe(3);
    }
  });
});

describe('normalizeUrl', () => {
  it('takes http(s) base URLs only', () => {
    expect(normalizeUrl('http://127.0.0.1:8080/', '--url')).toBe('http://127.0.0.1:8080');
    expect(() => normalizeUrl('ftp://x', '--url')).toThrow(/http/);
    expect(() => normalizeUrl('127.0.0.1:8080', '--url')).toThrow();
    expect(() => normalizeUrl('http://x/?a=1', '--url')).toThrow(/base URL/);
  });
});
