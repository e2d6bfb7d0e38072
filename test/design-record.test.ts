// The design record stays the repository's own and complete
// (docs/decisions.md, docs/architecture.md): every decision the code, tests
// and docs cite has an entry, every contract rule and flow they cite exists,
// nothing points to a document outside the repository, the record names only
// paths that exist, imports keep the direction of docs/architecture.md's code
// map, and what people read when they run the programs (banners, --help,
// log lines) says rules in words instead of bare decision numbers.
//
// It reads files only. Each check is a function of test/support/design-record.ts,
// tried first on strings made to fail, then on the repository.

import { describe, expect, it } from 'vitest';

import {
  citedDecisions,
  citedRules,
  existsIn,
  importProblems,
  missingPaths,
  pointerProblems,
  readText,
  recordedDecisions,
  recordedFlows,
  recordedRules,
  repositoryFiles,
  repositoryRoot,
  stringLiterals,
  userTextProblems,
} from './support/design-record.js';
import type { Problem } from './support/design-record.js';

const ROOT = repositoryRoot();
const DECISIONS = readText(ROOT, 'docs/decisions.md');
const ARCHITECTURE = readText(ROOT, 'docs/architecture.md');
const EXISTS = existsIn(ROOT);

/** The checker itself holds the bad examples it is tried on. */
const CHECKER = new Set(['test/design-record.test.ts', 'test/support/design-record.ts']);
const FILES = repositoryFiles(ROOT).filter((f) => !CHECKER.has(f));

/**
 * Applied migrations are never edited (exchange/src/db/migrate.ts refuses a
 * database whose applied files changed), so an old pointer in one stays;
 * their decision citations are still checked.
 */
const IMMUTABLE = 'exchange/migrations/';

/** Files whose every string is shown to people: banners, --help, settings problems. */
const USER_TEXT =
  /^(cli\/src\/[^/]+|(agent|exchange)\/src\/(main|cli|config|settings|env-settings)|shared\/src\/settings[^/]*)\.ts$/;
const PROGRAM_SOURCE = /^(agent|exchange|shared|cli)\/src\/.*\.ts$/;
const NOT_SHIPPED = /\.test\.ts$|\/testing\//;

/** One line per problem, a problem found twice (a citation and its range) once. */
const listed = (problems: readonly (Problem & { file: string })[]): string[] => [
  ...new Set(problems.map((p) => `${p.file}:${p.line}: ${p.what}`)),
];

const exists =
  (...paths: string[]) =>
  (p: string): boolean =>
    paths.includes(p);

