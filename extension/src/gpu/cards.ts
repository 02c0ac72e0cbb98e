/** DOM for one GPU card, the topology table, the host line and the no-GPU message. */

import type {
  DevicesResponse,
  GpuDevice,
  GpuProcess,
  HostFacts,
  HostSample,
  MigInstance,
  RecordingInfo,
  TelemetryMode,
  Topology
} from '../api/types';
import { h } from '../dom';
import { categoryCss } from '../palette';
import {
  NOT_SUPPORTED,
  NO_GPU_LIMITS,
  NO_VALUE,
  bytesToGiB,
  formatBytes,
  formatField,
  formatNumber,
  formatPercent,
  isUnsupported,
  modeLabel
} from './format';

function row(label: string, value: string | Node, title?: string): HTMLElement {
  return h(
    'div',
    { className: 'gpudojo-field', title },
    h('span', { className: 'gpudojo-field-label', text: label }),
    typeof value === 'string'
      ? h('span', {
          className:
            'gpudojo-field-value' +
            (value === NOT_SUPPORTED ? ' gpudojo-mod-unsupported' : ''),
          text: value
        })
      : value
  );
}

function memoryBar(gpu: GpuDevice): HTMLElement {
  const sample = gpu.sample;
  if (isUnsupported(sample, 'memory_used_bytes') || isUnsupported(gpu, 'memory_total_bytes')) {
    return h('span', {
      className: 'gpudojo-field-value gpudojo-mod-unsupported',
      text: NOT_SUPPORTED
    });
  }
  const used = sample?.memory_used_bytes;
  const total = gpu.memory_total_bytes;
  if (typeof used !== 'number' || typeof total !== 'number' || total <= 0) {
    return h('span', { className: 'gpudojo-field-value', text: NO_VALUE });
  }
  const fraction = Math.min(1, Math.max(0, used / total));
  const fill = h('div', { className: 'gpudojo-bar-fill' });
  fill.style.width = `${(fraction * 100).toFixed(1)}%`;
  return h(
    'span',
    { className: 'gpudojo-field-value gpudojo-memory' },
    h(
      'div',
      {
        className: 'gpudojo-bar',
        attrs: {
          role: 'meter',
          'aria-valuemin': '0',
          'aria-valuemax': String(total),
          'aria-valuenow': String(used)
        }
      },
      fill
    ),
    h('span', {
      text: `${bytesToGiB(used).toFixed(1)} / ${bytesToGiB(total).toFixed(1)} GiB`
    })
  );
}

function powerText(gpu: GpuDevice): string {
  const power = formatField(gpu.sample, 'power_w', v => formatNumber(v, 'W'));
  const limit = formatField(gpu, 'power_limit_w', v => formatNumber(v, 'W'));
  if (power === NOT_SUPPORTED && limit === NOT_SUPPORTED) {
    return NOT_SUPPORTED;
  }
  return `${power} / ${limit}`;
}

function pcieText(gpu: GpuDevice): string {
  const sample = gpu.sample;
  if (isUnsupported(sample, 'pcie_generation') && isUnsupported(gpu, 'pcie_max_generation')) {
    return NOT_SUPPORTED;
  }
  const gen = sample?.pcie_generation ?? gpu.pcie_max_generation;
  const width = sample?.pcie_width ?? gpu.pcie_max_width;
  if (gen === null || gen === undefined) {
    return NO_VALUE;
  }
  const max =
    gpu.pcie_max_generation && gpu.pcie_max_width
      ? ` (max Gen ${gpu.pcie_max_generation} x${gpu.pcie_max_width})`
      : '';
  return `Gen ${gen} x${width ?? '?'}${max}`;
}

function migText(gpu: GpuDevice): string {
  const mig = gpu.mig;
  if (!mig || mig.current === 'unsupported' || isUnsupported(gpu, 'mig')) {
    return NOT_SUPPORTED;
  }
  if (mig.current === 'disabled') {
    return mig.pending === 'enabled' ? 'disabled (enabled after reset)' : 'disabled';
  }
  const n = mig.instances.length;
  return `enabled, ${n} instance${n === 1 ? '' : 's'}`;
}

