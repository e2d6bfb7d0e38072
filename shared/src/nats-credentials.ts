// What a NATS credentials file holds (NATS_CREDS): a `.creds` file of the
// NATS tooling (a user JWT and its nkey seed, for servers in operator mode),
// or a bare nkey seed (`SU…`, for servers that list users' public nkeys in
// their configuration, as deploy/nats/ does). Both programs map it to their
// client's authenticator.

export type NatsCredentials =
  | { readonly kind: 'creds'; readonly bytes: Uint8Array }
  | { readonly kind: 'nkey'; readonly seed: Uint8Array };

export function parseNatsCredentials(text: string): NatsCredentials {
  const trimmed = text.trim();
  if (trimmed.includes('-----BEGIN NATS USER JWT-----')) {
    return { kind: 'creds', bytes: new TextEncoder().encode(text) };
  }
  if (/^SU[A-Z2-7]{56}$/.test(trimmed)) {
    return { kind: 'nkey', seed: new TextEncoder().encode(trimmed) };
  }
  throw new Error(
    'NATS credentials must be a .creds file (user JWT and seed) or a user nkey seed (SU…)',
  );
}
