import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (pkg: string): string =>
  fileURLToPath(new URL(`./${pkg}/src/index.ts`, import.meta.url));

export default defineConfig({
  resolve: {
    // Unit tests run against sources, so `npm test` needs no build first.
    alias: {
      '@gpux/shared': src('shared'),
      '@gpux/proto': src('proto'),
      '@gpux/exchange': src('exchange'),
      '@gpux/agent': src('agent'),
    },
  },
  test: {
    exclude: ['**/node_modules/**', '**/dist/**'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['{shared,proto,exchange,agent}/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts'],
          // End-to-end tests start the built programs, as `npm start` does.
          globalSetup: ['test/build.global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
