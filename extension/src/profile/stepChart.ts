/**
 * The step-time chart: one stacked bar per step (compute, communication, data
 * loading, memcpy, sync, idle), a legend, and the mean breakdown as a line of
 * percentages. Bars are buttons, not canvas pixels: a click (or Enter) zooms
 * the timeline to that step, and each bar's title gives its figures.
 */

import type { ProfileStep, ProfileSummary } from '../api/types';
import { h } from '../dom';
import { PROFILE_CATEGORIES, breakdownLine, categoryLabel, formatUs } from './format';
import { profileSection } from './panels';
import { StepBar, stepBars } from './stepBars';

export interface StepChartOptions {
  summary: ProfileSummary;
  /** A step's bar was chosen. */
  selected: (step: ProfileStep) => void;
}

export class StepChart {
  constructor(options: StepChartOptions) {
    const { summary } = options;
    const layout = stepBars(summary.steps);
    const plot = h('div', {
      className: 'gpudojo-profile-steps-plot',
      attrs: { role: 'group', 'aria-label': 'Step time per step, stacked by category' }
    });
    const grid = h('div', { className: 'gpudojo-profile-steps-grid', attrs: { 'aria-hidden': 'true' } });
    for (const tick of layout.ticks) {
      const line = h('div', { className: 'gpudojo-profile-steps-gridline' }, h('span', { text: formatUs(tick) }));
      line.style.bottom = `${(tick / layout.topUs) * 100}%`;
      grid.appendChild(line);
    }
    const bars = h('div', { className: 'gpudojo-profile-steps-bars' });
    layout.bars.forEach(bar => {
      const button = this._bar(bar);
      button.addEventListener('click', () => {
        this._select(bar.index);
        options.selected(summary.steps[bar.index]);
      });
      this._buttons.push(button);
      bars.appendChild(button);
    });
    plot.append(grid, bars);
    const legend = h(
      'ul',
      { className: 'gpudojo-profile-legend' },
      ...PROFILE_CATEGORIES.map(category =>
        h(
          'li',
          { attrs: { 'data-category': category } },
          h('span', { className: 'gpudojo-profile-swatch', attrs: { 'data-category': category } }),
          categoryLabel(category)
        )
      )
    );
    const caption =
      summary.step_source === 'whole-trace'
        ? 'The trace has no ProfilerStep spans (record with a schedule and prof.step()): the whole trace is one step.'
        : 'Click a step to show it on the timeline.';
    this.node = profileSection(
      'gpudojo-profile-steps-section',
      'Step time',
      summary.mode.kind,
      h('p', {
        className: 'gpudojo-profile-mean',
        text: `Mean step ${formatUs(summary.mean_step_us)}: ${breakdownLine(summary.breakdown) || 'no time recorded'}`
      }),
      plot,
      legend,
      h('p', { className: 'gpudojo-profile-muted', text: caption })
    );
    this.node.setAttribute('data-steps', String(summary.steps.length));
  }

  readonly node: HTMLElement;

  /** Mark step `index` (its bar) as the one the timeline shows; -1 for none. */
  private _select(index: number): void {
    this._buttons.forEach((b, i) => b.setAttribute('aria-pressed', String(i === index)));
  }

  /** Clear the selection (the timeline was zoomed elsewhere). */
  clearSelection(): void {
    this._select(-1);
  }

  private _bar(bar: StepBar): HTMLButtonElement {
    const parts = bar.segments.map(s => `${categoryLabel(s.category)} ${formatUs(s.us)}`).join(', ');
    const button = h('button', {
      className: 'gpudojo-profile-step',
      title: `Step ${bar.step}: ${formatUs(bar.durUs)} (${parts || 'no activity'})`,
      attrs: {
        type: 'button',
        'data-step': String(bar.step),
        'data-index': String(bar.index),
        'aria-pressed': 'false',
        'aria-label': `Step ${bar.step}, ${formatUs(bar.durUs)}`
      }
    });
    for (const segment of bar.segments) {
      const block = h('span', {
        className: 'gpudojo-profile-segment',
        attrs: { 'data-category': segment.category }
      });
      block.style.bottom = `${segment.bottom * 100}%`;
      block.style.height = `${segment.height * 100}%`;
      button.appendChild(block);
    }
    return button;
  }

  private _buttons: HTMLButtonElement[] = [];
}
