// A webhook receiver on 127.0.0.1 as docs/api/webhooks.md tells a customer
// to write one: each path its own endpoint with its own secret; every
// delivery's signature checked over the raw body (`verify` of
// exchange/src/webhooks/signature.ts, the documented recipe); answers 500 to
// an endpoint's first `failFirst` deliveries, 2xx after; deduplicates by
// Gpux-Event-Id.

import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

import { verify } from '../signature.js';

export interface Receipt {
  readonly eventId: string;
  readonly seq: number | null;
  readonly type: string;
  /** What the receiver answered. */
  readonly status: number;
}

export interface ReceiverEndpoint {
  readonly url: string;
  /** The endpoint's `whsec_…`, once registered. */
  secret: string;
  /** Deliveries still to answer with 500. */
  failFirst: number;
  readonly receipts: Receipt[];
  /** Deliveries refused for a bad signature or a body that disagrees with its headers. */
  readonly refused: string[];
  /** Event ids answered 2xx at least once. */
  readonly delivered: Set<string>;
}

export class WebhookReceiver {
  private readonly endpoints = new Map<string, ReceiverEndpoint>();
  private readonly server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => res.writeHead(this.receive(req, body)).end());
  });
  private base = '';

  async listen(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** A new endpoint at /<name>, answering 500 to its first `failFirst` deliveries. */
  endpoint(name: string, failFirst: number): ReceiverEndpoint {
    const e: ReceiverEndpoint = {
      url: `${this.base}/${name}`,
      secret: '',
      failFirst,
      receipts: [],
      refused: [],
      delivered: new Set(),
    };
    this.endpoints.set(`/${name}`, e);
    return e;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** The status to answer one delivery with. */
  private receive(req: http.IncomingMessage, body: string): number {
    const e = this.endpoints.get(req.url ?? '');
    if (e === undefined) return 404;
    const header = req.headers['gpux-signature'];
    const signed = verify(
      e.secret,
      body,
      typeof header === 'string' ? header : undefined,
      Math.floor(Date.now() / 1000),
    );
    const event = JSON.parse(body) as { id: string; seq: number | null; type: string };
    const eventId = req.headers['gpux-event-id'];
    if (!signed || eventId !== event.id) {
      e.refused.push(`${String(header)} ${String(eventId)} ${body}`);
      return 400;
    }
    const status = e.failFirst > 0 ? 500 : 200;
    if (status === 500) e.failFirst--;
    else e.delivered.add(event.id);
    e.receipts.push({ eventId: event.id, seq: event.seq, type: event.type, status });
    return status;
  }
}

/** An endpoint's event numbers answered 2xx, in the order first delivered. */
export function deliveredSeqs(e: ReceiverEndpoint): number[] {
  const seen: number[] = [];
  for (const r of e.receipts)
    if (r.status < 300 && r.seq !== null && !seen.includes(r.seq)) seen.push(r.seq);
  return seen;
}
