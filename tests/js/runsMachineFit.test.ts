import type { DevicesResponse } from '../../extension/src/api/types';
import {
  cpuScalingExplanation,
  machineFacts,
  oversubscriptionWarning
} from '../../extension/src/runs/machineFit';
import { ScalingInput, scalingPoints } from '../../extension/src/runs/scaling';

const laptop = { cores: 2, gpus: 0 };

function sweep(times: Array<[number, number]>): ScalingInput[] {
  return times.map(([nproc, epochTimeS]) => ({ runId: `r${nproc}`, value: nproc, nproc, status: 'succeeded', epochTimeS }));
}

describe('sweeps say what the machine is', () => {
  it('warns before a run asks a 2-core laptop for more processes than cores', () => {
    expect(oversubscriptionWarning([1, 2], laptop)).toBeNull();
    const warning = oversubscriptionWarning([1, 2, 4], laptop);
    expect(warning).toContain("nproc 4 is more than this machine's 2 cores (no GPU)");
    expect(warning).toContain('4 processes will share 2 cores');
    expect(oversubscriptionWarning([8], { cores: 16, gpus: 0 })).toBeNull();
  });

  it('on GPUs, warns when nproc is above the GPU count instead', () => {
    expect(oversubscriptionWarning([2], { cores: 2, gpus: 2 })).toBeNull();
    expect(oversubscriptionWarning([4], { cores: 64, gpus: 2 })).toContain("more than this machine's 2 GPUs");
  });

  it('counts no GPUs from a replayed recording: runs cannot use them', () => {
    const devices = { mode: 'replay', gpus: [{}, {}], host: { cores_logical: 2 } } as unknown as DevicesResponse;
    expect(machineFacts(devices)).toEqual({ cores: 2, gpus: 0 });
    expect(machineFacts({ ...devices, mode: 'gpu' })).toEqual({ cores: 2, gpus: 2 });
  });

  it("explains a CPU sweep's slowdown in one sentence with the measured figures", () => {
    const points = scalingPoints(sweep([[1, 10], [2, 29.4], [4, 33.3]]));
    expect(cpuScalingExplanation(points, laptop, 'cpu')).toBe(
      "On this 2-core machine without GPUs, 4 processes share 2 cores and gloo's all-reduce runs over loopback: " +
        '0.34x (2 processes), 0.30x (4 processes) of one process is expected; on GPUs with NCCL the same sweep scales.'
    );
  });

  it('says nothing on GPUs, or before a second point is measured', () => {
    expect(cpuScalingExplanation(scalingPoints(sweep([[1, 10], [2, 5.5]])), laptop, 'gpu')).toBeNull();
    expect(cpuScalingExplanation(scalingPoints(sweep([[1, 10]])), laptop, 'cpu')).toBeNull();
  });
});
