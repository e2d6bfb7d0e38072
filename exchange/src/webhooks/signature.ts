// A webhook delivery's signature (docs/api/webhooks.md): the header
// `Gpux-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`,
// keyed with the endpoint's secret (its whsec_… text, as UTF-8 bytes), as
// Stripe does. A receiver recomputes it and refuses a `t` more than five
// minutes from its own clock.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'gpux-signature';
/** How far a receiver should accept `t` from its own clock (s). */
export const REPLAY_WINDOW_S = 300;

export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function signature(secret: string, body: string, t: number): string {
  const v1 = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

/** What a receiver does (the documented example, and the tests' receiver). */
export function verify(
  secret: string,
  body: string,
  header: string | undefined,
  nowS: number,
): boolean {
  const parts = new Map(
    (header ?? '').split(',').map((p) => p.split('=', 2) as [string, string | undefined]),
  );
  const t = Number(parts.get('t'));
  const v1 = parts.get('v1') ?? '';
  if (!Number.isInteger(t) || Math.abs(nowS - t) > REPLAY_WINDOW_S) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  const given = Buffer.from(v1, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
