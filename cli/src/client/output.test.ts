// Human output (docs/cli.md): dollars, times in the user's zone, tables,
// and colour only on a terminal without NO_COLOR.

import { describe, expect, it } from 'vitest';

import { fields, money, pageLine, paint, signedMoney, table, time, wantsColour } from './output.js';
import type { Style } from './output.js';
import { changes } from './render-admin.js';
import { showBalance, showTransactions } from './render.js';

const PLAIN: Style = { colour: false, timeZone: 'UTC' };
const COLOUR: Style = { colour: true, timeZone: 'UTC' };
const ESC = '\u001b[';

describe('colour', () => {
  it('is on only on a terminal, and never with NO_COLOR set', () => {
    expect(wantsColour(true, {})).toBe(true);
    expect(wantsColour(false, {})).toBe(false);
    expect(wantsColour(true, { NO_COLOR: '1' })).toBe(false);
    // no-color.org: an empty NO_COLOR is as if unset.
    expect(wantsColour(true, { NO_COLOR: '' })).toBe(true);
  });

  it('paints with escapes only when on', () => {
    expect(paint('x', 'red', PLAIN)).toBe('x');
    expect(paint('x', 'red', COLOUR)).toBe(`${ESC}31mx${ESC}39m`);
    expect(signedMoney(-5, PLAIN)).toBe('-$5.00');
    expect(signedMoney(5, COLOUR)).toBe(`${ESC}32m+$5.00${ESC}39m`);
  });
});

describe('money', () => {
  it.each([
    [0, '$0.00'],
    [1234.5, '$1,234.50'],
    [-12, '-$12.00'],
    [0.01, '$0.01'],
    [null, 'none'],
  ])('%s → %s', (amount, shown) => {
    expect(money(amount)).toBe(shown);
  });
});

describe('time', () => {
  it("shows the API's ISO time in the user's zone", () => {
    expect(time('2026-11-22T10:00:00.000Z', PLAIN)).toBe('2026-11-22 10:00:00 UTC');
    expect(time('2026-11-22T10:00:00Z', { colour: false, timeZone: 'America/Los_Angeles' })).toBe(
      '2026-11-22 02:00:00 PST',
    );
    expect(time(null, PLAIN)).toBe('-');
  });
});

describe('tables and fields', () => {
  it('aligns the columns, without borders or escapes when colour is off', () => {
    expect(
      table(
        ['id', 'amount'],
        [
          ['a', '$1.00'],
          ['bbbb', '-$20.00'],
        ],
        PLAIN,
      ),
    ).toBe('id    amount\na     $1.00\nbbbb  -$20.00\n');
    expect(table(['id'], [], PLAIN)).toBe('(none)\n');
    expect(
      fields(
        [
          ['a', '1'],
          ['long', '2'],
        ],
        PLAIN,
      ),
    ).toBe('a     1\nlong  2\n');
  });

  it('says where a page is and how to get the next', () => {
    expect(pageLine({ total: 57, limit: 20, offset: 0 }, 20, PLAIN)).toBe(
      '1–20 of 57; next page: --offset 20\n',
    );
    expect(pageLine({ total: 57, limit: 20, offset: 40 }, 17, PLAIN)).toBe('41–57 of 57\n');
    expect(pageLine({ total: 0, limit: 20, offset: 0 }, 0, PLAIN)).toBe('');
  });
});

describe('renderers', () => {
  const account = {
    account_id: 'acc_1',
    name: 'alice',
    organization: 'acme',
    organization_id: 'org_1',
    balance: -12.5,
    credit_limit: 500,
    created_at: '2026-05-01T00:00:00Z',
  };

  it('shows a balance and its credit limit', () => {
    expect(showBalance(account, PLAIN)).toBe('balance       -$12.50\ncredit limit  $500.00\n');
    expect(showBalance({ ...account, credit_limit: null }, PLAIN)).toContain('credit limit  none');
  });

  it('shows ledger rows with their kinds and signed amounts', () => {
    const out = showTransactions(
      {
        transactions: [
          {
            transaction_id: 'txn_1',
            transaction_kind: 'adjustment',
            kind: 'adjustment',
            amount: 25,
            order_id: null,
            lease_id: null,
            created_at: '2026-05-01T00:00:00Z',
          },
        ],
        total: 1,
        limit: 20,
        offset: 0,
      },
      PLAIN,
    );
    expect(out.split('\n')).toEqual([
      'time                     transaction  entry       amount   order  lease  id',
      '2026-05-01 00:00:00 UTC  adjustment   adjustment  +$25.00  -      -      txn_1',
      '1–1 of 1',
      '',
    ]);
  });

  it("shows an audit entry's change as before → after", () => {
    expect(changes({ status: 'active' }, { status: 'suspended', suspended_at: 't' })).toBe(
      'status: "active" → "suspended"; suspended_at: - → "t"',
    );
    expect(changes(null, { name: 'alice' })).toBe('name: - → "alice"');
  });
});
