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
    body.appendChild(h('div', { className: 'gpudojo-mode' }, renderModeBadge(devices.mode)));
    if (devices.available) {
      body.appendChild(renderVersions(devices));
      const cards = h('div', { className: 'gpudojo-gpu-cards' });
      for (const gpu of devices.gpus) {
        cards.appendChild(renderGpuCard(gpu));
      }
      body.appendChild(cards);
      if (devices.gpus.length >= 2 && devices.topology && devices.topology.matrix.length) {
        body.appendChild(h('div', { className: 'gpudojo-subheading', text: 'Topology' }));
        body.appendChild(renderTopology(devices.topology));
      }
    } else {
      body.appendChild(renderNoGpu(devices.reason));
    }
    body.appendChild(renderHostLine(devices.host, devices.host_sample));
  }

  private _model: DevicesModel;
  private _commands: CommandRegistry;
  private _body: HTMLElement;
}
