// The mutating admission webhook the agent serves over HTTPS (issue 13):
// the API server posts an AdmissionReview v1 for every pod created in a
// lease's namespace (the MutatingWebhookConfiguration selects namespaces by
// the lease label, failurePolicy Fail), and gets back the JSON Patch of
// placement.ts: the lease's node selector, affinity and tolerations. A
// renewed certificate is put in use without a restart (setCertificate, from
// the files' watcher in provisioners.ts); connections already open keep the
// one they were made with.

import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';

import type { Logger } from '../../logger.js';
import { admissionResponse, parseAdmissionReview } from './placement.js';

export interface WebhookServerOptions {
  readonly host: string;
  readonly port: number;
  readonly certPem: Buffer;
  readonly keyPem: Buffer;
  /** The lease a namespace belongs to (its label); undefined: none; throws: cannot tell. */
  readonly leaseOfNamespace: (namespace: string) => Promise<string | undefined>;
  readonly logger: Logger;
}

const MAX_BODY = 3 * 1024 * 1024;

export class AdmissionWebhookServer {
  private readonly server: Server;

  constructor(private readonly o: WebhookServerOptions) {
    this.server = createServer({ cert: o.certPem, key: o.keyPem }, (req, res) => {
      if (req.method === 'GET' && (req.url === '/healthz' || req.url === '/readyz')) {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        return;
      }
      if (req.method !== 'POST') {
        res.writeHead(405).end();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy();
        else chunks.push(c);
      });
      req.on('end', () => {
        void this.answer(Buffer.concat(chunks)).then(
          ({ status, body }) => {
            res.writeHead(status, { 'content-type': 'application/json' }).end(body);
          },
          (err: unknown) => {
            this.o.logger.error({ err }, 'admission webhook failed');
            res.writeHead(500).end();
          },
        );
      });
    });
  }

  async start(): Promise<{ host: string; port: number }> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port, this.o.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.address();
  }

  /** From now on new connections get this certificate (checked by the caller: tls-files.ts). */
  setCertificate(certPem: Buffer, keyPem: Buffer): void {
    this.server.setSecureContext({ cert: certPem, key: keyPem });
  }

  address(): { host: string; port: number } {
    const a = this.server.address() as AddressInfo;
    return { host: a.address, port: a.port };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async answer(body: Buffer): Promise<{ status: number; body: string }> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      return { status: 400, body: '{"message":"not JSON"}' };
    }
    const review = parseAdmissionReview(parsed);
    if (review === undefined) {
      return { status: 400, body: '{"message":"not an admission.k8s.io/v1 AdmissionReview"}' };
    }
    const namespace = review.request?.namespace ?? '';
    let leaseId: string | undefined;
    let failed = false;
    try {
      leaseId = namespace === '' ? undefined : await this.o.leaseOfNamespace(namespace);
    } catch (err) {
      failed = true;
      this.o.logger.error({ err, namespace }, 'admission webhook: namespace lookup failed');
    }
    const answer = admissionResponse(review, leaseId, failed);
    if (answer.response.patch !== undefined) {
      this.o.logger.debug(
        { namespace, leaseId, uid: answer.response.uid },
        'admission webhook: pod placed on the lease nodes',
      );
    }
    return { status: 200, body: JSON.stringify(answer) };
  }
}
