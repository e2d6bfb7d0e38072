// The arguments of the benches that take only counts: `<bench> [--name N]…
// [--keep] [-h]` (restart-bench.ts, candles-bench.ts).

/** Prints `bench <name>: <message>` and exits with `code` (2: bad arguments). */
export function benchFail(bench: string, message: string, code = 1): never {
  console.error(`bench ${bench}: ${message}`);
  process.exit(code);
}

/**
 * `--<key> N` for each key of `defaults` (a whole number ≥ 0), `--keep`, and
 * `-h` (prints `usage`); the bench's own word is skipped. Anything else
 * exits 2 with the usage.
 */
export function parseCounts<K extends string>(
  bench: string,
  argv: readonly string[],
  defaults: Readonly<Record<K, number>>,
  usage: string,
): Record<K, number> & { keep: boolean } {
  const o: Record<string, number> = { ...defaults };
  let keep = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === bench) continue;
    if (a === '--keep') {
      keep = true;
      continue;
    }
    if (a === '-h' || a === '--help') {
      console.log(usage);
      process.exit(0);
    }
    const key = a.slice(2);
    if (!a.startsWith('--') || !(key in defaults)) {
      benchFail(bench, `unknown argument ${a}\n${usage}`, 2);
    }
    const n = Number(argv[++i]);
    if (!Number.isSafeInteger(n) || n < 0) {
      benchFail(bench, `${a}: expected a whole number\n${usage}`, 2);
    }
    o[key] = n;
  }
  return { ...(o as Record<K, number>), keep };
}
