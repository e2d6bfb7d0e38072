import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { SILENT_LOGGER } from '../../logger.js';
import { selfSigned, servedSerial } from '../../testing/certificates.js';
import { AdmissionWebhookServer } from './webhook-server.js';

const ID = 'lse_01jdq3m5x0aaaaaaaaaaaaaaaa';
const NS = 'gpux-lse-01jdq3m5x0aaaaaaaaaaaaaaaa';

let ca: Buffer;
let server: AdmissionWebhookServer;
let port: number;

beforeAll(async () => {
  const pair = selfSigned('gpux-agent-webhook');
  ca = pair.cert;
  server = new AdmissionWebhookServer({
    host: '127.0.0.1',
    port: 0,
    certPem: ca,
    keyPem: pair.key,
    leaseOfNamespace: (ns) => {
      if (ns === 'broken') return Promise.reject(new Error('API unreachable'));
      return Promise.resolve(ns === NS ? ID : undefined);
    },
    logger: SILENT_LOGGER,
  });
  port = (await server.start()).port;
});

afterAll(async () => {
  await server.close();
});

function post(body: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate-pods?timeout=10s',
        method: 'POST',
        ca,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            json: text === '' ? undefined : (JSON.parse(text) as unknown),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

function review(namespace: string): unknown {
  return {
    kind: 'AdmissionReview',
    apiVersion: 'admission.k8s.io/v1',
    request: {
      uid: 'e911857d-c318-11e8-bbad-025000000001',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:x:y', groups: ['system:authenticated'] },
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { generateName: 'job-' },
        spec: { containers: [{ name: 'c', image: 'busybox' }] },
      },
      oldObject: null,
      dryRun: false,
    },
  };
}

describe('the admission webhook over HTTPS (AdmissionReview v1)', () => {
  it("answers a lease namespace's pod with the placement patch", async () => {
    const { status, json } = await post(review(NS));
    expect(status).toBe(200);
    const answer = json as {
      response: { uid: string; allowed: boolean; patchType: string; patch: string };
    };
    expect(answer).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'e911857d-c318-11e8-bbad-025000000001',
        allowed: true,
        patchType: 'JSONPatch',
      },
    });
    const patch = JSON.parse(Buffer.from(answer.response.patch, 'base64').toString('utf8')) as {
      path: string;
      value: unknown;
    }[];
    expect(patch.map((p) => p.path)).toEqual([
      '/spec/nodeSelector',
      '/spec/affinity',
      '/spec/tolerations',
    ]);
    expect(patch[0]?.value).toEqual({ 'gpux.io/lease': ID });
  });

  it('lets pods of other namespaces through, refuses when the namespace cannot be read', async () => {
    expect((await post(review('default'))).json).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'e911857d-c318-11e8-bbad-025000000001', allowed: true },
    });
    expect((await post(review('broken'))).json).toMatchObject({
      response: { allowed: false, status: { code: 503 } },
    });
    expect((await post({ hello: 'world' })).status).toBe(400);
  });
});

describe('a renewed certificate (issue 23)', () => {
  it('is presented to new connections once set, without a restart', async () => {
    const before = await servedSerial(port);
    expect(before).toBe(new X509Certificate(ca).serialNumber);
    const renewed = selfSigned('gpux-agent-webhook');
    server.setCertificate(renewed.cert, renewed.key);
    expect(await servedSerial(port)).toBe(new X509Certificate(renewed.cert).serialNumber);
    // And it still answers, verified against the new certificate.
    const res = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/healthz', ca: renewed.cert }, (r) =>
        resolve(r.statusCode ?? 0),
      );
      req.on('error', reject);
      req.end();
    });
    expect(res).toBe(200);
  });
});
