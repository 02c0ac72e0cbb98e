/**
 * @jest-environment jsdom
 */
import type { GpuDevice, MigInstance } from '../../extension/src/api/types';
import { renderGpuCard, renderNoGpu, renderTopology } from '../../extension/src/gpu/cards';
import { GIB, gpuSample } from './fixtures';

function migInstance(index: number): MigInstance {
  return {
    index,
    uuid: null,
    name: null,
    gpu_instance_id: null,
    compute_instance_id: null,
    memory_total_bytes: null,
    memory_used_bytes: null
  };
}

function device(fields: Partial<GpuDevice> = {}): GpuDevice {
  return {
    index: 1,
    name: 'NVIDIA H200',
    uuid: null,
    pci_bus_id: null,
    compute_capability: '9.0',
    memory_total_bytes: 140 * GIB,
    pcie_max_generation: 5,
    pcie_max_width: 16,
    power_limit_w: 700,
    max_sm_clock_mhz: null,
    max_mem_clock_mhz: null,
    mig: { current: 'disabled', pending: 'disabled', instances: [] },
    nvlinks: [],
    unsupported: [],
    sample: gpuSample(1, {
      memory_used_bytes: 35 * GIB,
      power_w: 120,
      pcie_generation: 5,
      pcie_width: 16,
      processes: [{ pid: 4242, name: 'python', kind: 'compute', used_memory_bytes: 2 * GIB }]
    }),
    ...fields
  };
}

function field(card: HTMLElement, label: string): HTMLElement {
  const row = Array.from(card.querySelectorAll<HTMLElement>('.gpudojo-field')).find(
    r => r.querySelector('.gpudojo-field-label')?.textContent === label
  );
  if (!row) {
    throw new Error(`no field ${label}`);
  }
  return row;
}

describe('renderGpuCard', () => {
  it('shows the facts and current reading of a GPU', () => {
    const card = renderGpuCard(device());
    expect(card.dataset.gpuIndex).toBe('1');
    expect(card.textContent).toContain('NVIDIA H200');
    expect(field(card, 'Compute capability').textContent).toContain('9.0');
    expect(field(card, 'Memory').textContent).toContain('35.0 / 140.0 GiB');
    expect(field(card, 'Power / limit').textContent).toContain('120 W / 700 W');
    expect(field(card, 'PCIe').textContent).toContain('Gen 5 x16');
    expect(field(card, 'MIG').textContent).toContain('disabled');
    const processes = field(card, 'Processes');
    expect(processes.textContent).toContain('1');
    expect(processes.title).toContain('4242 python 2.0 GiB');
  });

  it('says "not supported" for refused fields instead of 0', () => {
    const card = renderGpuCard(
      device({
        power_limit_w: null,
        unsupported: ['power_limit_w'],
        mig: { current: 'unsupported', pending: 'unsupported', instances: [] },
        sample: gpuSample(1, { power_w: null, temperature_c: null, unsupported: ['power_w', 'temperature_c'] })
      })
    );
    expect(field(card, 'Power / limit').textContent).toContain('not supported');
    expect(field(card, 'Temperature').textContent).toContain('not supported');
    expect(field(card, 'MIG').textContent).toContain('not supported');
    expect(card.textContent).not.toContain('0 W');
  });

  it('counts MIG instances and active NVLinks', () => {
    const card = renderGpuCard(
      device({
        mig: { current: 'enabled', pending: 'enabled', instances: [migInstance(0), migInstance(1)] },
        nvlinks: [
          { link: 0, active: true, remote_pci_bus_id: null, remote_gpu_index: null },
          { link: 1, active: true, remote_pci_bus_id: null, remote_gpu_index: null },
          { link: 2, active: false, remote_pci_bus_id: null, remote_gpu_index: null }
        ]
      })
    );
    expect(field(card, 'MIG').textContent).toContain('enabled, 2 instances');
    expect(field(card, 'NVLink').textContent).toContain('2 active of 3');
  });
});

describe('renderNoGpu', () => {
  it('gives the server\'s reason and what still works', () => {
    const node = renderNoGpu('No NVIDIA driver found');
    expect(node.className).toBe('gpudojo-no-gpu');
    expect(node.textContent).toContain('No NVIDIA driver found');
    expect(node.textContent).toContain('Host metrics still stream.');
    expect(node.textContent).toContain('GPU utilisation');
  });
});

describe('renderTopology', () => {
  it('draws the matrix with GPU headers', () => {
    const table = renderTopology({ gpus: [0, 1], matrix: [['X', 'NV18'], ['NV18', 'X']] });
    expect(table.querySelectorAll('tbody tr')).toHaveLength(2);
    expect(table.querySelector('thead')!.textContent).toBe('GPU0GPU1');
    expect(table.querySelector('tbody td:nth-of-type(2)')!.textContent).toBe('NV18');
  });
});
