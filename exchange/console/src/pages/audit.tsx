// Audit: who did what, when and why (GET /v1/admin/audit), newest first.

import { useEffect, useState } from 'preact/hooks';

import { get, when } from '../api.js';
import type { AuditEntry, AuditList } from '../types.js';

export function Audit() {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    get<AuditList>('/v1/admin/audit?limit=100')
      .then((r) => setEntries(r.entries))
      .catch(() => setEntries([]));
  }, [tick]);
  useEffect(() => {
    const t = setInterval(() => setTick((n) => n + 1), 5_000);
    return () => clearInterval(t);
  }, []);
  return (
    <>
      <h1>Audit log</h1>
      <div class="scroll">
        <table>
          <caption class="sr-only">Operator actions, newest first</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Why</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e) => (
              <tr key={e.audit_id} data-action={e.action}>
                <td>{when(e.at)}</td>
                <td>{e.actor}</td>
                <td>{e.action}</td>
                <td>
                  {e.target_type} {e.target_id}
                </td>
                <td>{e.reason ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
