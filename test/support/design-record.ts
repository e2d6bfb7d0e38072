// The checks of test/design-record.test.ts as pure functions over text, so
// the test can run them on the repository and on strings made to fail.
// What they guard is described in docs/decisions.md (its opening) and
// docs/architecture.md ("Code map", "Invariants").

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A decision citation: `D` and a number, not inside a word (hex, base64, `D2A4`, `UD2`). */
const DECISION = /(?<![A-Za-z0-9_])D(\d{1,3})(?![A-Za-z0-9_])/g;
/** A range of decisions: `D1-D3`, `D25–D34`, `D5…D16`. */
const DECISION_RANGE =
  /(?<![A-Za-z0-9_])D(\d{1,3})\s*(?:-|–|—|…|\.\.\.?)\s*D(\d{1,3})(?![A-Za-z0-9_])/g;
/** A citation of the contract's market rules: `rule 4`, `spec rule 2`. */
const RULE = /(?<![A-Za-z0-9_])[Rr]ules? (\d{1,2})(?![A-Za-z0-9_]|\.\d)/g;
/** A citation of a flow of docs/architecture.md: `flow 5`, `flows 2–4`, `flows 2 and 3`. */
const FLOW =
  /(?<![A-Za-z0-9_])[Ff]lows? (\d{1,2})(?:\s*(?:-|–|and|to)\s*(\d{1,2}))?(?![A-Za-z0-9_])/g;

