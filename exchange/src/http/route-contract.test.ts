import { describe, expect, it } from 'vitest';

import { buildApp } from '../app.js';
import { RouteContractError, codesByStatus, contractOf } from './route-contract.js';

describe('contractOf', () => {
  it('reads the three kinds of access', () => {
    expect(contractOf('GET', '/x', { access: 'customer', scope: 'read', rate: 'query' })).toEqual({
      access: 'customer',
      scope: 'read',
      rate: 'query',
    });
    // A route several kinds of token may call: any one of the scopes.
    expect(
      contractOf('DELETE', '/x', {
        access: 'customer',
        scope: ['trade', 'provider'],
        rate: 'cancel',
        bodyOptional: true,
      }),
    ).toEqual({
      access: 'customer',
      scope: ['trade', 'provider'],
      rate: 'cancel',
      bodyOptional: true,
    });
    expect(contractOf('GET', '/x', { access: 'admin' })).toEqual({ access: 'admin' });
    expect(contractOf('GET', '/x', { access: 'public', errors: ['not_found'] })).toEqual({
      access: 'public',
      errors: ['not_found'],
    });
    expect(contractOf('GET', '/x', { access: 'public', rate: 'address' })).toEqual({
      access: 'public',
      rate: 'address',
    });
  });

  it.each([
    ['no config', undefined],
    ['no access', {}],
    ['an unknown access', { access: 'everyone' }],
    ['a customer route without a scope (D24)', { access: 'customer', rate: 'query' }],
    ['a customer route without a rate class (D18)', { access: 'customer', scope: 'read' }],
    ['an unknown scope', { access: 'customer', scope: 'root', rate: 'query' }],
    ['an empty list of scopes', { access: 'customer', scope: [], rate: 'query' }],
    ['an unknown scope in a list', { access: 'customer', scope: ['read', 'root'], rate: 'query' }],
    ['a body optional but not said true or false', { access: 'admin', bodyOptional: 'yes' }],
    ['an unknown rate class', { access: 'customer', scope: 'read', rate: 'burst' }],
    ['a scope on an admin route', { access: 'admin', scope: 'admin' }],
    ['a rate on a public route', { access: 'public', rate: 'query' }],
    ['the per-address rate on an admin route', { access: 'admin', rate: 'address' }],
    [
      'the per-address rate on a customer route',
      { access: 'customer', scope: 'read', rate: 'address' },
    ],
    ['an error code outside the catalogue', { access: 'public', errors: ['oops'] }],
  ])('refuses %s, naming the route', (_name, config) => {
    expect(() => contractOf(['GET', 'HEAD'], '/v1/x', config)).toThrow(RouteContractError);
    expect(() => contractOf(['GET', 'HEAD'], '/v1/x', config)).toThrow(/GET,HEAD \/v1\/x/);
  });
});

describe('routeGuards', () => {
  it('refuses to register a route that does not say who may call it', () => {
    const app = buildApp({ logLevel: 'silent' }, 'offline');
    expect(() => app.get('/v1/unguarded', () => ({}))).toThrow(/config\.access/);
    expect(() =>
      app.get('/v1/public', { config: { access: 'public' } }, () => ({ ok: true })),
    ).not.toThrow();
  });

  it('an app built without services still serves its public routes', async () => {
    const app = buildApp({ logLevel: 'silent' }, 'offline');
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    await app.close();
  });
});

describe('codesByStatus', () => {
  it('groups catalogue codes by their HTTP status, in status order', () => {
    expect([
      ...codesByStatus(['order_already_filled', 'invalid_request', 'lease_not_active']),
    ]).toEqual([
      [400, ['invalid_request']],
      [409, ['order_already_filled', 'lease_not_active']],
    ]);
  });
});