describe('the checks, on strings made to fail', () => {
  it('finds decision citations, ranges included', () => {
    const cited = (s: string): number[] => citedDecisions(s).map((c) => c.number);
    expect(cited('// refund at once (D26)')).toEqual([26]);
    expect(cited("describe('D9 / spec rule 3: …')")).toEqual([9]);
    expect(cited('decisions D1-D3, D24').sort((a, b) => a - b)).toEqual([1, 1, 2, 3, 3, 24]);
    expect(new Set(cited('(D25–D28)'))).toEqual(new Set([25, 26, 27, 28]));
    expect(new Set(cited('every order (D5…D7)'))).toEqual(new Set([5, 6, 7]));
    expect(cited("decision: 'D34',")).toEqual([34]);
    expect(cited('line 1\nline 2 (D0)')).toEqual([0]);
    expect(citedDecisions('a\nb\nc D12')[0]?.line).toBe(3);
  });

  it('does not take hex, base64, hashes or identifiers for citations', () => {
    for (const s of [
      '0100007F:1F90 0100007F:D2A4 01',
      'B80D0120000000000000000001000000:1F94',
      'sha512-4H0XHfd2VufGjX7NjUyeue78sD0bRIoKSGjGqO+F5nSvL6jN48NAU7esd',
      'AAAAB3NzaC1kc3MAAACBAOxxeMhTajSGyfoAn/G8dKR30JkIuszK1t2QZ5bFRDmtQWSJ',
      'SHA256:D8J5OCtz5Ki5QQIyi56SUvLbGZ9eWWYpZ25OVCYSHXE',
      'const UD2 = D2_MAX + xD3; (8 per node, D-spec)',
    ]) {
      expect(citedDecisions(s), s).toEqual([]);
    }
  });

  it('reads the record: decisions, rules, flows', () => {
    const record = '## D1 Money\n- **D2 Fees.** …\n### D3 not this\n## D4x nor this\n';
    expect([...recordedDecisions(record)]).toEqual([1, 2]);
    expect([...recordedRules('- **Rule 1.** …\n- **Rule 12.** …\n- Rule 3.')]).toEqual([1, 12]);
    expect([...recordedFlows('### Flow 1: order\n### Flow 2: fill\n#### Flow 3')]).toEqual([1, 2]);
    expect(citedRules('(spec rule 4, D5) and rule 2: …').map((c) => c.number)).toEqual([4, 2]);
  });

  it('flags pointers to documents outside the repository', () => {
    const flows = new Set([1, 2, 5]);
    const problems = (file: string, text: string, ...paths: string[]): string[] =>
      pointerProblems(file, text, flows, exists('docs/architecture.md', ...paths)).map(
        (p) => p.what,
      );

    expect(problems('exchange/src/a.ts', '// (architecture.md flow 2)')).toEqual([
      'names architecture.md: write docs/architecture.md',
    ]);
    expect(problems('exchange/src/a.ts', '// see ../shared/spec/decisions.md')).toHaveLength(2);
    expect(problems('docs/x.md', 'rules of `service-spec.md`')).toContain(
      'points outside the repository: service-spec.md',
    );
    expect(problems('agent/src/a.ts', '// (provider-building-blocks §2)')).toHaveLength(1);
    expect(problems('deploy/a.yaml', '# version (package.json, CHANGELOG.md)')).toEqual([
      'names CHANGELOG.md, not in the repository',
    ]);
    expect(problems('exchange/src/a.ts', '// rebuilt at start (flow 5)')).toEqual([
      '"flow 5" does not say it means docs/architecture.md',
    ]);
    expect(problems('exchange/src/a.ts', '// (docs/architecture.md flows 2-4)')).toEqual([
      'flow 3 is not in docs/architecture.md',
      'flow 4 is not in docs/architecture.md',
    ]);
    // A Markdown link resolves from its file's folder.
    expect(problems('README.md', '[the map](architecture.md)')).toEqual([
      'names architecture.md: write docs/architecture.md',
    ]);

    const fine = [
      ['exchange/src/a.ts', '// (docs/architecture.md flow 2, D29)\n// docs/decisions.md'],
      ['exchange/src/a.ts', '// (docs/architecture.md\n//   flow 5)'],
      ['docs/providers.md', '## Events ([docs/architecture.md](architecture.md) flows 1 and 2)'],
      ['docs/api/errors.md', 'see [docs/decisions.md](../decisions.md)'],
      ['docs/providers.md', 'see [the README](../README.md) and `docs/matching.md`'],
      ['exchange/bench/a.ts', '// PROTOCOL-HTTP2.md in grpc/grpc; https://example.com/x/NOTES.md'],
    ] as const;
    for (const [file, text] of fine) {
      expect(
        pointerProblems(file, text, flows, exists('README.md', 'docs/matching.md')),
        text,
      ).toEqual([]);
    }
  });

  it('flags paths the record names that do not exist', () => {
    const page =
      'in `exchange/src/app.ts`, `agent/src/leases/`, `exchange/src/gone.ts`, `/v1/orders`';
    expect(
      missingPaths(page, exists('exchange/src/app.ts', 'agent/src/leases')).map((p) => p.what),
    ).toEqual(['names exchange/src/gone.ts, which does not exist']);
  });

  it('flags imports against the direction of dependencies', () => {
    const bad: [string, string][] = [
      ['exchange/src/a.ts', "import { startAgent } from '@gpux/agent';"],
      ['agent/src/a.ts', "import type { Market } from '../../exchange/src/market/market.js';"],
      ['shared/src/a.ts', "export { AgentServiceClient } from '@gpux/proto';"],
      ['exchange/src/matching/a.ts', "import { readFileSync } from 'node:fs';"],
      ['exchange/src/matching/a.ts', "import type { Database } from '../db/database.js';"],
      ['agent/src/ssh/a.ts', "const w = await import('../leases/lease-worker.js');"],
    ];
    for (const [file, text] of bad) expect(importProblems(file, text), text).toHaveLength(1);

    const good: [string, string][] = [
      ['exchange/src/a.ts', "import { GpuxError } from '@gpux/shared';\nimport pino from 'pino';"],
      ['exchange/src/matching/a.ts', "import { HOUR_MS } from '@gpux/shared';\nimport './b.js';"],
      [
        'agent/src/ssh/a.ts',
        "import { Server } from 'ssh2';\nimport type { X } from './types.js';",
      ],
      ['cli/src/a.ts', "import { runAgent } from '@gpux/agent';\nimport '@gpux/exchange';"],
      ['exchange/src/matching/a.test.ts', "import { readFileSync } from 'node:fs';"],
    ];
    for (const [file, text] of good) expect(importProblems(file, text), text).toEqual([]);
  });

  it('finds the strings of source, not its comments', () => {
    const src = "// (D1) 'not this'\nconst a = 'x (D2)'; /* \"nor D3\" */ log(`y ${b('z')} D4`);";
    expect(stringLiterals(src).map((s) => s.text)).toEqual(['x (D2)', "y ${b('z')} D4"]);
  });

  it('flags decision numbers in what people read, not in comments', () => {
    const banner = '// terminate (D26)\nbanner(`  # 5. terminate: refunded (D26)`);\n';
    expect(userTextProblems(banner, true).map((p) => p.line)).toEqual([2]);
    const logs =
      "log.warn({ err }, 'a revoked lease (D30)');\nconst m = 'an API message (D6)';\n" +
      'logger.info(\n  { id },\n  `sold (D27)`,\n);\n';
    expect(userTextProblems(logs, false).map((p) => p.line)).toEqual([1, 5]);
    expect(userTextProblems("log.info('terminated; see docs/api/leases.md');", false)).toEqual([]);
  });
});

