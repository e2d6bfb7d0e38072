// `npm run test:images`: builds both images (deploy/images/Containerfile)
// and runs test/images/*.image.ts against them with podman. Where no
// registry is reachable (these machines, CI) the bases are local ones made
// by deploy/images/local-base.sh; GPUX_IMAGE_BASE and GPUX_IMAGE_BUILD_BASE
// name others (e.g. the public node:20 images). Its last line:
//
//   images: agent <A> MB exchange <B> MB | e2e ok
//
// (megabytes above the runtime base), or `images: e2e failed: <why>` and
// exit status 1. Takes minutes; not part of `npm test`.

import { spawnSync } from 'node:child_process';
import type { SpawnSyncOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { PODMAN_GLOBAL, PODMAN_ULIMITS } from '../support/launch.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REPO = 'localhost/gpux-e2e';

function fail(why: string): never {
  console.log(`images: e2e failed: ${why}`);
  process.exit(1);
}

function run(command: string, args: readonly string[], o: SpawnSyncOptions = {}): string {
  const r = spawnSync(command, args, { cwd: ROOT, stdio: 'inherit', ...o });
  if (r.error !== undefined) fail(`${command}: ${r.error.message}`);
  if (r.status !== 0) fail(`${command} ${args.slice(0, 3).join(' ')} … exited ${r.status}`);
  return r.stdout?.toString() ?? '';
}

function imageBytes(image: string): number {
  const out = run(
    'podman',
    [...PODMAN_GLOBAL, 'image', 'inspect', '--format', '{{.Size}}', image],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return Number(out.trim());
}

if (spawnSync('podman', ['--version']).error !== undefined) {
  fail('podman is not installed (apt-get install podman runc debootstrap)');
}

let base = process.env['GPUX_IMAGE_BASE'];
let buildBase = process.env['GPUX_IMAGE_BUILD_BASE'];
if (base === undefined || buildBase === undefined) {
  run('bash', ['deploy/images/local-base.sh']);
  base ??= 'localhost/gpux-node:20';
  buildBase ??= 'localhost/gpux-node-build:20';
}

const version = (
  JSON.parse(run('cat', ['package.json'], { stdio: ['ignore', 'pipe', 'inherit'] })) as {
    version: string;
  }
).version;
run(
  'bash',
  [
    'deploy/images/build.sh',
    '--pull=never',
    '--network',
    'host',
    ...PODMAN_GLOBAL,
    ...PODMAN_ULIMITS,
    '--build-arg',
    `BASE=${base}`,
    '--build-arg',
    `BUILD_BASE=${buildBase}`,
  ],
  { env: { ...process.env, GPUX_IMAGE_REPO: REPO, GPUX_IMAGE_ENGINE: 'podman' } },
);

// The example workspace image (GPUX_WORKSPACE_IMAGE) on the local Debian base.
const workspace = `${REPO}/workspace:test`;
run('podman', [
  'build',
  ...PODMAN_GLOBAL,
  ...PODMAN_ULIMITS,
  '--pull=never',
  '--network',
  'host',
  '-f',
  'deploy/images/workspace.Containerfile',
  '--build-arg',
  `BASE=${base}`,
  '-t',
  workspace,
  'deploy/images',
]);

const agent = `${REPO}/agent:${version}`;
const exchange = `${REPO}/exchange:${version}`;
const mb = (image: string): string => ((imageBytes(image) - imageBytes(base)) / 1e6).toFixed(1);
const sizes = `agent ${mb(agent)} MB exchange ${mb(exchange)} MB`;

const tests = spawnSync(
  process.execPath,
  [
    fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url)),
    'run',
    '--project',
    'images',
  ],
  {
    cwd: ROOT,
    stdio: 'inherit',
    env: {
      ...process.env,
      GPUX_TEST_IMAGES: '1',
      GPUX_TEST_AGENT_IMAGE: agent,
      GPUX_TEST_EXCHANGE_IMAGE: exchange,
      GPUX_TEST_WORKSPACE_IMAGE: workspace,
    },
  },
);
if (tests.status !== 0) fail(`the image tests failed (${sizes})`);
console.log(`images: ${sizes} | e2e ok`);
