// Money: the platform account per day and the ledger's sum-to-zero check,
// read again when leases change (fees and refunds follow them).

import { useEffect, useState } from 'preact/hooks';

import { get, money } from '../api.js';
import type { LeaseCounts, PlatformDays } from '../types.js';

export function Money({ counts }: { counts: LeaseCounts | undefined }) {
  const [data, setData] = useState<PlatformDays | undefined>(undefined);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    get<PlatformDays>('/v1/admin/platform/days?days=30')
      .then(setData)
      .catch(() => setData(undefined));
  }, [counts, tick]);
  // Adjustments and payouts change no lease: look again every 10 s too.
  useEffect(() => {
    const t = setInterval(() => setTick((n) => n + 1), 10_000);
    return () => clearInterval(t);
  }, []);
  if (data === undefined) return <p class="loading">Loading…</p>;
  const l = data.ledger;
  return (
    <>
      <h1>Money</h1>
      <p
        role="status"
        class={l.balanced ? 'ok' : 'error'}
        data-ledger={l.balanced ? 'balanced' : 'unbalanced'}
      >
        {l.balanced
          ? `The ledger sums to zero (${l.entries} entries, no unbalanced transaction).`
          : `The ledger does NOT sum to zero: ${money(l.sum)}, ${l.unbalanced_transactions} unbalanced transactions.`}
      </p>
      <div class="scroll">
        <table>
          <caption>The platform account per day (UTC)</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              <th scope="col">Fees</th>
              <th scope="col">Fee refunds</th>
              <th scope="col">Adjustments</th>
              <th scope="col">Platform net</th>
              <th scope="col">Refunds</th>
              <th scope="col">Payouts</th>
              <th scope="col">Transactions</th>
              <th scope="col">Σ ledger</th>
            </tr>
          </thead>
          <tbody>
            {data.days.map((d) => (
              <tr key={d.day}>
                <td>{d.day}</td>
                <td>{money(d.fees)}</td>
                <td>{money(d.fee_refunds)}</td>
                <td>{money(d.adjustments)}</td>
                <td>{money(d.platform_net)}</td>
                <td>{money(d.refunds)}</td>
                <td>{money(d.payouts)}</td>
                <td>{d.transactions}</td>
                <td class={d.ledger_sum === 0 ? '' : 'error'}>{money(d.ledger_sum)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
