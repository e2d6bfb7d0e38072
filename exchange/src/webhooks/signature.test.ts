// The deliveries' signature (signature.ts, docs/api/webhooks.md): what a
// receiver checks, and the five-minute replay window.

import { createHmac } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { REPLAY_WINDOW_S, newSecret, signature, verify } from './signature.js';

describe('webhook signatures', () => {
  const secret = newSecret();
  const body = '{"id":"evt_1","seq":1}';
  const t = 1_800_000_000;

  it('is t=<seconds>,v1=<hex HMAC-SHA256 of "t.body"> keyed with the secret text', () => {
    const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    expect(signature(secret, body, t)).toBe(`t=${t},v1=${v1}`);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
  });

  it('verifies within the replay window only, and not another body or secret', () => {
    const header = signature(secret, body, t);
    expect(verify(secret, body, header, t)).toBe(true);
    expect(verify(secret, body, header, t + REPLAY_WINDOW_S)).toBe(true);
    expect(verify(secret, body, header, t + REPLAY_WINDOW_S + 1)).toBe(false);
    expect(verify(secret, `${body} `, header, t)).toBe(false);
    expect(verify(newSecret(), body, header, t)).toBe(false);
    expect(verify(secret, body, undefined, t)).toBe(false);
    expect(verify(secret, body, 't=abc,v1=00', t)).toBe(false);
  });
});
