// A certificate authority of a test's own, made with the openssl CLI in a
// scratch directory: ca.pem (and ca.key), and certificates it signs for a
// common name with an openssl extension line (subjectAltName, clientAuth).

import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface IssuedCert {
  readonly cert: Buffer;
  readonly key: Buffer;
}

export class TestCa {
  /** `dir` gets ca.pem, ca.key, and <name>.pem / <name>.key for each certificate issued. */
  constructor(readonly dir: string) {
    this.openssl(
      'req',
      '-x509',
      ...TestCa.EC,
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '1',
      '-subj',
      '/CN=gpux test CA',
    );
  }

  private static readonly EC = [
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
  ];

  get caPem(): Buffer {
    return readFileSync(join(this.dir, 'ca.pem'));
  }

  /** A certificate for `cn` signed by this CA, with `ext` (an openssl extension line). */
  issue(name: string, cn: string, ext: string): IssuedCert {
    this.openssl(
      'req',
      ...TestCa.EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${cn}`,
    );
    writeFileSync(join(this.dir, `${name}.ext`), `${ext}\n`);
    this.openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    );
    return {
      cert: readFileSync(join(this.dir, `${name}.pem`)),
      key: readFileSync(join(this.dir, `${name}.key`)),
    };
  }

  private openssl(...args: string[]): void {
    execFileSync('openssl', args, { cwd: this.dir, stdio: 'ignore' });
  }
}
