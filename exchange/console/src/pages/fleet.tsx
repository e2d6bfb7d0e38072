// Fleet: every provider, cluster and node, live from /v1/console/events;
// clusters with an offline or stale node first, highlighted. A cluster's
// page adds its history of status changes.

import { useEffect, useState } from 'preact/hooks';

import { get, money, when } from '../api.js';
import type { ClusterHistory, Fleet, FleetCluster, FleetNode, StatusChange } from '../types.js';

function nodeStatus(n: FleetNode): string {
  return n.stale ? 'stale' : n.status;
}

function gpus(n: FleetNode): string {
  if (n.gpus.length === 0) return '–';
  const first = n.gpus[0];
  const util = Math.round(n.gpus.reduce((a, g) => a + g.utilization_percent, 0) / n.gpus.length);
  const temp = Math.max(...n.gpus.map((g) => g.temperature_c));
  return `${n.gpus.length}× ${first?.model ?? ''} ${Math.round((first?.memory_mib ?? 0) / 1024)} GiB · ${util}% · ${temp}°C`;
}

function Nodes({ c }: { c: FleetCluster }) {
  return (
    <table>
      <caption class="sr-only">Nodes of {c.cluster_id}</caption>
      <thead>
        <tr>
          <th scope="col">Node</th>
          <th scope="col">Status</th>
          <th scope="col">Heartbeat</th>
          <th scope="col">GPUs</th>
          <th scope="col">Problem</th>
        </tr>
      </thead>
      <tbody>
        {c.nodes.map((n) => (
          <tr key={n.node_id} class={`node ${nodeStatus(n)}`} data-node={n.hostname}>
            <td>{n.hostname}</td>
            <td>
              <span class={`badge ${nodeStatus(n)}`}>{nodeStatus(n)}</span>
            </td>
            <td>
              {n.heartbeat_age_seconds === null ? 'never' : `${n.heartbeat_age_seconds} s ago`}
            </td>
            <td>{gpus(n)}</td>
            <td>{n.problem ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ClusterCard({ c, provider }: { c: FleetCluster; provider: string }) {
  return (
    <section class={c.attention ? 'card attention' : 'card'} data-cluster={c.cluster_id}>
      <h3>
        <a href={`#/cluster/${c.cluster_id}`}>{c.cluster_id}</a> · {c.gpu_type} · {c.zone}
        {c.cordoned_at !== null && (
          <span class="badge offline">
            cordoned{c.cordoned_by === 'provider' ? ' by its provider' : ''}
          </span>
        )}
      </h3>
      <p class="facts">
        {provider} · agent {c.agent_version ?? '–'} ({c.provisioner ?? '–'}) · {c.nodes_online}{' '}
        online, {c.nodes_offline} offline, {c.nodes_stale} stale · {c.open_sells} open sells (
        {c.open_sell_gpus} GPUs) · {c.leases_provisioning} provisioning, {c.leases_active} active ·
        earned {money(c.earnings.day)} 24 h, {money(c.earnings.week)} 7 d, {money(c.earnings.all)}{' '}
        all
      </p>
      <div class="scroll">
        <Nodes c={c} />
      </div>
    </section>
  );
}

export function FleetPage({ fleet }: { fleet: Fleet | undefined }) {
  if (fleet === undefined) return <p class="loading">Loading the fleet…</p>;
  const attention = fleet.providers.flatMap((p) => p.clusters).filter((c) => c.attention).length;
  return (
    <>
      <h1>Fleet</h1>
      <p role="status" class={attention > 0 ? 'error' : 'ok'}>
        {attention > 0
          ? `${attention} cluster(s) with offline or stale nodes`
          : 'Every node is reporting'}{' '}
        · as of {when(fleet.at)}
      </p>
      {fleet.providers.length === 0 && <p>No provider has a cluster yet.</p>}
      {fleet.providers.map((p) => (
        <section key={p.account_id} class="provider" aria-label={`Provider ${p.name}`}>
          <h2>
            {p.name} <small>{p.account_id}</small>
            {p.suspended && <span class="badge offline">suspended</span>}
          </h2>
          <p class="facts">
            Earned {money(p.earnings.day)} in 24 h, {money(p.earnings.week)} in 7 days,{' '}
            {money(p.earnings.all)} in all
          </p>
          {p.clusters.map((c) => (
            <ClusterCard key={c.cluster_id} c={c} provider={p.name} />
          ))}
        </section>
      ))}
    </>
  );
}

export function ClusterPage({ id, fleet }: { id: string; fleet: Fleet | undefined }) {
  const [changes, setChanges] = useState<StatusChange[]>([]);
  const provider = fleet?.providers.find((p) => p.clusters.some((c) => c.cluster_id === id));
  const cluster = provider?.clusters.find((c) => c.cluster_id === id);
  // Read again whenever the fleet changes: a status change is in both.
  useEffect(() => {
    get<ClusterHistory>(`/v1/admin/clusters/${encodeURIComponent(id)}/history?limit=100`)
      .then((h) => setChanges(h.changes))
      .catch(() => setChanges([]));
  }, [id, fleet]);
  return (
    <>
      <p>
        <a href="#/fleet">← Fleet</a>
      </p>
      <h1>Cluster {id}</h1>
      {cluster !== undefined && provider !== undefined ? (
        <ClusterCard c={cluster} provider={provider.name} />
      ) : (
        <p>Loading…</p>
      )}
      <h2>History</h2>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Node</th>
              <th scope="col">What</th>
              <th scope="col">Change</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((c, i) => (
              <tr key={i}>
                <td>{when(c.at)}</td>
                <td>{c.hostname ?? '(cluster)'}</td>
                <td>{c.field}</td>
                <td>
                  {c.before ?? '–'} → {c.after ?? '–'}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
