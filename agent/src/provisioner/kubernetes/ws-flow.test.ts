import { once } from 'node:events';
import { PassThrough } from 'node:stream';

import { describe, expect, it } from 'vitest';

import { MAX_UNSENT_BYTES, ReadGate, gateSends } from './ws-flow.js';

const frame = Buffer.alloc(8 * 1024);

function recordingSocket() {
  const calls: string[] = [];
  return {
    calls,
    socket: { pause: () => calls.push('pause'), resume: () => calls.push('resume') },
  };
}

describe('ReadGate: the WebSocket is not read while the SSH side is behind', () => {
  it('pauses once when a stream fills, and reads on when it drained; nothing is lost', async () => {
    const { calls, socket } = recordingSocket();
    const out = new PassThrough();
    new ReadGate(() => socket).watch(out);
    // The client library writes what arrives, whatever write() answers.
    for (let i = 0; i < 8; i++) out.write(frame);
    expect(calls).toEqual(['pause']);
    let read = 0;
    out.on('data', (d: Buffer) => (read += d.length));
    await once(out, 'drain');
    expect(calls).toEqual(['pause', 'resume']);
    expect(read).toBe(8 * frame.length);
    out.write(frame);
    expect(calls).toEqual(['pause', 'resume']); // a reader that keeps up: no pause
  });

  it('stdout and stderr share the socket: one draining does not resume it while the other is full', async () => {
    const { calls, socket } = recordingSocket();
    const gate = new ReadGate(() => socket);
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    gate.watch(stdout);
    gate.watch(stderr);
    for (let i = 0; i < 8; i++) stdout.write(frame);
    for (let i = 0; i < 8; i++) stderr.write(frame);
    expect(calls).toEqual(['pause']);
    stdout.resume();
    await once(stdout, 'drain');
    expect(calls).toEqual(['pause']); // stderr is still full
    stderr.resume();
    await once(stderr, 'drain');
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('open() reads on at once (the session ends; a paused WebSocket never sees the close)', () => {
    const { calls, socket } = recordingSocket();
    const gate = new ReadGate(() => socket);
    const out = new PassThrough();
    gate.watch(out);
    for (let i = 0; i < 8; i++) out.write(frame);
    gate.open();
    expect(calls).toEqual(['pause', 'resume']);
    gate.open();
    expect(calls).toEqual(['pause', 'resume']); // nothing was full any more
  });
});

describe('gateSends: what goes to the pod waits while the WebSocket has too much unsent', () => {
  it('stops reading the input above the limit and reads on below half of it', async () => {
    const ws = { bufferedAmount: 0, readyState: 1 };
    const input = new PassThrough();
    let sent = 0;
    // The client library's reader: it sends every chunk at once.
    input.on('data', (d: Buffer) => {
      sent += d.length;
      ws.bufferedAmount += d.length;
    });
    gateSends(input, ws, 1);
    const chunk = Buffer.alloc(256 * 1024);
    for (let i = 0; i < 8; i++) input.write(chunk);
    await new Promise((r) => setImmediate(r));
    // The chunk that passed the limit was sent; the rest waits in the input.
    expect(sent).toBe(MAX_UNSENT_BYTES + chunk.length);
    expect(input.isPaused()).toBe(true);
    // Writers are told to wait: the input's own buffer is past its mark.
    expect(input.write(chunk)).toBe(false);
    ws.bufferedAmount = 0; // the connection took it
    await once(input, 'drain');
    expect(sent).toBe(9 * chunk.length);
    input.destroy();
  });
});
