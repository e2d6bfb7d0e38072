// Leases: provisioning (nearest their timeout first), active, recently
// ended (with how long revocation took) and failed (with why); read again
// whenever the live lease counts change.

import { useEffect, useState } from 'preact/hooks';

import { get, money, when } from '../api.js';
import type { LeaseCounts, LeaseList, LeaseListItem } from '../types.js';

type State = LeaseList['state'];
const STATES = ['provisioning', 'active', 'ended', 'failed'] as const satisfies State[];

export function Leases({ counts }: { counts: LeaseCounts | undefined }) {
  const [state, setState] = useState<State>('provisioning');
  const [leases, setLeases] = useState<LeaseListItem[]>([]);
  const [timeout, setTimeoutSeconds] = useState(0);
  useEffect(() => {
    get<LeaseList>(`/v1/admin/leases?state=${state}&limit=100`)
      .then((r) => {
        setLeases(r.leases);
        setTimeoutSeconds(r.provisioning_timeout_seconds);
      })
      .catch(() => setLeases([]));
  }, [state, counts]);
  return (
    <>
      <h1>Leases</h1>
      <div role="tablist" aria-label="Lease state" class="tabs">
        {STATES.map((s) => (
          <button
            key={s}
            type="button"
            role="tab"
            aria-selected={s === state}
            onClick={() => setState(s)}
          >
            {s} {counts === undefined ? '' : `(${counts[s]})`}
          </button>
        ))}
      </div>
      <div class="scroll" role="tabpanel">
        <table>
          <caption class="sr-only">{state} leases</caption>
          <thead>
            <tr>
              <th scope="col">Lease</th>
              <th scope="col">Book</th>
              <th scope="col">GPUs</th>
              <th scope="col">Per hour</th>
              <th scope="col">Cluster</th>
              <th scope="col">Customer</th>
              {state === 'provisioning' && <th scope="col">Age / timeout in</th>}
              {state === 'active' && <th scope="col">Ends</th>}
              {state === 'ended' && <th scope="col">Ended / revoked after</th>}
              {state === 'failed' && <th scope="col">Why</th>}
            </tr>
          </thead>
          <tbody>
            {leases.map((l) => (
              <tr
                key={l.lease_id}
                class={
                  l.timeout_in_seconds !== null && l.timeout_in_seconds < timeout * 0.2
                    ? 'attention'
                    : ''
                }
              >
                <td>{l.lease_id}</td>
                <td>
                  {l.gpu_type} {l.zone}
                </td>
                <td>{l.gpu_count}</td>
                <td>{money(l.hourly_cost)}</td>
                <td>
                  <a href={`#/cluster/${l.cluster_id}`}>{l.cluster_id}</a>
                </td>
                <td>{l.customer_id}</td>
                {state === 'provisioning' && (
                  <td>
                    {l.age_seconds} s / {l.timeout_in_seconds ?? '–'} s
                  </td>
                )}
                {state === 'active' && <td>{when(l.end_time)}</td>}
                {state === 'ended' && (
                  <td>
                    {when(l.ended_at)} /{' '}
                    {l.revocation_seconds === null ? 'not confirmed' : `${l.revocation_seconds} s`}
                  </td>
                )}
                {state === 'failed' && <td>{l.failure ?? ''}</td>}
              </tr>
            ))}
          </tbody>
        </table>
        {leases.length === 0 && <p>None.</p>}
      </div>
    </>
  );
}