describe('the repository', () => {
  it('is read whole: the scan sees code, tests, docs, the proto and the manifests', () => {
    for (const f of [
      'README.md',
      'docs/providers.md',
      'docs/api/openapi.json',
      'proto/agent.proto',
      'exchange/migrations/0001_accounts_and_ledger.sql',
      'exchange/src/matching/order-book.ts',
      'agent/src/leases/reconcile-plan.test.ts',
      'deploy/agent/base/deployment.yaml',
    ]) {
      expect(FILES).toContain(f);
    }
    expect(FILES.some((f) => f.startsWith('proto/src/gen/') || f.includes('node_modules'))).toBe(
      false,
    );
    const citations = FILES.reduce((n, f) => n + citedDecisions(readText(ROOT, f)).length, 0);
    expect(citations).toBeGreaterThan(1000);
  });

  it('docs/decisions.md has one entry per decision, D1 to the last, in order', () => {
    const headings = [...DECISIONS.matchAll(/^## D(\d+) \S/gm)].map((m) => Number(m[1]));
    expect(headings.length).toBeGreaterThanOrEqual(34);
    expect(headings).toEqual(headings.map((_, i) => i + 1));
  });

  it('every decision entry says what it settles, why, and where it lives', () => {
    const sections = DECISIONS.split(/^(?=## )/m).filter((s) => /^## D\d+ /.test(s));
    for (const s of sections) {
      const title = s.slice(0, s.indexOf('\n'));
      expect(s, title).toContain('**Settles.**');
      expect(s, title).toContain('**Why.**');
      const where = s.slice(s.indexOf('**Where.**'));
      expect(where, title).toMatch(/`(shared|proto|exchange|agent|cli|test|deploy|docs)\/[^`]+`/);
    }
  });

  it('every decision cited anywhere is in docs/decisions.md', () => {
    const recorded = recordedDecisions(DECISIONS);
    const missing = FILES.flatMap((file) =>
      citedDecisions(readText(ROOT, file))
        .filter((c) => !recorded.has(c.number))
        .map((c) => ({ file, line: c.line, what: `cites D${c.number}, which has no entry` })),
    );
    expect(listed(missing)).toEqual([]);
  });

  it('every contract rule cited anywhere is restated in docs/decisions.md', () => {
    const recorded = recordedRules(DECISIONS);
    expect([...recorded]).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const missing = FILES.flatMap((file) =>
      citedRules(readText(ROOT, file))
        .filter((c) => !recorded.has(c.number))
        .map((c) => ({ file, line: c.line, what: `cites rule ${c.number}, which is not there` })),
    );
    expect(listed(missing)).toEqual([]);
  });

  it('nothing points to a document outside the repository', () => {
    const flows = recordedFlows(ARCHITECTURE);
    expect(flows.size).toBeGreaterThanOrEqual(5);
    const problems = FILES.filter((f) => !f.startsWith(IMMUTABLE)).flatMap((file) =>
      pointerProblems(file, readText(ROOT, file), flows, EXISTS).map((p) => ({ file, ...p })),
    );
    expect(listed(problems)).toEqual([]);
  });

  it('the record names only paths that exist', () => {
    const problems = ['docs/decisions.md', 'docs/architecture.md'].flatMap((file) =>
      missingPaths(readText(ROOT, file), EXISTS).map((p) => ({ file, ...p })),
    );
    expect(listed(problems)).toEqual([]);
  });

  it('imports follow the code map: shared ← proto ← exchange, agent; a pure engine; a self-contained SSH gateway', () => {
    const problems = FILES.filter((f) => f.endsWith('.ts')).flatMap((file) =>
      importProblems(file, readText(ROOT, file)).map((p) => ({ file, ...p })),
    );
    expect(listed(problems)).toEqual([]);
  });

  it('banners, --help and log lines say rules in words, not decision numbers', () => {
    const programs = FILES.filter((f) => PROGRAM_SOURCE.test(f) && !NOT_SHIPPED.test(f));
    expect(programs).toContain('cli/src/start.ts');
    const problems = programs.flatMap((file) =>
      userTextProblems(readText(ROOT, file), USER_TEXT.test(file)).map((p) => ({ file, ...p })),
    );
    expect(listed(problems)).toEqual([]);
  });
});
