import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { EXCHANGE_NODE_FLAGS } from './node-flags.js';

describe('EXCHANGE_NODE_FLAGS', () => {
  it('are the flags `npm start` runs the exchange with', () => {
    const pkg = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { scripts: Record<string, string> };
    expect(pkg.scripts['start']).toContain(
      `node ${EXCHANGE_NODE_FLAGS.join(' ')} exchange/dist/main.js`,
    );
  });
});
