// The exchange's unit runs this after starting it (ExecStartPost in
// gpux-exchange.service): it waits until the exchange answers GET /healthz
// on HOST:PORT (the same settings, from /etc/gpux/exchange.env), so that
// `systemctl start` returns once the exchange serves, and units ordered
// after it start against a process that answers. Liveness, not readiness:
// a standby is alive and must start too; /readyz (the owner of the market,
// database and bus answering) is the load balancer's (docs/operations.md).
// Exit 0 once answered; systemd's TimeoutStartSec bounds the wait.

const host = process.env.HOST ?? '127.0.0.1';
const port = process.env.PORT ?? '8080';
// Listening on every address: ask on loopback.
const target = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
const url = `http://${target.includes(':') ? `[${target}]` : target}:${port}/healthz`;
const EVERY_MS = 250;

async function answered() {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

while (!(await answered())) await new Promise((r) => setTimeout(r, EVERY_MS));
console.log(`gpux exchange answers ${url}`);
