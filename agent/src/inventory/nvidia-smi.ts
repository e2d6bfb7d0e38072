// The host's GPUs, from nvidia-smi run asynchronously (systeminformation
// finds GPUs only through lspci and then runs nvidia-smi synchronously,
// blocking the event loop, and drops zero values).

import { execFile } from 'node:child_process';

import type { Gpu } from '@gpux/proto';

export const NVIDIA_SMI_ARGS = [
  '--query-gpu=index,name,uuid,memory.total,utilization.gpu,temperature.gpu',
  '--format=csv,noheader,nounits',
] as const;

export type GpuInventory =
  /** nvidia-smi is not installed: a host without NVIDIA GPUs (or a test machine). */
  | { readonly kind: 'absent' }
  | { readonly kind: 'ok'; readonly gpus: readonly Gpu[] }
  /** nvidia-smi exists but failed or printed what we cannot read: the GPUs are not usable. */
  | { readonly kind: 'failed'; readonly problem: string };

/** `[N/A]`, `[Not Supported]` and the like: not measured, reported as 0. */
function measure(field: string): number | undefined {
  const t = field.trim();
  if (/^\[.*\]$/.test(t) || t === 'N/A') return 0;
  if (!/^-?\d+(\.\d+)?$/.test(t)) return undefined;
  return Math.round(Number(t));
}

/**
 * One GPU per line: `0, NVIDIA H100 80GB HBM3, GPU-…, 81559, 3, 34`. The
 * CSV is not quoted, so a name with a comma is rejoined: the first field is
 * the index and the last four are uuid and the three numbers.
 */
export function parseNvidiaSmiCsv(output: string): Gpu[] {
  const gpus: Gpu[] = [];
  const lines = output.split(/\r?\n/).filter((l) => l.trim() !== '');
  for (const [n, line] of lines.entries()) {
    const fields = line.split(',');
    if (fields.length < 6)
      throw new Error(
        `nvidia-smi line ${n + 1} has ${fields.length} fields, expected 6: "${line}"`,
      );
    const index = measure(fields[0] ?? '');
    const tail = fields.slice(-4);
    const name = fields.slice(1, -4).join(',').trim();
    const uuid = (tail[0] ?? '').trim();
    const memory = measure(tail[1] ?? '');
    const utilization = measure(tail[2] ?? '');
    const temperature = measure(tail[3] ?? '');
    if (
      index === undefined ||
      index < 0 ||
      memory === undefined ||
      memory < 0 ||
      utilization === undefined ||
      utilization < 0 ||
      temperature === undefined ||
      name === '' ||
      uuid === ''
    ) {
      throw new Error(
        `nvidia-smi line ${n + 1} is not index, name, uuid and three numbers: "${line}"`,
      );
    }
    gpus.push({
      index,
      name,
      uuid,
      memoryTotalMib: memory,
      utilizationPercent: Math.min(100, utilization),
      temperatureC: temperature,
    });
  }
  return gpus;
}

/** Runs `nvidia-smi` from PATH (tests put a fake one there). */
export function readGpuInventory(
  command = 'nvidia-smi',
  timeoutMs = 10_000,
): Promise<GpuInventory> {
  return new Promise((resolve) => {
    execFile(
      command,
      NVIDIA_SMI_ARGS,
      { timeout: timeoutMs, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err !== null) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
            resolve({ kind: 'absent' });
            return;
          }
          const said = stderr.trim() || stdout.trim();
          resolve({
            kind: 'failed',
            problem: `nvidia-smi failed: ${said === '' ? err.message : said}`,
          });
          return;
        }
        try {
          resolve({ kind: 'ok', gpus: parseNvidiaSmiCsv(stdout) });
        } catch (parseErr) {
          resolve({ kind: 'failed', problem: (parseErr as Error).message });
        }
      },
    );
  });
}
