// TLS files the agent reloads when they change on disk (issue 23): the
// admission webhook's certificate and key (provisioners.ts) and the gRPC
// client's CA, certificate and key (agent.ts). cert-manager renews them and
// the kubelet swaps a Secret volume's files by renaming a symlink (`..data`),
// so the files' directories are watched (fs.watch), and every `pollMs` the
// files are read again anyway (a watch can miss events: network file
// systems, inotify limits). A set of files is taken when its content differs
// from what is in use and `apply` accepts it; a half-written or mismatched
// set is refused (logged once per content) and the one in use kept, until
// the next change brings a set that fits.

import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

import type { Logger } from './logger.js';

/** How often the files are read again without a watch event. */
export const TLS_POLL_MS = 30_000;
/** A burst of events (a certificate, then its key) is read once, this long after the first. */
const SETTLE_MS = 200;

export type TlsCheck = 'unchanged' | 'reloaded' | 'refused';

export interface TlsFilesOptions<K extends string> {
  /** What the files are, for the log: "the webhook certificate". */
  readonly name: string;
  /** The files by role, their paths as the settings give them. */
  readonly files: Readonly<Record<K, string>>;
  /** What is in use now (read at start), so an unchanged set is not applied again. */
  readonly initial: Readonly<Record<K, Buffer>>;
  /** Puts a new set in use; throws to refuse it (the old set stays in use). */
  readonly apply: (pems: Readonly<Record<K, Buffer>>) => void | Promise<void>;
  readonly logger: Logger;
  readonly pollMs?: number;
  /** After every check (tests wait on it). */
  readonly onCheck?: (result: TlsCheck) => void;
}

function digestOf(keys: readonly string[], pems: Readonly<Record<string, Buffer>>): string {
  const h = createHash('sha256');
  for (const k of keys) {
    const pem = pems[k] ?? Buffer.alloc(0);
    h.update(`${k}:${pem.length}:`).update(pem);
  }
  return h.digest('hex');
}

/**
 * A certificate (PEM, the leaf first) and its private key that go together;
 * throws saying what is wrong (half written, not PEM, another key).
 */
export function checkKeyPair(certPem: Buffer, keyPem: Buffer): X509Certificate {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch (err) {
    throw new Error(`the certificate cannot be read: ${(err as Error).message}`, { cause: err });
  }
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch (err) {
    throw new Error(`the private key cannot be read: ${(err as Error).message}`, { cause: err });
  }
  if (!cert.checkPrivateKey(key)) {
    throw new Error('the private key is not the one of the certificate');
  }
  return cert;
}

/** Throws unless `pem` holds at least one certificate and nothing unreadable. */
export function checkCertificates(pem: Buffer): void {
  const blocks = pem
    .toString('utf8')
    .match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  if (blocks === null) throw new Error('no certificate in it');
  for (const b of blocks) new X509Certificate(b);
}

export class TlsFilesWatcher<K extends string> {
  private readonly keys: readonly K[];
  private inUse: string;
  /** The content last refused: not logged again while it stays. */
  private refused: string | undefined;
  private readonly watchers: FSWatcher[] = [];
  private poll: NodeJS.Timeout | undefined;
  private settle: NodeJS.Timeout | undefined;
  private running: Promise<TlsCheck> | undefined;
  private again = false;
  private closed = false;

  constructor(private readonly o: TlsFilesOptions<K>) {
    this.keys = Object.keys(o.files).sort() as K[];
    this.inUse = digestOf(this.keys, o.initial);
  }

  /** Watches the files' directories and reads them every `pollMs`. */
  start(): void {
    for (const dir of new Set(this.keys.map((k) => dirname(this.o.files[k])))) {
      try {
        const w = watch(dir, { persistent: false }, () => this.soon());
        w.on('error', (err) => {
          this.o.logger.warn({ err, dir }, `${this.o.name}: watching stopped; read every poll`);
          w.close();
        });
        this.watchers.push(w);
      } catch (err) {
        this.o.logger.warn({ err, dir }, `${this.o.name}: cannot watch; read every poll`);
      }
    }
    this.poll = setInterval(() => void this.check(), this.o.pollMs ?? TLS_POLL_MS);
    this.poll.unref();
  }

  /** Reads the files now and applies them if they changed; one check at a time. */
  check(): Promise<TlsCheck> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    const run = this.checkOnce().finally(() => {
      this.running = undefined;
      if (this.again && !this.closed) {
        this.again = false;
        void this.check();
      }
    });
    this.running = run;
    return run;
  }

  close(): void {
    this.closed = true;
    for (const w of this.watchers) w.close();
    clearInterval(this.poll);
    clearTimeout(this.settle);
  }

  private soon(): void {
    if (this.closed || this.settle !== undefined) return;
    this.settle = setTimeout(() => {
      this.settle = undefined;
      void this.check();
    }, SETTLE_MS);
    this.settle.unref();
  }

  private async checkOnce(): Promise<TlsCheck> {
    const result = await this.read().then(
      async (pems) => {
        const digest = digestOf(this.keys, pems);
        if (digest === this.inUse) return 'unchanged';
        if (digest === this.refused) return 'refused';
        try {
          await this.o.apply(pems);
        } catch (err) {
          this.refused = digest;
          this.o.logger.error(
            { err, files: this.o.files },
            `${this.o.name}: the new files are refused, the ones in use are kept`,
          );
          return 'refused';
        }
        this.inUse = digest;
        this.refused = undefined;
        this.o.logger.info({ files: this.o.files }, `${this.o.name}: reloaded`);
        return 'reloaded';
      },
      (err: unknown) => {
        // Missing for a moment (a swap under way), or unreadable: the ones in use stay.
        const digest = `unreadable:${(err as Error).message}`;
        if (digest !== this.refused) {
          this.refused = digest;
          this.o.logger.warn({ err }, `${this.o.name}: cannot be read; the ones in use are kept`);
        }
        return 'refused' as const;
      },
    );
    this.o.onCheck?.(result);
    return result;
  }

  private async read(): Promise<Record<K, Buffer>> {
    const pems = {} as Record<K, Buffer>;
    for (const k of this.keys) pems[k] = await readFile(this.o.files[k]);
    return pems;
  }
}
