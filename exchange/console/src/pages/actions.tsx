// Actions: the operators' changes of the admin API, each with a required
// reason and a confirmation dialog; the audit log then shows them.

import { useRef, useState } from 'preact/hooks';

import { ApiError, GPU_TYPES, ZONES, api } from '../api.js';
import type { IssuedToken, Schemas } from '../types.js';

type Field = 'account' | 'cluster' | 'lease' | 'book' | 'amount' | 'limit' | 'scopes';

interface Action {
  id: string;
  label: string;
  fields: Field[];
  call: (v: Values, reason: string) => [string, unknown];
}

type Values = Record<Field, string>;

const acct = (v: Values): string => `/v1/admin/accounts/${encodeURIComponent(v.account)}`;
const book = (v: Values): string => `/v1/admin/books/${v.book.replace(' ', '/')}`;

const ACTIONS: Action[] = [
  {
    id: 'suspend',
    label: 'Suspend account',
    fields: ['account'],
    call: (v, reason) => [`${acct(v)}/suspend`, { reason } satisfies Schemas['AdminReason']],
  },
  {
    id: 'reinstate',
    label: 'Reinstate account',
    fields: ['account'],
    call: (v, reason) => [`${acct(v)}/reinstate`, { reason } satisfies Schemas['AdminReason']],
  },
  {
    id: 'token',
    label: 'New token',
    fields: ['account', 'scopes'],
    call: (v, reason) => [
      `${acct(v)}/tokens`,
      {
        // As typed: the exchange checks the names (400 naming a wrong one).
        scopes: v.scopes.split(/[ ,]+/).filter(Boolean) as Schemas['IssueToken']['scopes'],
        reason,
      } satisfies Schemas['IssueToken'],
    ],
  },
  {
    id: 'credit',
    label: 'Set credit limit',
    fields: ['account', 'limit'],
    call: (v, reason) => [
      `${acct(v)}/credit-limit`,
      {
        credit_limit: v.limit === '' ? null : Number(v.limit),
        reason,
      } satisfies Schemas['CreditLimitChange'],
    ],
  },
  {
    id: 'halt',
    label: 'Halt book',
    fields: ['book'],
    call: (v, reason) => [`${book(v)}/halt`, { reason } satisfies Schemas['AdminBookAction']],
  },
  {
    id: 'resume',
    label: 'Resume book',
    fields: ['book'],
    call: (v, reason) => [`${book(v)}/resume`, { reason } satisfies Schemas['AdminBookAction']],
  },
  {
    id: 'cordon',
    label: 'Cordon cluster',
    fields: ['cluster'],
    call: (v, reason) => [
      `/v1/admin/clusters/${encodeURIComponent(v.cluster)}/cordon`,
      { reason } satisfies Schemas['AdminClusterAction'],
    ],
  },
  {
    id: 'uncordon',
    label: 'Uncordon cluster',
    fields: ['cluster'],
    call: (v, reason) => [
      `/v1/admin/clusters/${encodeURIComponent(v.cluster)}/uncordon`,
      { reason } satisfies Schemas['AdminClusterAction'],
    ],
  },
  {
    id: 'fail',
    label: 'Fail lease',
    fields: ['lease'],
    call: (v, reason) => [
      `/v1/admin/leases/${encodeURIComponent(v.lease)}/fail`,
      { reason } satisfies Schemas['AdminLeaseAction'],
    ],
  },
  {
    id: 'revoke',
    label: 'Revoke lease',
    fields: ['lease'],
    call: (v, reason) => [
      `/v1/admin/leases/${encodeURIComponent(v.lease)}/revoke`,
      { reason } satisfies Schemas['AdminLeaseAction'],
    ],
  },
  {
    id: 'adjust',
    label: 'Adjustment',
    fields: ['account', 'amount'],
    call: (v, reason) => [
      `${acct(v)}/adjustments`,
      { amount: Number(v.amount), reason } satisfies Schemas['AdminAdjustment'],
    ],
  },
  {
    id: 'payout',
    label: 'Payout',
    fields: ['account', 'amount'],
    call: (v, reason) => [
      `${acct(v)}/payouts`,
      { amount: Number(v.amount), reason } satisfies Schemas['AdminPayout'],
    ],
  },
];

