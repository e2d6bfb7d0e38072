// How an end-to-end test runs one of the programs: by default `node` on the
// built output here; the image tests (test/images/) run the same settings
// in the program's OCI image with podman instead.

import { execFileSync } from 'node:child_process';

/** A command to spawn, and how to signal what it runs (default: the spawned process). */
export interface Launch {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  /** Signals the program (a container is not the podman client spawned). */
  readonly kill?: (signal: 'SIGTERM' | 'SIGKILL') => void;
}

/** The program's settings (environment) → how to run it with them. */
export type Launcher = (settings: Readonly<Record<string, string>>) => Launch;

/**
 * podman's global flags on these machines (deploy/images/README.md):
 * crun fails here ("cgroups in hybrid mode"), runc works.
 */
export const PODMAN_GLOBAL: readonly string[] = (
  process.env['GPUX_PODMAN_FLAGS'] ?? '--runtime runc'
)
  .split(/\s+/)
  .filter((f) => f !== '');

/** rlimits at or below the current ones: the runtime cannot raise them here (no CAP_SYS_RESOURCE). */
export const PODMAN_ULIMITS: readonly string[] = [
  '--ulimit',
  'nofile=1024:1024',
  '--ulimit',
  'nproc=4096:4096',
];

export interface ContainerOptions {
  readonly image: string;
  /** The container's name (podman kill / exec / rm by it). */
  readonly name: string;
  /** [named volume or host path, path in the container]. */
  readonly volumes?: readonly (readonly [string, string])[];
  /** Settings that name paths of this machine, dropped (the image's own apply). */
  readonly drop?: readonly string[];
  /** Settings set or replaced. */
  readonly set?: Readonly<Record<string, string>>;
  /** --read-only (default true): only volumes and /tmp are writable. */
  readonly readOnly?: boolean;
}

/** `podman run --rm --network host …` of `image` with the program's settings as -e. */
export function podmanLauncher(o: ContainerOptions): Launcher {
  return (settings) => {
    const env: Record<string, string> = { ...settings };
    for (const name of ['PATH', 'HOME', ...(o.drop ?? [])]) delete env[name];
    Object.assign(env, o.set);
    const args = [
      ...PODMAN_GLOBAL,
      'run',
      '--rm',
      '--name',
      o.name,
      '--network',
      'host',
      ...PODMAN_ULIMITS,
      ...(o.readOnly === false ? [] : ['--read-only']),
      ...(o.volumes ?? []).flatMap(([from, to]) => ['-v', `${from}:${to}`]),
      ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      o.image,
    ];
    return {
      command: 'podman',
      args,
      env: process.env,
      kill: (signal) => {
        try {
          execFileSync('podman', [...PODMAN_GLOBAL, 'kill', '--signal', signal, o.name], {
            stdio: 'ignore',
          });
        } catch {
          // not running (any more)
        }
      },
    };
  };
}
