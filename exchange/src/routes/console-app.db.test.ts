// The console's page and its live feed (issue 23, docs/console.md): the
// exchange serves the built page at /console with security headers, and
// GET /v1/console/events pushes the fleet and the lease counts to an
// operator as server-sent events, again when they change.

import { existsSync } from 'node:fs';

import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CONSOLE_APP_DIR } from '../console/static-files.js';
import { OPENAPI_PATH } from '../openapi.js';
import { ADMIN_TOKEN, testExchange } from '../market/testing/test-exchange.js';
import type { TestExchange } from '../market/testing/test-exchange.js';

let ex: TestExchange;
let url: string;

beforeAll(async () => {
  ex = await testExchange();
  url = await ex.listen();
});

afterAll(async () => {
  // fetch's aborted stream may keep its connection open now and then (seen:
  // 1 run in 3), and the app's close waits for every connection.
  ex?.app.server.closeAllConnections();
  await ex?.close();
});

describe('/console', () => {
  it('serves the page (or says how to build it) with headers that keep it from being framed', async () => {
    const bare = await ex.app.inject({ method: 'GET', url: '/console' });
    expect(bare.statusCode).toBe(302);
    expect(bare.headers.location).toBe('/console/');
    for (const path of ['/console/', '/console/fleet']) {
      const page = await ex.app.inject({ method: 'GET', url: path });
      expect(page.statusCode).toBe(existsSync(`${CONSOLE_APP_DIR}/index.html`) ? 200 : 503);
      expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(page.headers['x-frame-options']).toBe('DENY');
    }
    const missing = await ex.app.inject({ method: 'GET', url: '/console/assets/none.js' });
    expect(missing.statusCode).toBe(existsSync(`${CONSOLE_APP_DIR}/index.html`) ? 404 : 503);
  });
});

/** Reads a stream's text until `want` is in it. */
async function readUntil(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  want: RegExp,
  seen = '',
): Promise<string> {
  let text = seen;
  const decoder = new TextDecoder();
  while (!want.test(text)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended before ${String(want)}: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
  return text;
}

/**
 * The events' data that the OpenAPI document's schemas refuse (the console's
 * types are generated from them: exchange/console/src/types.ts).
 */
async function undocumented(text: string): Promise<string[]> {
  const doc = (await ex.app.inject({ method: 'GET', url: OPENAPI_PATH })).json<object>();
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats.default(ajv);
  ajv.addSchema(doc, 'openapi.json');
  const schemas = { fleet: 'Fleet', leases: 'ConsoleLeaseCounts' } as const;
  const problems: string[] = [];
  for (const [, event, data] of text.matchAll(/event: (fleet|leases)\ndata: (.*)\n\n/g)) {
    const validate = ajv.getSchema(
      `openapi.json#/components/schemas/${schemas[event as keyof typeof schemas]}`,
    );
    if (validate === undefined) problems.push(`no schema for ${event}`);
    else if (!validate(JSON.parse(data ?? '')))
      problems.push(`${event}: ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}

describe('GET /v1/console/events', () => {
  it('sends the fleet and the lease counts, and again when a node goes offline', async () => {
    const p = await ex.party('events');
    const clusterId = await ex.cluster(p, 1);
    const stop = new AbortController();
    const res = await fetch(`${url}/v1/console/events`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: stop.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await readUntil(reader, /event: leases\ndata: .*\n\n/);
    expect(first).toMatch(/event: fleet\ndata: .*"cluster_id":"cls_/);
    expect(first).toContain('"provisioning":0');
    expect(await undocumented(first)).toEqual([]);

    await ex.db.query("UPDATE nodes SET status = 'offline' WHERE cluster_id = $1", [clusterId]);
    const next = await readUntil(reader, /"nodes_offline":1/);
    expect(next).toContain(clusterId);
    expect(await undocumented(next)).toEqual([]);
    // Aborted (a cancelled body may keep its connection; afterAll closes what is left).
    stop.abort();

    // (Through inject: a kept-alive connection would hold the close up.)
    const customer = await ex.app.inject({
      method: 'GET',
      url: '/v1/console/events',
      headers: { authorization: `Bearer ${p.token}` },
    });
    expect(customer.statusCode).toBe(403);
  });
});
