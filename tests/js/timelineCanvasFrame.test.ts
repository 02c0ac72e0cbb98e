/**
 * @jest-environment jsdom
 */
import { placeTooltip, timelineTools } from '../../extension/src/timeline/canvasFrame';
import { ZOOM_STEP } from '../../extension/src/timeline/viewport';

describe('timelineTools', () => {
  it("names its controls by the feature, in the order both timelines show them, and zooms by one step", () => {
    const zooms: number[] = [];
    let resets = 0;
    const tools = timelineTools({
      feature: 'memory',
      wheelOver: 'the chart',
      wholeLabel: 'Whole capture',
      wholeTitle: 'Show the whole capture again',
      hint: 'Drag to pan, wheel to zoom.',
      zoom: factor => zooms.push(factor),
      reset: () => (resets += 1)
    });
    expect(tools.node.className).toBe('gpudojo-memory-tools');
    expect(Array.from(tools.node.children).map(c => [c.className.replace('jp-Button jp-mod-styled jp-mod-minimal ', ''), c.textContent])).toEqual([
      ['gpudojo-memory-zoom-in', '+'],
      ['gpudojo-memory-zoom-out', '−'],
      ['gpudojo-memory-zoom-reset', 'Whole capture'],
      ['gpudojo-memory-range', ''],
      ['gpudojo-memory-hint', 'Drag to pan, wheel to zoom.']
    ]);
    expect(tools.range).toBe(tools.node.children[3]);
    expect((tools.node.children[0] as HTMLElement).title).toBe('Zoom in (or the mouse wheel over the chart)');
    (tools.node.querySelector('.gpudojo-memory-zoom-in') as HTMLButtonElement).click();
    (tools.node.querySelector('.gpudojo-memory-zoom-out') as HTMLButtonElement).click();
    (tools.node.querySelector('.gpudojo-memory-zoom-reset') as HTMLButtonElement).click();
    expect(zooms).toEqual([ZOOM_STEP, 1 / ZOOM_STEP]);
    expect(resets).toBe(1);
  });
});

describe('placeTooltip', () => {
  it('puts the tooltip right of the cursor, and left of it near the right edge', () => {
    const tip = document.createElement('div');
    placeTooltip(tip, 100, 40, 800, 280);
    expect([tip.style.left, tip.style.right, tip.style.top]).toEqual(['114px', '', '40px']);
    placeTooltip(tip, 700, -5, 800, 280);
    expect([tip.style.left, tip.style.right, tip.style.top]).toEqual(['', '114px', '0px']);
  });
});
