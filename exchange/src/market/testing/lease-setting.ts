import type { Book, Party, TestExchange } from './test-exchange.js';

/**
 * What a lease test trades in: a book of its own, where its provider has a
 * cluster of `nodes` nodes, and a buyer and another customer of its own.
 * Time passes for every book at once (ex.tick), so a test asserts only on
 * its own accounts and leases, and on deltas it measures itself.
 */
export interface LeaseSetting {
  readonly book: Book;
  readonly provider: Party;
  readonly buyer: Party;
  readonly other: Party;
}

export async function leaseSetting(ex: TestExchange, nodes = 2): Promise<LeaseSetting> {
  const book = ex.book();
  const provider = await ex.party('provider');
  await ex.cluster(provider, nodes, book.gpu_type, book.zone);
  return { book, provider, buyer: await ex.party('buyer'), other: await ex.party('other') };
}
