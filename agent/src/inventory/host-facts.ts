// The host the agent runs on, declared at Attach (for operators). From
// systeminformation's CPU, memory and OS calls only: its GPU path is not
// used (see nvidia-smi.ts).

import { hostname } from 'node:os';

import type { HostFacts } from '@gpux/proto';
import si from 'systeminformation';

export async function readHostFacts(): Promise<HostFacts> {
  const [cpu, mem, os] = await Promise.all([si.cpu(), si.mem(), si.osInfo()]);
  const osName = [os.distro, os.release].filter((s) => s !== '').join(' ');
  return {
    hostname: hostname(),
    os: osName === '' ? os.platform : osName,
    cpuModel: [cpu.manufacturer, cpu.brand].filter((s) => s !== '').join(' '),
    cpuCores: cpu.cores,
    memoryMib: Math.floor(mem.total / (1024 * 1024)),
  };
}
