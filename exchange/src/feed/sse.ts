// Server-sent events as the feed writes them (the HTML standard's
// text/event-stream): `id:` the sequence number when the event has one,
// `event:` its type, one `data:` line of JSON, a blank line.

/** One event, encoded; `id`: its sequence number. */
export function sseEvent(event: string, data: unknown, id?: number): string {
  const head = id === undefined ? '' : `id: ${id}\n`;
  return `${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Sent first: how long a browser's EventSource waits before it reconnects (ms). */
export const SSE_RETRY = 'retry: 1000\n\n';
