// Certificates for the agent's tests, made with the openssl CLI: a fresh
// self-signed EC certificate and its key each time (for 127.0.0.1 too, so a
// TLS client can connect to a test server with it as its CA).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';

export interface PemPair {
  readonly cert: Buffer;
  readonly key: Buffer;
}

export function selfSigned(cn: string): PemPair {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        `/CN=${cn}`,
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    return { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The serial number of the certificate a TLS server on 127.0.0.1:`port` presents to a new connection. */
export function servedSerial(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const serial = socket.getPeerX509Certificate()?.serialNumber ?? '';
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}
