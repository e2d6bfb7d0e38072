// The sells this agent listed itself (issue 23), kept across restarts in
// <stateDir>/sells.json: an agent started without GPUX_ASK_PRICE withdraws
// those, and leaves alone the sells of its cluster listed by other means
// (`gpux sell`, POST /v1/orders with the provider's token). Written after
// each sell the exchange took; pruned to the sells still open at each round.
// A crash between a sell taken and this file written leaves that one sell
// unremembered (the agent with a price still manages it as a surplus sell).

import type { Logger } from '../logger.js';
import { readJsonFile, writeFileAtomic } from './atomic-file.js';

export class OwnSells {
  private readonly ids = new Set<string>();

  /** `path` undefined: kept in memory only (tests). */
  constructor(
    private readonly path: string | undefined,
    private readonly logger: Logger,
  ) {}

  async load(): Promise<void> {
    if (this.path === undefined) return;
    try {
      const raw = (await readJsonFile(this.path)) as { orderIds?: unknown } | undefined;
      const ids = raw?.orderIds;
      if (raw === undefined) return;
      if (!Array.isArray(ids)) throw new SyntaxError(`${this.path} holds no orderIds`);
      for (const id of ids) if (typeof id === 'string' && id.startsWith('ord_')) this.ids.add(id);
    } catch (err) {
      // Not fatal: its sells are then not known as its own (left alone without a price).
      this.logger.error(
        { err, path: this.path },
        'the list of sells the agent listed is unreadable: without a price they are not withdrawn; repair or remove the file',
      );
    }
  }

  has(orderId: string): boolean {
    return this.ids.has(orderId);
  }

  async add(orderId: string): Promise<void> {
    this.ids.add(orderId);
    await this.save();
  }

  /** Forget the sells no longer open. */
  async keepOnly(open: ReadonlySet<string>): Promise<void> {
    const gone = [...this.ids].filter((id) => !open.has(id));
    if (gone.length === 0) return;
    for (const id of gone) this.ids.delete(id);
    await this.save();
  }

  private async save(): Promise<void> {
    if (this.path === undefined) return;
    await writeFileAtomic(this.path, JSON.stringify({ orderIds: [...this.ids].sort() }));
  }
}
