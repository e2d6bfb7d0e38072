// Where the outbox relay sends events: NATS JetStream (NATS_URL), or the
// in-process bus of `gpux start` (D34). Either way a message id is the event
// id, so publishing an event twice stores it once.

export interface AgentEventSource {
  readonly stream: string;
  readonly consumer: string;
  readonly filterSubject: string;
  readonly inboxPrefix: string;
}

export interface EventPublisher {
  /**
   * Resolves once the event is stored (a duplicate counts as stored);
   * rejects when that is not known (timeout, no server): publish it again,
   * with the same id.
   */
  publish(subject: string, eventId: string, payload: string): Promise<void>;
  /** The durable consumer of a cluster's agent, made when missing. */
  ensureAgentConsumer(clusterId: string): Promise<AgentEventSource>;
  /** Why events cannot be published now (disconnected, closed); undefined: they can (GET /readyz). */
  problem(): string | undefined;
  close(): Promise<void>;
}
