// The console's calls: same-origin fetches that carry the session cookie
// (never a token), with the session's CSRF token on every change.

import type { GpuType, Zone } from './types.js';

let csrf = '';

export function setCsrf(token: string): void {
  csrf = token;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrf;
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const e = (json['error'] ?? {}) as { code?: string; message?: string };
    throw new ApiError(res.status, e.code ?? 'error', e.message ?? `HTTP ${res.status}`);
  }
  return json as T;
}

export const get = <T>(path: string): Promise<T> => api<T>('GET', path);

export const money = (n: number | null | undefined): string =>
  n === null || n === undefined
    ? '–'
    : n.toLocaleString('en-US', { style: 'currency', currency: 'USD' });

export const when = (iso: string | null | undefined): string =>
  iso === null || iso === undefined ? '–' : new Date(iso).toLocaleString();

export const GPU_TYPES = ['h100', 'h200', 'b200', 'b300'] as const satisfies GpuType[];
export const ZONES = ['us-west-1', 'us-east-1', 'eu-west-1'] as const satisfies Zone[];

// Every GPU type and zone of the API's schemas is listed (a book the API
// gained would be missing from the Markets and Actions pages): a value
// missing is named by the type error here.
type Listed<All, L extends readonly unknown[]> = [Exclude<All, L[number]>] extends [never]
  ? true
  : Exclude<All, L[number]>;
const _everyGpuType: Listed<GpuType, typeof GPU_TYPES> = true;
const _everyZone: Listed<Zone, typeof ZONES> = true;
