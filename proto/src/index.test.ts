import { existsSync } from 'node:fs';
import { basename, isAbsolute, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROTO_DIR } from './index.js';

describe('PROTO_DIR', () => {
  it('is the absolute path of the proto package', () => {
    expect(isAbsolute(PROTO_DIR)).toBe(true);
    expect(basename(PROTO_DIR)).toBe('proto');
    expect(existsSync(join(PROTO_DIR, 'package.json'))).toBe(true);
  });
});