export interface Citation {
  readonly number: number;
  readonly line: number;
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

function span(from: number, to: number): number[] {
  const out: number[] = [];
  for (let n = Math.min(from, to); n <= Math.max(from, to); n++) out.push(n);
  return out;
}

/** Every decision number `text` cites; a range cites every number in it. */
export function citedDecisions(text: string): Citation[] {
  const out: Citation[] = [];
  for (const m of text.matchAll(DECISION)) {
    out.push({ number: Number(m[1]), line: lineOf(text, m.index) });
  }
  for (const m of text.matchAll(DECISION_RANGE)) {
    for (const n of span(Number(m[1]), Number(m[2]))) {
      out.push({ number: n, line: lineOf(text, m.index) });
    }
  }
  return out;
}

/** Every contract rule number `text` cites (`rule 4`). */
export function citedRules(text: string): Citation[] {
  return [...text.matchAll(RULE)].map((m) => ({
    number: Number(m[1]),
    line: lineOf(text, m.index),
  }));
}

/** The decisions a record defines: lines `## Dnn …` or `- **Dnn …`. */
export function recordedDecisions(markdown: string): Set<number> {
  const out = new Set<number>();
  for (const m of markdown.matchAll(/^(?:## |- \*\*)D(\d{1,3})\b/gm)) out.add(Number(m[1]));
  return out;
}

/** The contract's rules the record restates: lines `- **Rule N.**`. */
export function recordedRules(markdown: string): Set<number> {
  const out = new Set<number>();
  for (const m of markdown.matchAll(/^- \*\*Rule (\d{1,2})\./gm)) out.add(Number(m[1]));
  return out;
}

/** The flows docs/architecture.md numbers: headings `### Flow N`. */
export function recordedFlows(markdown: string): Set<number> {
  const out = new Set<number>();
  for (const m of markdown.matchAll(/^### Flow (\d{1,2})\b/gm)) out.add(Number(m[1]));
  return out;
}

export interface Problem {
  readonly line: number;
  readonly what: string;
}

/** Documents that are not in the repository, by name. */
const OUTSIDE: readonly RegExp[] = [
  /shared\/spec\b/g,
  /\/work\/shared\b/g,
  /\bservice-spec(?:\.md)?\b/g,
  /\bbuilding-blocks\b/g,
];

/** Documents of other public projects that code names beside their project. */
const OTHER_PROJECTS = new Set(['PROTOCOL-HTTP2.md', 'http-grpc-status-mapping.md']);

/** The repository's own record, which plain text must name with its folder. */
const RECORD = /([\w./-]*?)\b(architecture|decisions)\.md\b/g;

/** A Markdown file named in text: `docs/matching.md`, `../README.md`. */
const MARKDOWN_FILE = /[\w./-]*[\w-]\.md\b/g;

/**
 * Pointers from `file` (a path relative to the repository) to documents
 * outside it: the contract documents by name, a `.md` file that is neither
 * beside `file` nor at that path from the repository's root, the design
 * record named without `docs/` (`architecture.md flow 2`; a Markdown link
 * target is resolved from the file's folder instead), and a flow citation
 * that does not say it means docs/architecture.md or names a flow it lacks.
 */
export function pointerProblems(
  file: string,
  text: string,
  flows: ReadonlySet<number>,
  exists: (path: string) => boolean,
): Problem[] {
  const out: Problem[] = [];
  for (const re of OUTSIDE) {
    for (const m of text.matchAll(re)) {
      out.push({ line: lineOf(text, m.index), what: `points outside the repository: ${m[0]}` });
    }
  }
  for (const m of text.matchAll(MARKDOWN_FILE)) {
    const named = m[0];
    const token = /\S*$/.exec(text.slice(Math.max(0, m.index - 200), m.index))?.[0] ?? '';
    const base = posix.basename(named);
    if ((token + named).includes('://') || OTHER_PROJECTS.has(base)) continue;
    if (base === 'architecture.md' || base === 'decisions.md') continue; // below
    const beside = posix.join(posix.dirname(file), named);
    if (!exists(beside) && !exists(posix.normalize(named))) {
      out.push({ line: lineOf(text, m.index), what: `names ${named}, not in the repository` });
    }
  }
  for (const m of text.matchAll(RECORD)) {
    const prefix = m[1] ?? '';
    const name = `${m[2] ?? ''}.md`;
    const isLink = text.slice(Math.max(0, m.index - 2), m.index) === '](';
    const target = isLink ? posix.join(posix.dirname(file), prefix + name) : prefix + name;
    const ok = isLink ? target === `docs/${name}` : target.endsWith(`docs/${name}`);
    if (!ok) {
      out.push({
        line: lineOf(text, m.index),
        what: `names ${prefix + name}: write docs/${name}`,
      });
    }
  }
  if (file !== 'docs/architecture.md') {
    for (const m of text.matchAll(FLOW)) {
      const line = lineOf(text, m.index);
      if (!/architecture\.md/.test(text.slice(Math.max(0, m.index - 80), m.index))) {
        out.push({ line, what: `"${m[0]}" does not say it means docs/architecture.md` });
      }
      const first = Number(m[1]);
      for (const n of m[2] === undefined ? [first] : span(first, Number(m[2]))) {
        if (!flows.has(n)) out.push({ line, what: `flow ${n} is not in docs/architecture.md` });
      }
    }
  }
  return out;
}

const TOP = ['shared/', 'proto/', 'exchange/', 'agent/', 'cli/', 'test/', 'deploy/', 'docs/'];

/**
 * Paths of the repository a page names in backticks (`exchange/src/app.ts`,
 * `agent/src/leases/`) that `exists` says are missing.
 */
export function missingPaths(markdown: string, exists: (path: string) => boolean): Problem[] {
  const out: Problem[] = [];
  for (const m of markdown.matchAll(/`([^`\s]+)`/g)) {
    const path = m[1] ?? '';
    if (!TOP.some((t) => path.startsWith(t)) || /[*<>{}…]/.test(path)) continue;
    if (!exists(path.replace(/\/$/, ''))) {
      out.push({ line: lineOf(markdown, m.index), what: `names ${path}, which does not exist` });
    }
  }
  return out;
}

/** Which packages each package may import (docs/architecture.md, "Code map"). */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  shared: ['shared'],
  proto: ['proto', 'shared'],
  exchange: ['exchange', 'proto', 'shared'],
  agent: ['agent', 'proto', 'shared'],
};

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g;

/**
 * Imports of `file` (relative to the repository) that break the direction of
 * dependencies, the purity of the matching engine or the self-containment of
 * the agent's SSH gateway.
 */
export function importProblems(file: string, text: string): Problem[] {
  const pkg = file.split('/')[0] ?? '';
  const allowed = MAY_IMPORT[pkg];
  if (allowed === undefined) return [];
  const out: Problem[] = [];
  const isTest = /\.test\.ts$|\/testing\//.test(file);
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? '';
    const line = lineOf(text, m.index);
    let target: string | undefined;
    if (spec.startsWith('@gpux/')) target = spec.slice('@gpux/'.length);
    else if (spec.startsWith('.')) target = posix.join(posix.dirname(file), spec);
    if (target === undefined) {
      // A package of npm or node: only the matching engine is held to none.
      if (!isTest && file.startsWith('exchange/src/matching/')) {
        out.push({ line, what: `the matching engine imports ${spec}: it does no I/O` });
      }
      continue;
    }
    const targetPkg = target.split('/')[0] ?? '';
    if (!allowed.includes(targetPkg)) out.push({ line, what: `${pkg} imports ${spec}` });
    if (isTest) continue;
    if (
      file.startsWith('exchange/src/matching/') &&
      !target.startsWith('exchange/src/matching/') &&
      spec !== '@gpux/shared'
    ) {
      out.push({ line, what: `the matching engine imports ${spec}: it does no I/O` });
    }
    if (
      file.startsWith('agent/src/ssh/') &&
      targetPkg === 'agent' &&
      !target.startsWith('agent/src/ssh/')
    ) {
      out.push({ line, what: `the SSH gateway imports ${spec} from the rest of the agent` });
    }
  }
  return out;
}

/** Files whose text the checks read: code, tests, docs, contracts, manifests. */
const SCANNED = /\.(ts|js|md|proto|ya?ml|sql|json|sh|env|conf|service)$|(^|\/)Containerfile$/;
const SKIPPED_DIRS = new Set(['node_modules', 'dist', '.git', '.gpux', 'coverage']);
/**
 * Generated from proto/agent.proto and from docs/api/openapi.json, which are
 * scanned; and the lock file's hashes.
 */
const SKIPPED_FILES = new Set(['package-lock.json']);
const SKIPPED_PREFIXES = ['proto/src/gen/', 'shared/src/gen/'];

/** The repository's text files, as paths relative to `root` with `/`. */
export function repositoryFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(join(dir, entry.name));
        continue;
      }
      const rel = relative(root, join(dir, entry.name)).split(sep).join('/');
      if (!entry.isFile() || !SCANNED.test(rel)) continue;
      if (SKIPPED_FILES.has(rel) || SKIPPED_PREFIXES.some((p) => rel.startsWith(p))) continue;
      out.push(rel);
    }
  };
  walk(root);
  return out.sort();
}

export function readText(root: string, file: string): string {
  return readFileSync(join(root, file), 'utf8');
}

export function existsIn(root: string): (path: string) => boolean {
  return (path) => existsSync(join(root, path));
}

/** The repository this file is in (test/support/ → ../..). */
export function repositoryRoot(): string {
  return dirname(dirname(dirname(fileURLToPath(import.meta.url))));
}

/** The string literals of TypeScript source (quotes and templates, comments skipped), with where each starts. */
export function stringLiterals(
  source: string,
): { readonly text: string; readonly index: number }[] {
  const out: { text: string; index: number }[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i);
      i = end === -1 ? source.length : end;
    } else if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end === -1 ? source.length : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      let depth = 0;
      while (j < source.length) {
        const d = source[j];
        if (d === '\\') j += 2;
        else if (c === '`' && d === '$' && source[j + 1] === '{') {
          depth++;
          j += 2;
        } else if (c === '`' && depth > 0 && d === '}') {
          depth--;
          j++;
        } else if (d === c && depth === 0) break;
        else if (d === '\n' && c !== '`') break;
        else j++;
      }
      out.push({ text: source.slice(i + 1, j), index: i });
      i = j + 1;
    } else i++;
  }
  return out;
}

const LOG_CALL = /\.(?:fatal|error|warn|info|debug|trace)\(/g;

/** The part of `source` from `open` (a `(`) to its matching `)`. */
function callArguments(source: string, open: number): string {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === '(') depth++;
    else if (source[i] === ')' && --depth === 0) return source.slice(open, i + 1);
  }
  return source.slice(open);
}

/**
 * Decision numbers in text people read when they run the programs: every
 * string of `source` when `everyString` (banners, `--help`, settings
 * problems), otherwise only the strings of log calls. Comments may cite.
 */
export function userTextProblems(source: string, everyString: boolean): Problem[] {
  const out: Problem[] = [];
  const check = (text: string, base: number): void => {
    for (const s of stringLiterals(text)) {
      const cited = citedDecisions(s.text);
      if (cited.length > 0) {
        out.push({
          line: lineOf(source, base + s.index),
          what: `shows D${cited[0]?.number ?? ''} to people: say it in words (and link the doc)`,
        });
      }
    }
  };
  if (everyString) {
    check(source, 0);
    return out;
  }
  for (const m of source.matchAll(LOG_CALL)) {
    const open = m.index + m[0].length - 1;
    check(callArguments(source, open), open);
  }
  return out;
}
