// Where the API commands find the exchange and the token (docs/cli.md):
// `gpux login` keeps them in the user's config directory, readable by the
// user alone (0600); GPUX_URL and GPUX_API_TOKEN override what is kept.
// GPUX_TOKEN is the agent's and is never read here.

import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

import { CliError, EXIT, UsageError } from './exit.js';

export interface Login {
  /** The exchange's base URL, without a trailing slash. */
  readonly url: string;
  readonly token: string;
}

export interface ResolvedLogin extends Login {
  readonly urlFrom: 'GPUX_URL' | 'config';
  readonly tokenFrom: 'GPUX_API_TOKEN' | 'config';
  /** The config file read (whether or not it exists). */
  readonly path: string;
}

/** `$XDG_CONFIG_HOME/gpux/config.json`, or `~/.config/gpux/config.json`. */
export function configPath(env: NodeJS.ProcessEnv): string {
  const xdg = env['XDG_CONFIG_HOME'];
  const base = xdg !== undefined && xdg !== '' ? xdg : join(env['HOME'] ?? homedir(), '.config');
  return join(base, 'gpux', 'config.json');
}

/** A base URL as the commands use it: http(s), no trailing slash. */
export function normalizeUrl(text: string, from: string): string {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    throw new UsageError(`${from} is not a URL: ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`${from} must be an http:// or https:// URL: ${text}`);
  }
  if (url.search !== '' || url.hash !== '') {
    throw new UsageError(`${from} must be the exchange's base URL, without ? or #: ${text}`);
  }
  return url.href.replace(/\/+$/, '');
}

/** A token as kept: trimmed, one word. */
export function normalizeToken(text: string, from: string): string {
  const token = text.trim();
  if (token === '') throw new UsageError(`${from} is empty`);
  if (/\s/.test(token)) throw new UsageError(`${from} must be one word, without spaces`);
  return token;
}

/** The kept login, or undefined when there is no file. */
export function readLogin(path: string): Login | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError(`cannot read ${path}: ${(e as Error).message}`, EXIT.usage);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${path} is not JSON: run gpux login again`);
  }
  const o = parsed as Partial<Record<keyof Login, unknown>>;
  if (
    typeof o !== 'object' ||
    o === null ||
    typeof o.url !== 'string' ||
    typeof o.token !== 'string'
  ) {
    throw new UsageError(`${path} lacks "url" and "token": run gpux login again`);
  }
  return { url: o.url, token: o.token };
}

/**
 * Keeps `login` at `path`, readable and writable by the user alone: written
 * to a new 0600 file beside it, then renamed over the old one, so no reader
 * sees half a file and no other user ever could read the token.
 */
export function writeLogin(path: string, login: Login): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const next = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(next, `${JSON.stringify({ url: login.url, token: login.token }, null, 2)}\n`, {
      mode: 0o600,
    });
    // The mode of a new file is masked by the umask; 0600 is meant.
    chmodSync(next, 0o600);
    renameSync(next, path);
  } finally {
    rmSync(next, { force: true });
  }
}

/** Forgets the kept login; true when there was one. */
export function removeLogin(path: string): boolean {
  try {
    rmSync(path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

const NOT_LOGGED_IN = 'run gpux login --url URL --token TOKEN, or set GPUX_URL and GPUX_API_TOKEN';

/** The exchange and token to use: the environment's, else the kept login's. */
export function resolveLogin(env: NodeJS.ProcessEnv): ResolvedLogin {
  const path = configPath(env);
  const envUrl = env['GPUX_URL'];
  const envToken = env['GPUX_API_TOKEN'];
  const hasUrl = envUrl !== undefined && envUrl !== '';
  const hasToken = envToken !== undefined && envToken !== '';
  const kept = hasUrl && hasToken ? undefined : readLogin(path);
  const url = hasUrl ? normalizeUrl(envUrl, 'GPUX_URL') : kept?.url;
  const token = hasToken ? normalizeToken(envToken, 'GPUX_API_TOKEN') : kept?.token;
  if (url === undefined || token === undefined) {
    throw new CliError(`not logged in: ${NOT_LOGGED_IN}`, EXIT.unauthorized);
  }
  return {
    url,
    token,
    urlFrom: hasUrl ? 'GPUX_URL' : 'config',
    tokenFrom: hasToken ? 'GPUX_API_TOKEN' : 'config',
    path,
  };
}
