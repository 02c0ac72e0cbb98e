/** GpuSection: the sidebar's GPU section, rendering what DevicesModel holds. */

import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { h } from '../dom';
import { CommandIds } from './commands';
import {
  renderGpuCard,
  renderHostLine,
  renderModeBadge,
  renderNoGpu,
  renderSyntheticTag,
  renderTopology,
  renderVersions
} from './cards';
import { DevicesModel } from './devicesModel';

export class GpuSection extends Widget {
  constructor(options: { model: DevicesModel; commands: CommandRegistry }) {
    super();
    this._model = options.model;
    this._commands = options.commands;
    this.id = 'gpudojo-gpu-section';
    this.addClass('gpudojo-gpu-section');
    this.title.label = 'GPU';
    this.title.caption = 'GPUs and host of this Jupyter server';
    this._body = h('div', { className: 'gpudojo-gpu-body' });
    const open = h('button', {
      className: 'jp-Button jp-mod-styled jp-mod-accept gpudojo-open-monitor',
      text: 'Open GPU monitor',
      title: 'Live charts of GPU and host telemetry'
    });
    open.addEventListener('click', () => {
      void this._commands.execute(CommandIds.openMonitor);
    });
    // A click (or Enter) on a GPU card opens that GPU in the monitor.
    const openCard = (target: EventTarget | null) => {
      const card = (target as HTMLElement | null)?.closest?.('.gpudojo-gpu-card');
      const index = card?.getAttribute('data-gpu-index');
      if (index !== null && index !== undefined) {
        void this._commands.execute(CommandIds.openMonitor, { gpu: Number(index) });
      }
    };
    this._body.addEventListener('click', event => openCard(event.target));
    this._body.addEventListener('keydown', event => {
      if ((event.key === 'Enter' || event.key === ' ') && (event.target as HTMLElement).classList.contains('gpudojo-gpu-card')) {
        event.preventDefault();
        openCard(event.target);
      }
    });
    this.node.appendChild(this._body);
    this.node.appendChild(h('div', { className: 'gpudojo-actions' }, open));
    this._model.pollWhile(() => this.isVisible);
    this._model.changed.connect(this._render, this);
    this._render();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._model.start();
    // Catch up at once after the section was collapsed or the sidebar closed.
    void this._model.refresh();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this._model.start();
    }
  }

  private _render(): void {
    const devices = this._model.devices;
    const error = this._model.error;
    const body = this._body;
    // Re-rendered on every poll: keep where the reader scrolled the topology matrix to.
    const scrolled = body.querySelector('.gpudojo-topology-scroll')?.scrollLeft ?? 0;
    // ... and whether the reader opened the no-GPU details.
    const whyOpen = body.querySelector<HTMLDetailsElement>('details.gpudojo-no-gpu-details')?.open ?? false;
    body.textContent = '';
    if (error) {
      body.appendChild(
        h('div', { className: 'gpudojo-error', attrs: { role: 'alert' }, text: error })
      );
    }
    if (!devices) {
      if (!error) {
        body.appendChild(h('div', { className: 'gpudojo-loading', text: 'Probing GPUs…' }));
      }
      return;
    }
    const mode = h('div', { className: 'gpudojo-mode' }, renderModeBadge(devices.mode));
    if (devices.mode === 'replay' && devices.recording?.synthetic) {
      mode.appendChild(renderSyntheticTag(devices.recording));
    }
    if (!devices.available) {
      // No GPU: one line (the badge); why, and what still works, on demand.
      const why = h(
        'details',
        { className: 'gpudojo-no-gpu-details' },
        h('summary', { title: 'Why, and what still works without a GPU' }, mode),
        renderNoGpu(devices.reason)
      );
      why.open = whyOpen;
      body.appendChild(why);
    } else {
      body.appendChild(mode);
    }
    if (devices.available) {
      body.appendChild(renderVersions(devices));
      const cards = h('div', { className: 'gpudojo-gpu-cards' });
      for (const gpu of devices.gpus) {
        cards.appendChild(renderGpuCard(gpu));
      }
      body.appendChild(cards);
      if (devices.gpus.length >= 2 && devices.topology && devices.topology.matrix.length) {
        body.appendChild(h('div', { className: 'gpudojo-subheading', text: 'Topology' }));
        const topology = renderTopology(devices.topology);
        body.appendChild(topology);
        topology.scrollLeft = scrolled;
      }
    }
    body.appendChild(renderHostLine(devices.host, devices.host_sample));
  }

  private _model: DevicesModel;
  private _commands: CommandRegistry;
  private _body: HTMLElement;
}
