// Bodies in and answers out: JSON over HTTP, and a refused WebSocket upgrade
// written on the bare socket (a Status over plain HTTP, as the real server
// answers before it upgrades).

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

import { errors } from './status.js';
import type { ApiError } from './status.js';

export const JSON_TYPE = 'application/json';

export function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Answers an upgrade request with `e` and closes the socket. */
export function refuseUpgrade(socket: Duplex, e: ApiError): void {
  const text = JSON.stringify(e.toStatus());
  socket.end(
    `HTTP/1.1 ${e.code} ${e.reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch (err) {
    throw errors.badRequest(`the body could not be decoded: ${String(err)}`);
  }
}
