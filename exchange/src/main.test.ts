// The start banner's lines of what the exchange is connected to (issue 20):
// the database, the event bus, the agents' gRPC service, never a password.

import { InProcessBus } from '@gpux/shared';
import { describe, expect, it } from 'vitest';

import { DEFAULT_CONFIG } from './config.js';
import { BusPublisher } from './events/bus-publisher.js';
import { connectionLines } from './main.js';

const owned = { applied: [], schemaVersion: 15, publisher: new BusPublisher(new InProcessBus()) };

describe('the start banner: what the exchange is connected to', () => {
  it('the embedded defaults: PGlite, the in-process bus, gRPC in plain text', () => {
    expect(
      connectionLines(
        DEFAULT_CONFIG,
        { grpcPort: 50051 },
        { ...owned, applied: [1, 2], schemaVersion: 2 },
      ),
    ).toEqual([
      'database: embedded PGlite in .gpux/pgdata, migrations applied: 1, 2, schema version 2',
      'events: the in-process bus (only an agent inside this process hears them)',
      "agents' gRPC service on port 50051 of 127.0.0.1, plain text (no TLS)",
    ]);
  });

  it('PostgreSQL and NATS named without their passwords; TLS and mutual TLS said', () => {
    const lines = connectionLines(
      {
        ...DEFAULT_CONFIG,
        databaseUrl: 'postgres://gpux:hunter2@db.example:5432/market',
        natsUrl: 'tls://exchange:s3cret@nats.example:4222',
        natsCredsFile: '/etc/gpux/exchange.nk',
        grpcHost: '0.0.0.0',
        grpcTls: { certFile: '/c', keyFile: '/k', clientCaFile: '/ca' },
      },
      { grpcPort: 443 },
      owned,
    );
    expect(lines).toEqual([
      'database: PostgreSQL gpux@db.example:5432/market, schema up to date (version 15)',
      'events: NATS JetStream tls://exchange@nats.example:4222, stream GPUX_EVENTS, credentials /etc/gpux/exchange.nk',
      "agents' gRPC service on port 443 of 0.0.0.0, mutual TLS (agents present a client certificate)",
    ]);
    expect(lines.join('\n')).not.toMatch(/hunter2|s3cret/);
    expect(
      connectionLines(
        { ...DEFAULT_CONFIG, grpcTls: { certFile: '/c', keyFile: '/k', clientCaFile: undefined } },
        { grpcPort: 1 },
        owned,
      )[2],
    ).toBe("agents' gRPC service on port 1 of 127.0.0.1, TLS");
  });
});
