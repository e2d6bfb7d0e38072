import { describe, expect, it } from 'vitest';
import { loopbackAddressOf, parseProcNetTcp } from './tcp-listeners.js';

const HEADER =
  '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode';
const tail = '00000000:00000000 00:00000000 00000000  1000        0';

// As a little-endian kernel prints them.
const TCP = [
  HEADER,
  `   0: 0100007F:1F90 00000000:0000 0A ${tail} 111 1 0000000000000000 100 0 0 10 0`,
  `   1: 00000000:0016 00000000:0000 0A ${tail} 222 1 0000000000000000 100 0 0 10 0`,
  `   2: 0100007F:1F90 0100007F:D2A4 01 ${tail} 333 1 0000000000000000 20 4 30 10 -1`,
  `   3: 0A00000A:0050 00000000:0000 0A ${tail} 444 1 0000000000000000 100 0 0 10 0`,
  '',
].join('\n');

const TCP6 = [
  HEADER,
  `   0: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A ${tail} 555 1 0`,
  `   1: 00000000000000000000000000000000:1F92 00000000000000000000000000000000:0000 0A ${tail} 666 1 0`,
  `   2: 0000000000000000FFFF00000100007F:1F93 00000000000000000000000000000000:0000 0A ${tail} 777 1 0`,
  `   3: B80D0120000000000000000001000000:1F94 00000000000000000000000000000000:0000 0A ${tail} 888 1 0`,
].join('\n');

describe('listening TCP sockets from /proc/net/tcp{,6}', () => {
  it('reads listeners only, with port and inode', () => {
    const listeners = parseProcNetTcp(TCP, true);
    expect(listeners.map((l) => [l.port, l.inode])).toEqual([
      [8080, 111],
      [22, 222],
      [80, 444],
    ]);
  });

  it('tells where a listener can be reached on this host', () => {
    const where = [...parseProcNetTcp(TCP, true), ...parseProcNetTcp(TCP6, true)].map((l) => [
      l.inode,
      loopbackAddressOf(l),
    ]);
    expect(where).toEqual([
      [111, '127.0.0.1'], // 127.0.0.1
      [222, '127.0.0.1'], // 0.0.0.0
      [444, undefined], // 10.0.0.10: not a loopback address
      [555, '::1'], // ::1
      [666, '::1'], // ::
      [777, '127.0.0.1'], // ::ffff:127.0.0.1
      [888, undefined], // 2001:db8::1
    ]);
  });

  it('reads addresses of a big-endian kernel too', () => {
    const [listener] = parseProcNetTcp(
      [HEADER, `   0: 7F000001:1F90 00000000:0000 0A ${tail} 111 1 0`].join('\n'),
      false,
    );
    expect(listener && loopbackAddressOf(listener)).toBe('127.0.0.1');
  });
});
