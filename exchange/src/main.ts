// Entry point of `npm start`: configure, listen, print the URL, drain on signals.

import type { AddressInfo } from 'node:net';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import type { Config } from './config.js';

function readConfig(): Config {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

const config = readConfig();
const app = buildApp(config);

let draining = false;
async function drain(signal: NodeJS.Signals): Promise<void> {
  if (draining) {
    // A second signal means the operator will not wait for in-flight requests.
    process.exit(1);
  }
  draining = true;
  console.log(`${signal} received, draining`);
  try {
    // Stops accepting connections, lets in-flight requests finish (D34).
    await app.close();
    process.exit(0);
  } catch (err) {
    console.error('shutdown failed', err);
    process.exit(1);
  }
}
process.on('SIGTERM', (signal) => void drain(signal));
process.on('SIGINT', (signal) => void drain(signal));

await app.listen({ host: config.host, port: config.port });
// PORT=0 picks a free port, so print the one actually bound.
const { port } = app.server.address() as AddressInfo;
console.log(`listening on ${urlOf(config.host, port)}`);
