// A CA of its own and a serving certificate signed by it (openssl), for the
// double's HTTPS: clients (kubectl, client-node) verify the server against
// the CA PEM, as they would a real cluster's.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ServingCerts {
  readonly caPem: string;
  /** The CA's key, to sign more serving certificates (webhooks in tests). */
  readonly caKeyPem: string;
  readonly certPem: string;
  readonly keyPem: string;
}

function openssl(cwd: string, args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A serving certificate for `hosts` (IPs or DNS names) signed by the given CA. */
export function signServingCert(
  ca: { caPem: string; caKeyPem: string },
  hosts: readonly string[],
  commonName = hosts[0] ?? 'localhost',
): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-double-tls-'));
  try {
    writeFileSync(join(dir, 'ca.crt'), ca.caPem);
    writeFileSync(join(dir, 'ca.key'), ca.caKeyPem, { mode: 0o600 });
    const san = hosts.map((h) => (/^[\d.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
    writeFileSync(
      join(dir, 'ext.cnf'),
      `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`,
    );
    openssl(dir, [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'tls.key',
      '-out',
      'tls.csr',
      '-subj',
      `/CN=${commonName}`,
    ]);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      'tls.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      'tls.crt',
      '-extfile',
      'ext.cnf',
    ]);
    return {
      certPem: readFileSync(join(dir, 'tls.crt'), 'utf8'),
      keyPem: readFileSync(join(dir, 'tls.key'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function makeCerts(): ServingCerts {
  const dir = mkdtempSync(join(tmpdir(), 'k8s-double-ca-'));
  try {
    openssl(dir, [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=k8s-double-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ]);
    const ca = {
      caPem: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      caKeyPem: readFileSync(join(dir, 'ca.key'), 'utf8'),
    };
    return { ...ca, ...signServingCert(ca, ['127.0.0.1', 'localhost'], 'kube-apiserver') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
