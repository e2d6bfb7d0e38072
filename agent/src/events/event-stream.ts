// Where the agent's lease events come from: its durable pull consumer on
// NATS JetStream, or the in-process bus inside `gpux start` (D34). Both
// deliver at least once, in no guaranteed order, and deliver again what is
// not acked (D29, D30).

export interface EventMessage {
  readonly subject: string;
  readonly data: string;
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  /** Done: never delivered again. */
  ack(): Promise<void>;
  /** Not done: delivered again after `delayMs`. */
  nak(delayMs: number): void;
  /** Still at work: do not deliver it again yet (JetStream's ack_wait restarts). */
  working(): void;
}

export interface EventSubscription {
  /** Takes no new message; what was handed out may still be acked. Resolves once stopped. */
  stop(): Promise<void>;
}

export interface EventStream {
  /**
   * Hands every message to `handler` as it arrives, several at once; the
   * handler acks or naks each. Keeps going across server restarts.
   */
  consume(handler: (m: EventMessage) => void): Promise<EventSubscription>;
  /** Why no events can come now (disconnected, the consumer missing); undefined: they can. */
  problem(): string | undefined;
  close(): Promise<void>;
}
