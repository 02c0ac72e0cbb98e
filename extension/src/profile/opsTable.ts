/**
 * The top-operator table: click a header to sort by it (again to turn it
 * around); the CPU / device toggle sorts the same column on the other clock.
 * A CPU-only trace has no device time, so its device columns and the toggle
 * are left out rather than shown as zeros.
 */

import type { OpRow, TraceMode } from '../api/types';
import { h } from '../dom';
import { formatCount, formatUs } from './format';
import { DEFAULT_OP_SORT, OpSort, OpSortKey, TimeBasis, basisOf, nextSort, sortOps, withBasis } from './opSort';

interface Column {
  key: OpSortKey;
  label: string;
  title: string;
  device?: boolean;
  cell: (row: OpRow) => string;
}

const COLUMNS: Column[] = [
  { key: 'name', label: 'Operator', title: 'The op (aten::, a module, or a kernel’s launching op)', cell: r => r.name },
  { key: 'calls', label: 'Calls', title: 'Calls over the analysed steps', cell: r => formatCount(r.calls) },
  { key: 'self_us', label: 'Self', title: 'CPU time in the op itself, children excluded', cell: r => formatUs(r.self_us) },
  { key: 'total_us', label: 'Total', title: 'CPU time including the ops it called', cell: r => formatUs(r.total_us) },
  {
    key: 'device_self_us',
    label: 'Device self',
    title: 'GPU kernel time of the kernels the op launched itself',
    device: true,
    cell: r => formatUs(r.device_self_us ?? 0)
  },
  {
    key: 'device_total_us',
    label: 'Device total',
    title: 'GPU kernel time of the op and the ops it called',
    device: true,
    cell: r => formatUs(r.device_total_us ?? 0)
  }
];

export class OpsTable {
  constructor(rows: readonly OpRow[], mode: TraceMode) {
    this._rows = rows;
    this._columns = COLUMNS.filter(c => mode === 'gpu' || !c.device);
    this._head = h('tr');
    this._body = h('tbody');
    const table = h(
      'table',
      { className: 'gpudojo-profile-table gpudojo-profile-ops', attrs: { 'data-sort': '', 'data-order': '' } },
      h('thead', {}, this._head),
      this._body
    );
    this._table = table;
    this.node = h('div', { className: 'gpudojo-profile-ops-wrap' });
    if (mode === 'gpu') {
      this.node.appendChild(this._basisToggle());
    }
    this.node.appendChild(table);
    this._render();
  }

  readonly node: HTMLElement;

  /** The sort in force. */
  get sort(): OpSort {
    return this._sort;
  }

  /** Sort by `sort` and redraw. */
  setSort(sort: OpSort): void {
    this._sort = sort;
    this._render();
  }

  private _basisToggle(): HTMLElement {
    const group = h('div', {
      className: 'gpudojo-profile-basis',
      attrs: { role: 'group', 'aria-label': 'Sort times by' }
    });
    const choices: Array<[TimeBasis, string]> = [
      ['cpu', 'CPU time'],
      ['device', 'Device time']
    ];
    for (const [basis, label] of choices) {
      const button = h('button', {
        className: 'jp-Button jp-mod-styled jp-mod-minimal',
        text: label,
        attrs: { type: 'button', 'data-basis': basis, 'aria-pressed': 'false' }
      });
      button.addEventListener('click', () => this.setSort(withBasis(this._sort, basis)));
      this._basisButtons.push(button);
      group.appendChild(button);
    }
    return group;
  }

  private _render(): void {
    const sort = this._sort;
    this._table.setAttribute('data-sort', sort.key);
    this._table.setAttribute('data-order', sort.descending ? 'desc' : 'asc');
    this._basisButtons.forEach(b => b.setAttribute('aria-pressed', String(b.getAttribute('data-basis') === basisOf(sort))));
    this._head.textContent = '';
    for (const column of this._columns) {
      const active = column.key === sort.key;
      const button = h('button', {
        className: 'gpudojo-profile-sort',
        text: column.label,
        title: `${column.title}. Click to sort.`,
        attrs: { type: 'button', 'data-key': column.key }
      });
      button.addEventListener('click', () => this.setSort(nextSort(this._sort, column.key)));
      const th = h('th', { attrs: { 'data-key': column.key } }, button);
      th.setAttribute('aria-sort', active ? (sort.descending ? 'descending' : 'ascending') : 'none');
      this._head.appendChild(th);
    }
    this._head.appendChild(h('th', { text: 'Input shapes', title: 'The most frequent input shapes (record_shapes=True)' }));
    this._body.textContent = '';
    for (const row of sortOps(this._rows, sort)) {
      const shapes = row.input_shapes ?? [];
      this._body.appendChild(
        h(
          'tr',
          { attrs: { 'data-op': row.name } },
          ...this._columns.map(c => h('td', { text: c.cell(row), title: c.key === 'name' ? row.name : '' })),
          h('td', {
            className: 'gpudojo-profile-shapes',
            text: shapes.join('  ') || '—',
            title: shapes.join('\n')
          })
        )
      );
    }
  }

  private _rows: readonly OpRow[];
  private _columns: Column[];
  private _sort: OpSort = DEFAULT_OP_SORT;
  private _table: HTMLElement;
  private _head: HTMLElement;
  private _body: HTMLElement;
  private _basisButtons: HTMLButtonElement[] = [];
}
