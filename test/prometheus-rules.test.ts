// The alert rules of deploy/prometheus (issue 23): `promtool check rules`
// accepts them and `promtool test rules` passes their tests, series that make
// each alert fire and series that must not (deploy/prometheus/tests/). Every
// alert has a severity, a summary and a runbook link to a section of
// docs/runbooks.md that exists. Without promtool (Debian's prometheus
// package) the promtool tests skip, and fail under CI
// (test/support/prerequisites.ts).

import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { PROMTOOL, requireProgram } from './support/prerequisites.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const dir = join(root, 'deploy/prometheus');
const rules = join(dir, 'gpux.rules.yml');
const tests = readdirSync(join(dir, 'tests'))
  .filter((f) => f.endsWith('.yml'))
  .map((f) => join(dir, 'tests', f));

/** GitHub-style anchors of a Markdown file's headings. */
function anchors(markdown: string): Set<string> {
  return new Set(
    [...markdown.matchAll(/^#+ (.+)$/gm)].map((m) =>
      (m[1] ?? '')
        .trim()
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
  );
}

describe('deploy/prometheus alert rules', () => {
  const text = readFileSync(rules, 'utf8');
  const alerts = [...text.matchAll(/- alert: (\w+)\n([\s\S]*?)(?=\n\s*- alert:|\s*$)/g)];

  it('give every alert a severity, a summary and a runbook section that exists', () => {
    const runbook = anchors(readFileSync(join(root, 'docs/runbooks.md'), 'utf8'));
    expect(alerts.map((a) => a[1])).toEqual(
      expect.arrayContaining([
        'GpuxWatchdog',
        'GpuxAgentHeartbeatStale',
        'GpuxNodesOffline',
        'GpuxLeaseProvisioningSlow',
        'GpuxProvisioningFailuresRising',
        'GpuxRevocationUnconfirmed',
        'GpuxOutboxBacklogGrowing',
        'GpuxErrorRatio',
        'GpuxBookHalted',
      ]),
    );
    for (const [, name, body = ''] of alerts) {
      expect(body, name).toMatch(/severity: (critical|warning|info|none)\n/);
      expect(body, name).toMatch(/summary: \S/);
      const link = /runbook_url: docs\/runbooks\.md#([\w-]+)/.exec(body);
      expect(link?.[1], `${name}: runbook_url`).toBe(name?.toLowerCase());
      expect(runbook.has(link?.[1] ?? ''), `${name}: docs/runbooks.md has no section`).toBe(true);
    }
  });

  it('pass promtool check rules', async (ctx) => {
    requireProgram(ctx, PROMTOOL);
    const { stdout } = await run(PROMTOOL.program, ['check', 'rules', rules]);
    expect(stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('pass promtool test rules: each alert fires on its series and stays quiet on others', async (ctx) => {
    requireProgram(ctx, PROMTOOL);
    expect(tests.length).toBeGreaterThan(0);
    const { stdout } = await run(PROMTOOL.program, ['test', 'rules', ...tests]);
    expect(stdout).toContain('SUCCESS');
    // Every alert is tested.
    const tested = tests.map((t) => readFileSync(t, 'utf8')).join('\n');
    for (const [, name] of alerts) expect(tested, name).toContain(`alertname: ${name}`);
  });
});
