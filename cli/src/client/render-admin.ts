// The human output of the operators' answers (docs/api/admin.md).

import type { Schemas } from './api.js';
import { fields, money, pageLine, paint, signedMoney, table, text, time } from './output.js';
import type { Style } from './output.js';
import { showOrder } from './render-orders.js';
import { ids } from './render.js';
import type { Pairs } from './render.js';

type S = Schemas;

function status(s: string, style: Style): string {
  const bad = ['suspended', 'halted', 'failed', 'cancelled', 'terminated', 'offline'];
  return bad.includes(s) ? paint(s, 'red', style) : s;
}

export function showAdminAccount(a: S['AdminAccount'], style: Style, more: Pairs = []): string {
  return fields(
    [
      ['account', a.account_id],
      ['name', a.name],
      ['organization', `${a.organization} (${a.organization_id})`],
      [
        'status',
        status(a.status, style) +
          (a.suspended_at === null ? '' : ` since ${time(a.suspended_at, style)}`),
      ],
      ['scopes', ids(a.scopes)],
      ['live tokens', String(a.live_tokens)],
      ['balance', signedMoney(a.balance, style)],
      ['credit limit', money(a.credit_limit)],
      ['created', time(a.created_at, style)],
      ...more,
    ],
    style,
  );
}

export function showAdminAccounts(page: S['AdminAccountList'], style: Style): string {
  const rows = page.accounts.map((a) => [
    a.account_id,
    a.name,
    a.organization,
    status(a.status, style),
    a.scopes.join(','),
    signedMoney(a.balance, style),
    money(a.credit_limit),
    time(a.created_at, style),
  ]);
  return (
    table(
      ['account', 'name', 'organization', 'status', 'scopes', 'balance', 'credit limit', 'created'],
      rows,
      style,
    ) + pageLine(page, rows.length, style)
  );
}

export function showSuspension(s: S['AccountSuspension'], style: Style): string {
  return showAdminAccount(s.account, style, [['orders cancelled', ids(s.cancelled_order_ids)]]);
}

export function showCreatedAccount(a: S['CreatedAccount'], style: Style): string {
  return (
    fields(
      [
        ['account', a.account_id],
        ['organization', `${a.organization} (${a.organization_id})`],
        ['scopes', ids(a.scopes)],
        ['token id', a.token_id],
        ['token', a.token],
      ],
      style,
    ) + paint('The token is shown this once: hand it over now.\n', 'yellow', style)
  );
}

export function showTokens(list: S['TokenList'], style: Style): string {
  const rows = list.tokens.map((t) => [
    t.token_id,
    t.scopes.join(','),
    time(t.created_at, style),
    t.revoked_at === null ? 'live' : paint(`revoked ${time(t.revoked_at, style)}`, 'red', style),
  ]);
  return table(['token', 'scopes', 'created', 'state'], rows, style);
}

export function showToken(t: S['Token'], style: Style): string {
  return fields(
    [
      ['token id', t.token_id],
      ['account', t.account_id],
      ['scopes', ids(t.scopes)],
      ['created', time(t.created_at, style)],
      ['revoked', time(t.revoked_at, style)],
    ],
    style,
  );
}

export function showIssuedToken(t: S['IssuedToken'], style: Style): string {
  return (
    showToken(t, style) +
    fields([['token', t.token]], style) +
    paint('The token is shown this once: hand it over now.\n', 'yellow', style)
  );
}

export function showAdminOrder(o: S['AdminOrder'], style: Style): string {
  return showOrder(o.order, style, [['account', `${o.account_id} (${o.organization_id})`]]);
}

export function showPosting(p: S['AdminPosting'], style: Style): string {
  return fields(
    [
      ['transaction', `${p.transaction_id} (${p.transaction_kind})`],
      ['account', p.account_id],
      ['amount', signedMoney(p.amount, style)],
      ['balance', `${money(p.balance_before)} → ${money(p.balance)}`],
    ],
    style,
  );
}

function bookRow(b: S['AdminBook'], style: Style): string[] {
  return [
    b.gpu_type,
    b.zone,
    status(b.status, style),
    time(b.halted_at, style),
    String(b.open_orders),
  ];
}

const BOOK_HEAD = ['gpu', 'zone', 'status', 'halted at', 'open orders'];

export function showBooks(list: S['AdminBookList'], style: Style): string {
  return table(
    BOOK_HEAD,
    list.books.map((b) => bookRow(b, style)),
    style,
  );
}

export function showBook(b: S['AdminBook'], style: Style): string {
  return table(BOOK_HEAD, [bookRow(b, style)], style);
}

export function showClusters(list: S['ClusterList'], style: Style): string {
  const rows = list.clusters.map((c) => [
    c.cluster_id,
    c.provider_account_id,
    c.gpu_type,
    c.zone,
    String(c.nodes.length),
    c.cordoned_at === null ? '-' : paint(time(c.cordoned_at, style), 'red', style),
    time(c.created_at, style),
  ]);
  return table(['cluster', 'provider', 'gpu', 'zone', 'nodes', 'cordoned', 'created'], rows, style);
}

export function showCluster(c: S['Cluster'], style: Style, more: Pairs = []): string {
  const head = fields(
    [
      ['cluster', c.cluster_id],
      ['provider', c.provider_account_id],
      ['book', `${c.gpu_type} in ${c.zone}`],
      [
        'cordoned',
        c.cordoned_at === null ? 'no' : paint(`since ${time(c.cordoned_at, style)}`, 'red', style),
      ],
      ['created', time(c.created_at, style)],
      ...more,
    ],
    style,
  );
  const nodes = c.nodes.map((n) => [
    n.node_id,
    n.hostname,
    String(n.gpus),
    status(n.status, style),
    time(n.last_heartbeat, style),
  ]);
  return `${head}\n${table(['node', 'hostname', 'gpus', 'status', 'last heartbeat'], nodes, style)}`;
}

export function showCordon(c: S['ClusterCordon'], style: Style): string {
  return showCluster(c.cluster, style, [['orders withdrawn', ids(c.cancelled_order_ids)]]);
}

/** before → after of an audit entry, compact: `status: active → suspended`. */
export function changes(
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): string {
  const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])];
  const show = (o: Record<string, unknown> | null, k: string): string =>
    o === null || !(k in o) ? '-' : JSON.stringify(o[k]);
  return keys.map((k) => `${k}: ${show(before, k)} → ${show(after, k)}`).join('; ');
}

export function showAudit(page: S['AuditList'], style: Style): string {
  const rows = page.entries.map((e) => [
    time(e.at, style),
    e.actor,
    e.action,
    `${e.target_type} ${e.target_id}`,
    text(e.reason),
    changes(e.before, e.after),
  ]);
  return (
    table(['at', 'actor', 'action', 'target', 'reason', 'change'], rows, style) +
    pageLine(page, rows.length, style)
  );
}

export function showPlatform(p: S['PlatformAccount'], style: Style): string {
  return fields(
    [
      ['account', p.account_id],
      ['balance', signedMoney(p.balance, style)],
      ['fees earned', money(p.fees_earned)],
      ['fees refunded', money(p.fees_refunded)],
    ],
    style,
  );
}
