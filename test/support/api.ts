// One request to the exchange's REST API as the end-to-end tests make it:
// the caller's bearer token, a JSON body when there is one.

export interface ApiAnswer {
  readonly status: number;
  /** The parsed JSON body; {} when the body is not JSON (see text). */
  readonly json: Record<string, unknown>;
  readonly text: string;
  readonly contentType: string;
  /** The Retry-After header, if any (D18: a 429 carries it). */
  readonly retryAfter: string | null;
}

/** `method path` at `at` (http://host:port, or a process serving there) as the holder of `token`. */
export async function callApi(
  at: string | { readonly url: string },
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<ApiAnswer> {
  const res = await fetch(`${typeof at === 'string' ? at : at.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // YAML (a kubeconfig) or empty
  }
  return {
    status: res.status,
    json,
    text,
    contentType: res.headers.get('content-type') ?? '',
    retryAfter: res.headers.get('retry-after'),
  };
}