function nvlinkText(gpu: GpuDevice): string {
  if (isUnsupported(gpu, 'nvlinks') || isUnsupported(gpu, 'nvlink')) {
    return NOT_SUPPORTED;
  }
  const active = gpu.nvlinks.filter(link => link.active).length;
  return gpu.nvlinks.length === 0 ? 'none' : `${active} active of ${gpu.nvlinks.length}`;
}

function processesTooltip(processes: GpuProcess[]): string {
  return processes
    .map(p => `${p.pid} ${p.name ?? '?'} ${formatBytes(p.used_memory_bytes)}`)
    .join('\n');
}

function processesText(gpu: GpuDevice): { text: string; title?: string } {
  const sample = gpu.sample;
  if (isUnsupported(sample, 'processes')) {
    return { text: NOT_SUPPORTED };
  }
  if (!sample) {
    return { text: NO_VALUE };
  }
  const n = sample.processes.length;
  return {
    text: String(n),
    title: n ? `pid name memory\n${processesTooltip(sample.processes)}` : 'No processes'
  };
}

/** One MIG device: its profile, memory in use and ids, e.g. "MIG 3g.40gb · 9.0 / 40.0 GiB". */
function renderMigInstance(gpuName: string, mig: MigInstance): HTMLElement {
  // The profile is what tells the slices apart; the parent's name is on the card already.
  const name = mig.name ?? `MIG device ${mig.index}`;
  const profile = name.startsWith(gpuName) ? name.slice(gpuName.length).trim() : name;
  const memory =
    typeof mig.memory_total_bytes === 'number'
      ? `${formatBytes(mig.memory_used_bytes)} / ${formatBytes(mig.memory_total_bytes)}`
      : NO_VALUE;
  const ids = `GI ${mig.gpu_instance_id ?? '?'} · CI ${mig.compute_instance_id ?? '?'}`;
  return h(
    'li',
    { className: 'gpudojo-mig-instance', title: mig.uuid ?? undefined, attrs: { 'data-mig-index': String(mig.index) } },
    h('span', { className: 'gpudojo-mig-profile', text: profile }),
    h('span', { className: 'gpudojo-mig-detail', text: `${memory} · ${ids}` })
  );
}

/** The MIG row: its state, and the instances listed under it when there are any. */
function migRow(gpu: GpuDevice): HTMLElement {
  const instances = gpu.mig?.current === 'enabled' ? gpu.mig.instances : [];
  if (!instances.length) {
    return row('MIG', migText(gpu));
  }
  const details = h(
    'details',
    { className: 'gpudojo-mig' },
    h('summary', { className: 'gpudojo-field' },
      h('span', { className: 'gpudojo-field-label', text: 'MIG' }),
      h('span', { className: 'gpudojo-field-value', text: migText(gpu) })
    ),
    h('ul', { className: 'gpudojo-mig-list' }, ...instances.map(m => renderMigInstance(gpu.name, m)))
  );
  // The instances are what a MIG GPU is about: show them without a click.
  details.open = true;
  // Opening the list is not a request to open the monitor.
  details.addEventListener('click', event => event.stopPropagation());
  return details;
}

/** One card with the facts and current reading of a GPU; its index in the GPU's chart colour. */
export function renderGpuCard(gpu: GpuDevice): HTMLElement {
  const sample = gpu.sample;
  const processes = processesText(gpu);
  const swatch = h('span', { className: 'gpudojo-gpu-swatch', attrs: { 'aria-hidden': 'true' } });
  swatch.style.setProperty('--gpudojo-swatch-color', categoryCss(gpu.index));
  return h(
    'div',
    {
      className: 'gpudojo-gpu-card',
      title: `Open GPU ${gpu.index} in the GPU monitor`,
      attrs: { 'data-gpu-index': String(gpu.index), role: 'button', tabindex: '0' }
    },
    h(
      'div',
      { className: 'gpudojo-gpu-card-header' },
      h('span', { className: 'gpudojo-gpu-index' }, swatch, `GPU ${gpu.index}`),
      h('span', { className: 'gpudojo-gpu-name', text: gpu.name, title: gpu.uuid ? `${gpu.name}\n${gpu.uuid}` : gpu.name })
    ),
    row(
      'Compute capability',
      isUnsupported(gpu, 'compute_capability')
        ? NOT_SUPPORTED
        : gpu.compute_capability ?? NO_VALUE
    ),
    row('Memory', memoryBar(gpu)),
    row('Utilization', formatField(sample, 'utilization_gpu_pct', v => formatPercent(v))),
    row('Temperature', formatField(sample, 'temperature_c', v => formatNumber(v, '°C'))),
    row('Power / limit', powerText(gpu)),
    row('PCIe', pcieText(gpu)),
    migRow(gpu),
    row('NVLink', nvlinkText(gpu)),
    row('Processes', processes.text, processes.title)
  );
}

