/**
 * @jest-environment jsdom
 */
import type { GpuDevice, RecordingInfo } from '../../extension/src/api/types';
import { renderGpuCard, renderSyntheticTag, renderTopology } from '../../extension/src/gpu/cards';
import { recordingSummary, streamLabel } from '../../extension/src/gpu/format';
import { CATEGORY_FALLBACKS, categoryCss, categoryVar } from '../../extension/src/palette';
import { GIB, gpuSample } from './fixtures';

import type * as ChartModule from '../../extension/src/gpu/chart';

// chart.ts imports uPlot, which reads matchMedia when loaded: load it after the stub.
let formatAxisTime: typeof ChartModule.formatAxisTime;
let formatRecordingTime: typeof ChartModule.formatRecordingTime;
beforeAll(() => {
  (window as any).matchMedia = () => ({ matches: false, addEventListener: () => undefined, removeEventListener: () => undefined });
  ({ formatAxisTime, formatRecordingTime } = jest.requireActual<typeof ChartModule>('../../extension/src/gpu/chart'));
});

const A100 = 'NVIDIA A100-SXM4-80GB';

function a100(index: number, fields: Partial<GpuDevice> = {}): GpuDevice {
  return {
    index,
    name: A100,
    uuid: `GPU-${index}`,
    pci_bus_id: null,
    compute_capability: '8.0',
    memory_total_bytes: 80 * GIB,
    pcie_max_generation: 4,
    pcie_max_width: 16,
    power_limit_w: 400,
    max_sm_clock_mhz: 1410,
    max_mem_clock_mhz: 1593,
    mig: { current: 'disabled', pending: 'disabled', instances: [] },
    nvlinks: [],
    unsupported: [],
    sample: gpuSample(index),
    ...fields
  };
}

describe('the replay monitor tells the truth', () => {
  it('says Replay, never Live, for a replay', () => {
    expect(streamLabel(false, 'replay')).toBe('Replay');
    expect(streamLabel(false, 'gpu')).toBe('Live');
    expect(streamLabel(true, 'replay')).toBe('Paused');
  });

  it('writes recording time the same way on the axis and in the hover, one pass at a time', () => {
    expect(formatRecordingTime(0)).toBe('0:00');
    expect(formatRecordingTime(62.5)).toBe('1:02.5');
    const axis = { kind: 'recording', cycleSeconds: 50 } as const;
    expect(formatAxisTime(12.5, axis)).toBe('0:12.5');
    expect(formatAxisTime(62.5, axis)).toBe('0:12.5 · pass 2'); // a 50 s recording loops
    expect(formatAxisTime(99.99, axis)).toBe('0:00 · pass 3');
    expect(formatAxisTime(-20, axis)).toBe(''); // before the replay began
    expect(formatAxisTime(0, { kind: 'clock' })).toMatch(/^\d\d:\d\d:\d\d$/);
  });

  it('sums up a recording: its time axis, length, rate and that it loops', () => {
    const recording: RecordingInfo = { synthetic: true, note: 'Synthetic stand-in', rate_hz: 2, duration_s: 49.5, cycle_s: 50 };
    expect(recordingSummary(recording)).toBe(
      "Time axis: time into the recording (0:50 long, recorded at 2 Hz, looping). Host charts are this machine's."
    );
    const tag = renderSyntheticTag(recording);
    expect(tag.textContent).toBe('synthetic recording');
    expect(tag.title).toBe('Synthetic stand-in');
  });

  it('gives eight GPUs eight different colours, defined once', () => {
    const colours = [0, 1, 2, 3, 4, 5, 6, 7].map(i => CATEGORY_FALLBACKS[i]);
    expect(new Set(colours).size).toBe(8);
    expect(new Set(CATEGORY_FALLBACKS).size).toBe(CATEGORY_FALLBACKS.length);
    expect(categoryVar(12)).toBe(categoryVar(0));
    expect(categoryCss(2)).toBe('var(--gpudojo-category-color-2, #e15759)');
  });

  it("shows a card's whole GPU name and its colour, and the card opens the GPU", () => {
    const card = renderGpuCard(a100(2));
    expect(card.querySelector('.gpudojo-gpu-name')!.textContent).toBe(A100);
    expect(card.getAttribute('role')).toBe('button');
    expect(card.getAttribute('data-gpu-index')).toBe('2');
    expect((card.querySelector('.gpudojo-gpu-swatch') as HTMLElement).style.getPropertyValue('--gpudojo-swatch-color')).toContain(
      '--gpudojo-category-color-2'
    );
  });

  it('lists the MIG instances of a MIG GPU with profile, memory and ids', () => {
    const card = renderGpuCard(
      a100(0, {
        mig: {
          current: 'enabled',
          pending: 'enabled',
          instances: [
            { index: 0, uuid: 'MIG-1', name: `${A100} MIG 3g.40gb`, gpu_instance_id: 2, compute_instance_id: 0, memory_total_bytes: 40 * GIB, memory_used_bytes: 9 * GIB },
            { index: 1, uuid: 'MIG-2', name: `${A100} MIG 1g.10gb`, gpu_instance_id: 9, compute_instance_id: 0, memory_total_bytes: 10 * GIB, memory_used_bytes: 0 }
          ]
        }
      })
    );
    const items = [...card.querySelectorAll('.gpudojo-mig-instance')].map(li => li.textContent);
    expect(items).toEqual(['MIG 3g.40gb9.0 GiB / 40.0 GiB · GI 2 · CI 0', 'MIG 1g.10gb0 B / 10.0 GiB · GI 9 · CI 0']);
    expect((card.querySelector('details.gpudojo-mig') as HTMLDetailsElement).open).toBe(true);
    expect(card.querySelector('summary')!.textContent).toContain('enabled, 2 instances');
  });

  it('puts a wide topology matrix in a box that scrolls sideways', () => {
    const gpus = [0, 1, 2, 3, 4, 5, 6, 7];
    const node = renderTopology({ gpus, matrix: gpus.map(r => gpus.map(c => (r === c ? 'X' : 'NV12'))) });
    expect(node.classList.contains('gpudojo-topology-scroll')).toBe(true);
    expect(node.querySelectorAll('thead th')).toHaveLength(9);
    expect(node.querySelector('thead th:last-child')!.textContent).toBe('GPU7');
  });
});
