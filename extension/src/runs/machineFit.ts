/**
 * What this machine is, in the terms a sweep over nproc depends on: its CPU cores and
 * the GPUs runs can use. Warnings before a run asks for more processes than that, and
 * the one sentence that explains a CPU sweep's figures. No DOM, no JupyterLab.
 */

import type { DevicesResponse } from '../api/types';
import type { ScalingPoint } from './scaling';

export interface MachineFacts {
  /** Logical CPU cores of the Jupyter server's host (count). */
  cores: number;
  /** GPUs runs can use: live NVML's count; 0 without a driver or with a replayed recording. */
  gpus: number;
}

/** The facts from GET gpu/devices (a replayed recording's GPUs are not there to run on). */
export function machineFacts(devices: DevicesResponse): MachineFacts {
  return {
    cores: Math.max(1, devices.host.cores_logical),
    gpus: devices.mode === 'gpu' ? devices.gpus.length : 0
  };
}

function plural(n: number, word: string): string {
  return n === 1 ? `${n} ${word}` : `${n} ${word}${word.endsWith('s') ? 'es' : 's'}`;
}

/**
 * A warning when some of `nprocs` ask for more processes than the machine has GPUs (with
 * GPUs) or cores (without); null when every value fits.
 */
export function oversubscriptionWarning(nprocs: readonly number[], machine: MachineFacts): string | null {
  const valid = nprocs.filter(n => Number.isInteger(n) && n > 0);
  if (machine.gpus > 0) {
    const over = valid.filter(n => n > machine.gpus);
    if (!over.length) {
      return null;
    }
    const most = Math.max(...over);
    return (
      `nproc ${over.join(', ')} is more than this machine's ${plural(machine.gpus, 'GPU')}: ` +
      `${most} ranks would share ${plural(machine.gpus, 'GPU')}, and NCCL refuses two ranks on one GPU.`
    );
  }
  const over = valid.filter(n => n > machine.cores);
  if (!over.length) {
    return null;
  }
  const most = Math.max(...over);
  return (
    `nproc ${over.join(', ')} is more than this machine's ${plural(machine.cores, 'core')} (no GPU): ` +
    `${most} processes will share ${plural(machine.cores, 'core')}, so each step takes longer than with fewer ` +
    'processes. The run still works; expect a slowdown, not a speedup.'
  );
}

/** A speedup as the sweep table writes it: "0.30x". */
function times(x: number): string {
  return `${x.toFixed(2)}x`;
}

/**
 * One sentence on what a CPU sweep's figures mean on this machine, with the measured
 * speedups; null on GPUs, or before two points are measured.
 */
export function cpuScalingExplanation(
  points: readonly ScalingPoint[],
  machine: MachineFacts,
  deviceMode: 'gpu' | 'cpu'
): string | null {
  if (deviceMode !== 'cpu') {
    return null;
  }
  const base = points.find(p => p.speedup !== null && p.ideal === 1);
  const others = points.filter(p => p !== base && p.speedup !== null && p.nproc !== base?.nproc);
  if (!base || !others.length) {
    return null;
  }
  const baseText = base.nproc === 1 ? 'one process' : plural(base.nproc, 'process');
  const figures = others.map(p => `${times(p.speedup!)} (${p.nproc} processes)`).join(', ');
  const most = Math.max(...others.map(p => p.nproc));
  const where = `On this ${machine.cores}-core machine without GPUs`;
  const sharing =
    most > machine.cores
      ? `${most} processes share ${plural(machine.cores, 'core')} and gloo's all-reduce runs over loopback`
      : `each process has a core, but they share memory bandwidth and gloo's all-reduce runs over loopback`;
  const verdict = others.some(p => p.speedup! < 1) ? 'is expected' : 'is what a CPU gives';
  return `${where}, ${sharing}: ${figures} of ${baseText} ${verdict}; on GPUs with NCCL the same sweep scales.`;
}