const LABELS: Record<Field, string> = {
  account: 'Account id',
  cluster: 'Cluster id',
  lease: 'Lease id',
  book: 'Book',
  amount: 'Amount (dollars)',
  limit: 'Credit limit (dollars; empty: none)',
  scopes: 'Scopes (comma-separated)',
};

const BOOKS = GPU_TYPES.flatMap((g) => ZONES.map((z) => `${g} ${z}`));

export function Actions() {
  const [id, setId] = useState(ACTIONS[0]?.id ?? '');
  const [values, setValues] = useState<Values>({
    account: '',
    cluster: '',
    lease: '',
    book: BOOKS[0] ?? '',
    amount: '',
    limit: '',
    scopes: 'read',
  });
  const [reason, setReason] = useState('');
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const dialog = useRef<HTMLDialogElement>(null);
  const action = ACTIONS.find((a) => a.id === id) ?? ACTIONS[0];
  if (action === undefined) return null;
  const set = (f: Field, v: string): void => setValues((old) => ({ ...old, [f]: v }));
  const ask = (e: Event): void => {
    e.preventDefault();
    setResult(undefined);
    dialog.current?.showModal();
  };
  const run = async (): Promise<void> => {
    dialog.current?.close();
    const [path, body] = action.call(values, reason.trim());
    try {
      // Any action's answer; only a new token's (IssuedToken) holds `token`.
      const answer = await api<Partial<Pick<IssuedToken, 'token'>>>('POST', path, body);
      const token =
        typeof answer.token === 'string' ? ` New token (shown once): ${answer.token}` : '';
      setResult({ ok: true, text: `${action.label}: done.${token}` });
      setReason('');
    } catch (err) {
      setResult({
        ok: false,
        text: err instanceof ApiError ? `${err.code}: ${err.message}` : String(err),
      });
    }
  };
  return (
    <>
      <h1>Actions</h1>
      <form class="action" onSubmit={ask}>
        <label for="action">Action</label>
        <select id="action" value={id} onChange={(e) => setId(e.currentTarget.value)}>
          {ACTIONS.map((a) => (
            <option key={a.id} value={a.id}>
              {a.label}
            </option>
          ))}
        </select>
        {action.fields.map((f) => (
          <>
            <label for={`f-${f}`}>{LABELS[f]}</label>
            {f === 'book' ? (
              <select
                id={`f-${f}`}
                value={values.book}
                onChange={(e) => set('book', e.currentTarget.value)}
              >
                {BOOKS.map((b) => (
                  <option key={b} value={b}>
                    {b}
                  </option>
                ))}
              </select>
            ) : (
              <input
                id={`f-${f}`}
                required={f !== 'limit'}
                inputMode={f === 'amount' || f === 'limit' ? 'decimal' : undefined}
                value={values[f]}
                onInput={(e) => set(f, e.currentTarget.value)}
              />
            )}
          </>
        ))}
        <label for="reason">Reason (kept in the audit log)</label>
        <textarea
          id="reason"
          required
          maxLength={1000}
          value={reason}
          onInput={(e) => setReason(e.currentTarget.value)}
        />
        <button type="submit">{action.label}…</button>
      </form>
      {result !== undefined && (
        <p
          role="status"
          class={result.ok ? 'ok' : 'error'}
          data-result={result.ok ? 'ok' : 'error'}
        >
          {result.text}
        </p>
      )}
      <dialog ref={dialog} aria-labelledby="confirm-title">
        <h2 id="confirm-title">{action.label}?</h2>
        <p>
          {action.fields.map((f) => `${LABELS[f]}: ${values[f]}`).join(' · ')}
          <br />
          Reason: {reason}
        </p>
        <div class="buttons">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button type="button" class="danger" onClick={() => void run()}>
            Confirm
          </button>
        </div>
      </dialog>
    </>
  );
}
