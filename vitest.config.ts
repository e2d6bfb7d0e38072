import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import type { TestProjectConfiguration } from 'vitest/config';

const src = (pkg: string): string =>
  fileURLToPath(new URL(`./${pkg}/src/index.ts`, import.meta.url));

const PACKAGES = '{shared,proto,exchange,agent,cli}';

const IMAGES: TestProjectConfiguration = {
  extends: true,
  test: {
    name: 'images',
    include: ['test/images/**/*.image.ts'],
    testTimeout: 120_000,
    hookTimeout: 300_000,
  },
};

// Three projects (`npx vitest --project unit` runs in seconds):
// - unit: pure tests beside the code, no database, no network, no child process;
// - db: tests beside the code that need the local PostgreSQL (`*.db.test.ts`);
// - e2e: test/, real processes over real protocols;
// - images: test/images/*.image.ts, the OCI images under podman, only when
//   GPUX_TEST_IMAGES=1 (`npm run test:images` builds the images and sets it).
export default defineConfig({
  resolve: {
    // Tests run against sources, so `npm test` needs no build first.
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
        test: {
          name: 'unit',
          include: [`${PACKAGES}/**/*.test.ts`],
          exclude: ['**/node_modules/**', '**/dist/**', '**/*.db.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'db',
          include: [`${PACKAGES}/**/*.db.test.ts`],
          testTimeout: 20_000,
          // Making and dropping a test's database waits on PostgreSQL, slow on a loaded machine.
          hookTimeout: 60_000,
        },
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
      ...(process.env['GPUX_TEST_IMAGES'] === '1' ? [IMAGES] : []),
    ],
  },
});
