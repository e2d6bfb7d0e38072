// NATS is multi-tenant (D29): every agent connects with credentials of its
// own whose permissions allow exactly its cluster's durable consumer and
// its own inbox: no other cluster's events, no stream management. The
// exchange's user owns the stream and the consumers. These functions write
// the `authorization` part of an operator's nats-server.conf
// (deploy/nats/README.md); `gpux nats-config` prints it.

import { EVENT_STREAM, agentConsumerName, agentInboxPrefix } from '@gpux/shared';

export interface Permissions {
  readonly publish: { readonly allow: readonly string[] };
  readonly subscribe: { readonly allow: readonly string[] };
}

/** What the agent of `clusterId` may do: pull from and ack its own consumer, hear replies in its inbox. */
export function agentPermissions(clusterId: string, stream = EVENT_STREAM): Permissions {
  const consumer = agentConsumerName(clusterId);
  return {
    publish: {
      allow: [
        `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
        `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
        `$JS.ACK.${stream}.${consumer}.>`,
      ],
    },
    subscribe: { allow: [`${agentInboxPrefix(clusterId)}.>`] },
  };
}

/** The exchange: manage the stream and consumers, publish events, hear its replies. */
export function exchangePermissions(subjectRoot = 'gpux'): Permissions {
  return {
    publish: { allow: ['$JS.API.>', `${subjectRoot}.cluster.>`] },
    subscribe: { allow: ['_INBOX.>'] },
  };
}

export interface NatsUser {
  /** The user's public nkey (U…); its seed stays with the user. */
  readonly nkey: string;
  readonly permissions: Permissions;
  /** Written above the entry, for people. */
  readonly comment: string;
}

/** The `authorization { users = [...] }` block of nats-server.conf. */
export function authorizationBlock(users: readonly NatsUser[]): string {
  const entries = users.map(
    (u) =>
      `    # ${u.comment}\n    { nkey: ${JSON.stringify(u.nkey)}, permissions: ${JSON.stringify(u.permissions)} }`,
  );
  return `authorization {\n  users = [\n${entries.join(',\n')}\n  ]\n}\n`;
}