/** The GPU-to-GPU matrix as a small table (X, NV<n>, PIX, PXB, PHB, NODE, SYS), scrolling sideways when wider than its place. */
export function renderTopology(topology: Topology): HTMLElement {
  return h(
    'div',
    { className: 'gpudojo-topology-scroll', attrs: { tabindex: '0', role: 'region', 'aria-label': 'GPU topology matrix' } },
    renderTopologyTable(topology)
  );
}

function renderTopologyTable(topology: Topology): HTMLElement {
  const head = h(
    'tr',
    {},
    h('th', {}),
    ...topology.gpus.map(i => h('th', { text: `GPU${i}` }))
  );
  const body = topology.matrix.map((cells, r) =>
    h(
      'tr',
      {},
      h('th', { text: `GPU${topology.gpus[r] ?? r}` }),
      ...cells.map(cell => h('td', { text: cell }))
    )
  );
  return h(
    'table',
    {
      className: 'gpudojo-topology',
      title: 'X: self, NV<n>: n NVLinks, PIX/PXB: PCIe switch, PHB: host bridge, NODE/SYS: across NUMA nodes'
    },
    h('thead', {}, head),
    h('tbody', {}, ...body)
  );
}

/** CPU model, cores, memory total and current CPU use of the host. */
export function renderHostLine(host: HostFacts, sample: HostSample | null): HTMLElement {
  const cores =
    host.cores_physical && host.cores_physical !== host.cores_logical
      ? `${host.cores_logical} cores (${host.cores_physical} physical)`
      : `${host.cores_logical} cores`;
  return h(
    'div',
    { className: 'gpudojo-host', title: `${host.hostname} (${host.platform})` },
    h('span', { className: 'gpudojo-host-label', text: 'Host' }),
    ` ${host.cpu_model} · ${cores} · ${formatBytes(host.memory_total_bytes)} RAM · CPU `,
    h('span', { className: 'gpudojo-host-cpu', text: formatPercent(sample?.cpu_pct ?? null) })
  );
}

/** The badge that says where the numbers come from. */
export function renderModeBadge(mode: TelemetryMode): HTMLElement {
  return h('span', {
    className: `gpudojo-mode-badge gpudojo-mode-${mode}`,
    text: modeLabel(mode),
    attrs: { 'data-mode': mode }
  });
}

/** "synthetic recording": a replay of generated numbers, not of a measured GPU. */
export function renderSyntheticTag(recording: RecordingInfo): HTMLElement {
  return h('span', {
    className: 'gpudojo-synthetic',
    text: 'synthetic recording',
    title: recording.note ?? 'Generated numbers standing in for a recording of a real GPU'
  });
}

/** The message shown when no GPU can be used: why, and what this mode cannot show. */
export function renderNoGpu(reason: string | null | undefined): HTMLElement {
  return h(
    'div',
    { className: 'gpudojo-no-gpu', attrs: { role: 'status' } },
    h('p', {
      className: 'gpudojo-no-gpu-reason',
      text: reason || 'No NVIDIA GPU is available to this server.'
    }),
    h('p', { text: NO_GPU_LIMITS })
  );
}

/** Driver, CUDA driver and NVML versions in one line. */
export function renderVersions(devices: DevicesResponse): HTMLElement {
  const parts = [
    `Driver ${devices.driver_version ?? NO_VALUE}`,
    `CUDA driver ${devices.cuda_driver_version ?? NO_VALUE}`
  ];
  if (devices.nvml_version) {
    parts.push(`NVML ${devices.nvml_version}`);
  }
  return h('div', { className: 'gpudojo-versions', text: parts.join(' · ') });
}
