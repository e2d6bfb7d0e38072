// The operators' web console (issue 23, docs/console.md): sign in, then
// Fleet, Leases, Markets, Money, Actions and Audit, chosen by the URL's hash.

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import { ApiError, api, get, setCsrf } from './api.js';
import { useLive } from './live.js';
import { Actions } from './pages/actions.js';
import { Audit } from './pages/audit.js';
import { ClusterPage, FleetPage } from './pages/fleet.js';
import { Leases } from './pages/leases.js';
import { Markets } from './pages/markets.js';
import { Money } from './pages/money.js';
import type { Session } from './types.js';
import './style.css';

const PAGES = [
  ['fleet', 'Fleet'],
  ['leases', 'Leases'],
  ['markets', 'Markets'],
  ['money', 'Money'],
  ['actions', 'Actions'],
  ['audit', 'Audit'],
] as const;

function useHash(): string {
  const [hash, setHash] = useState(location.hash.slice(2) || 'fleet');
  useEffect(() => {
    const on = (): void => setHash(location.hash.slice(2) || 'fleet');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function SignIn({ onIn }: { onIn: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setError('');
    try {
      const s = await api<Session>('POST', '/v1/console/session', { token });
      setToken('');
      onIn(s);
    } catch (err) {
      setError(err instanceof ApiError ? `${err.code}: ${err.message}` : String(err));
    }
  };
  return (
    <main class="signin">
      <h1>gpux console</h1>
      <form onSubmit={(e) => void submit(e)}>
        <label for="token">Operator token</label>
        <input
          id="token"
          type="password"
          autocomplete="off"
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        <p class="hint">The admin token, or an account token with the admin scope.</p>
        <button type="submit">Sign in</button>
        {error !== '' && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}

function Shell({ session, onOut }: { session: Session; onOut: () => void }) {
  const hash = useHash();
  const live = useLive();
  const [page, arg] = hash.split('/');
  const signOut = async (): Promise<void> => {
    await api('DELETE', '/v1/console/session').catch(() => undefined);
    onOut();
  };
  return (
    <>
      <header>
        <span class="brand">gpux</span>
        <nav aria-label="Pages">
          {PAGES.map(([id, name]) => (
            <a
              key={id}
              href={`#/${id}`}
              aria-current={
                page === id || (id === 'fleet' && page === 'cluster') ? 'page' : undefined
              }
            >
              {name}
            </a>
          ))}
        </nav>
        <span class="who">
          <span
            class={live.connected ? 'dot on' : 'dot'}
            title={live.connected ? 'live' : 'reconnecting'}
          />
          {session.actor}
          <button type="button" onClick={() => void signOut()}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        {page === 'cluster' && arg !== undefined ? (
          <ClusterPage id={arg} fleet={live.fleet} />
        ) : page === 'leases' ? (
          <Leases counts={live.leases} />
        ) : page === 'markets' ? (
          <Markets />
        ) : page === 'money' ? (
          <Money counts={live.leases} />
        ) : page === 'actions' ? (
          <Actions />
        ) : page === 'audit' ? (
          <Audit />
        ) : (
          <FleetPage fleet={live.fleet} />
        )}
      </main>
    </>
  );
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  useEffect(() => {
    get<Session>('/v1/console/session')
      .then((s) => {
        setCsrf(s.csrf_token);
        setSession(s);
      })
      .catch(() => setSession(null));
  }, []);
  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) {
    return (
      <SignIn
        onIn={(s) => {
          setCsrf(s.csrf_token);
          setSession(s);
        }}
      />
    );
  }
  return <Shell session={session} onOut={() => setSession(null)} />;
}

const root = document.getElementById('app');
if (root !== null) render(<App />, root);
