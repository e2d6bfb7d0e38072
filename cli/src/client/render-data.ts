// The human output of the data out of the exchange (issue 22): candles as a
// table (docs/api/orders.md), one line per account event
// (docs/api/account-events.md), webhooks and their deliveries
// (docs/api/webhooks.md).

import type { Schemas } from './api.js';
import { fields, money, pageLine, paint, signedMoney, table, text, time } from './output.js';
import type { Style } from './output.js';

type S = Schemas;

const SPANS: Readonly<Record<number, string>> = {
  60: '1 min',
  300: '5 min',
  900: '15 min',
  3600: '1 h',
  21600: '6 h',
  86400: '1 day',
};

/** A granularity in words: `1 h`, `5 min`. */
export function granularityText(seconds: number): string {
  return SPANS[seconds] ?? `${seconds} s`;
}

/** The candles; the range covered, and the --start of the next one when it has begun by `now`. */
export function showCandles(c: S['Candles'], style: Style, now = Date.now()): string {
  const rows = c.candles.map((k) => [
    time(k.time, style),
    money(k.open),
    money(k.high),
    money(k.low),
    money(k.close),
    String(k.volume_gpus),
    String(k.volume_gpu_hours),
    String(k.trades),
  ]);
  const head = `${c.gpu_type} in ${c.zone}, ${granularityText(c.granularity)} candles, $/GPU-h`;
  const next = Date.parse(c.end) < now ? `; next: --start ${c.end}` : '';
  return (
    `${paint(head, 'bold', style)}\n` +
    table(['time', 'open', 'high', 'low', 'close', 'gpus', 'gpu-hours', 'trades'], rows, style) +
    `${paint(`${time(c.start, style)} to ${time(c.end, style)}${next}`, 'dim', style)}\n`
  );
}

/** One event of GET /v1/account/stream, as its `data` is documented. */
export interface AccountEvent {
  readonly id: string;
  readonly seq: number | null;
  readonly type: string;
  readonly created_at: string;
  readonly data: Record<string, unknown>;
}

const str = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' ? String(v) : '';
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

function instance(d: Record<string, unknown>): string {
  return `${str(d['gpu_count'])}x${str(d['gpu_type'])} in ${str(d['zone'])}`;
}

/** What an event says, in a few words, by kind. */
export function eventSummary(e: AccountEvent, style: Style): string {
  const d = e.data;
  const refund = num(d['refund']);
  const refunded = refund === undefined ? '' : `, refund ${money(refund)}`;
  if (e.type === 'order.filled' || e.type === 'order.partially_filled') {
    const f = (d['fill'] ?? {}) as Record<string, unknown>;
    return (
      `${str(d['order_id'])} ${str(d['side'])} ${instance(d)}: ${str(f['gpus'])} GPUs at ` +
      `${money(num(f['price']))}/GPU-h for ${str(f['hours'])} h ` +
      `(${str(d['filled_gpus'])} of ${str(d['gpu_count'])} filled), lease ${str(f['lease_id'])}`
    );
  }
  if (e.type === 'order.cancelled') {
    return (
      `${str(d['order_id'])} ${str(d['side'])} ${instance(d)}: ${str(d['cancelled_gpus'])} GPUs ` +
      `cancelled (${str(d['reason'])}), ${str(d['filled_gpus'])} filled`
    );
  }
  if (e.type.startsWith('lease.')) {
    const why = d['end_reason'] === undefined ? '' : ` (${str(d['end_reason'])})`;
    return `${str(d['lease_id'])} ${instance(d)}: ${str(d['status'])}${why}${refunded}`;
  }
  if (e.type === 'transaction.posted') {
    const about = [d['order_id'], d['lease_id']].filter((x) => typeof x === 'string').join(' ');
    return (
      `${str(d['transaction_id'])} ${str(d['kind'])} ${signedMoney(num(d['amount']) ?? 0, style)}` +
      (about === '' ? '' : ` (${about})`)
    );
  }
  return JSON.stringify(d);
}

/** `2026-11-22 10:00:00 UTC  #12  order.filled  ord_… buy 8xh100 in us-west-1: …`. */
export function eventLine(e: AccountEvent, style: Style): string {
  const seq = e.seq === null ? '#-' : `#${e.seq}`;
  return `${time(e.created_at, style)}  ${paint(seq, 'dim', style)}  ${paint(e.type, 'bold', style)}  ${eventSummary(e, style)}\n`;
}

export function showWebhooks(list: S['WebhookList'], style: Style): string {
  const rows = list.webhooks.map((w) => [
    w.id,
    w.url,
    w.events.join(','),
    time(w.created_at, style),
  ]);
  return table(['webhook', 'url', 'events', 'created'], rows, style);
}

/** A new endpoint with its secret, which the API shows this once. */
export function showCreatedWebhook(w: S['CreatedWebhook'], style: Style): string {
  return (
    fields(
      [
        ['webhook', w.id],
        ['url', w.url],
        ['events', w.events.join(', ')],
        ['created', time(w.created_at, style)],
        ['secret', paint(w.secret, 'bold', style)],
      ],
      style,
    ) +
    paint(
      'Keep the secret now: it is shown this once, and verifies the Gpux-Signature of each delivery\n' +
        '(docs/api/webhooks.md). Lost, delete the webhook and create it again.',
      'yellow',
      style,
    ) +
    '\n'
  );
}

export function showWebhookDeleted(d: S['WebhookDeleted']): string {
  return `deleted ${d.webhook_id}: nothing more is sent to it\n`;
}

export function showTestQueued(t: S['WebhookTestQueued']): string {
  return `queued test delivery ${t.delivery_id} (webhook.test); its attempts: gpux webhooks deliveries\n`;
}

function deliveryStatus(d: S['WebhookDelivery'], style: Style): string {
  if (d.status === 'delivered') return paint('delivered', 'green', style);
  if (d.status === 'failed') return paint('failed', 'red', style);
  return paint(`pending, next ${time(d.next_attempt_at, style)}`, 'yellow', style);
}

/** The last attempt: its status code or error, and how long it took. */
function lastAttempt(d: S['WebhookDelivery']): string {
  const a = d.attempts.at(-1);
  if (a === undefined) return '-';
  const what = a.status_code === null ? text(a.error) : `HTTP ${a.status_code}`;
  return `${what} in ${a.duration_ms} ms`;
}

export function showDeliveries(page: S['WebhookDeliveryList'], style: Style): string {
  const rows = page.deliveries.map((d) => [
    d.id,
    d.seq === null ? '-' : String(d.seq),
    d.type,
    deliveryStatus(d, style),
    String(d.attempts.length),
    lastAttempt(d),
    time(d.created_at, style),
  ]);
  return (
    table(
      ['delivery', 'seq', 'event', 'status', 'attempts', 'last attempt', 'queued'],
      rows,
      style,
    ) + pageLine(page, page.deliveries.length, style)
  );
}
