// The exchange's REST API as the commands call it: an openapi-fetch client
// typed by shared/src/gen/api.ts, which `npm run gen:client` writes from the
// checked-in docs/api/openapi.json, so a command cannot name a path, a
// parameter or a field the API does not have. The commands use nothing
// else of the exchange (eslint.config.js refuses imports of the exchange
// and agent packages here).

import createClient from 'openapi-fetch';
import type { Client } from 'openapi-fetch';

import { apiError, networkError } from './exit.js';
import type { components, paths } from '@gpux/shared/api';

export type Schemas = components['schemas'];
export type ApiClient = Client<paths>;

/** The query of `GET path`. */
export type Query<P extends keyof paths> = paths[P] extends {
  get: { parameters: { query?: infer Q } };
}
  ? NonNullable<Q>
  : never;

/** The JSON body of `POST path`. */
export type Body<P extends keyof paths> = paths[P] extends {
  post: { requestBody: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

/** What an openapi-fetch call resolves to: the parsed body of a success, or the error's. */
export interface Answer<T> {
  readonly data?: T;
  readonly error?: unknown;
  readonly response: Response;
}

export interface Api {
  readonly url: string;
  readonly client: ApiClient;
  /** The success body of `call`; an ApiError for an error answer, a CliError (exit 8) for none. */
  read<T>(call: Promise<Answer<T>>): Promise<T>;
}

export interface ApiOptions {
  /** Instead of the global fetch (unit tests). */
  readonly fetch?: (request: Request) => Promise<Response>;
}

/** A client of the exchange at `url` as the holder of `token`. */
export function openApi(url: string, token: string, o: ApiOptions = {}): Api {
  const client = createClient<paths>({
    baseUrl: url,
    headers: { authorization: `Bearer ${token}` },
    ...(o.fetch === undefined ? {} : { fetch: o.fetch }),
  });
  return {
    url,
    client,
    async read<T>(call: Promise<Answer<T>>): Promise<T> {
      let answer: Answer<T>;
      try {
        answer = await call;
      } catch (e) {
        throw networkError(url, e);
      }
      const { response } = answer;
      if (response.ok && answer.data !== undefined) return answer.data;
      throw apiError(response.status, answer.error, response.headers.get('retry-after'));
    },
  };
}

/**
 * `list`, checked to hold every member of `T`, a closed set of the API (an
 * enum of the generated types): when the API adds a member, tsc fails here
 * until the command line offers it too.
 */
export function every<T extends string>() {
  return <const L extends readonly T[]>(
    list: L &
      ([Exclude<T, L[number]>] extends [never] ? unknown : { missing: Exclude<T, L[number]> }),
  ): L => list;
}
