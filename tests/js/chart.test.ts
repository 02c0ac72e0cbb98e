/**
 * @jest-environment jsdom
 */
import type * as ChartModule from '../../extension/src/gpu/chart';

// uPlot reads matchMedia when it is imported, so load it after the stubs.
let TelemetryChart: typeof ChartModule.TelemetryChart;
let readChartTheme: typeof ChartModule.readChartTheme;

// jsdom draws nothing: give uPlot a canvas context that accepts every call.
function stubCanvas(): void {
  const context = new Proxy(
    {},
    {
      get: (target: any, name) =>
        name in target ? target[name] : name === 'measureText' ? () => ({ width: 10 }) : () => undefined,
      set: (target: any, name, value) => {
        target[name] = value;
        return true;
      }
    }
  );
  (HTMLCanvasElement.prototype as any).getContext = () => context;
  (window as any).Path2D = class {
    moveTo() {}
    lineTo() {}
    rect() {}
    arc() {}
    closePath() {}
    bezierCurveTo() {}
    addPath() {}
  };
  (window as any).matchMedia = () => ({
    matches: false,
    addListener: () => undefined,
    removeListener: () => undefined,
    addEventListener: () => undefined,
    removeEventListener: () => undefined
  });
}

describe('TelemetryChart', () => {
  beforeAll(() => {
    stubCanvas();
    const chart = jest.requireActual<typeof ChartModule>('../../extension/src/gpu/chart');
    TelemetryChart = chart.TelemetryChart;
    readChartTheme = chart.readChartTheme;
  });

  it('colours series from the palette variables, falling back when a theme sets none', () => {
    document.body.style.setProperty('--gpudojo-category-color-0', 'rgb(1, 2, 3)');
    const theme = readChartTheme();
    expect(theme.series[0]).toBe('rgb(1, 2, 3)');
    expect(theme.series[1]).toBe('#f28e2b');
    expect(new Set(theme.series).size).toBeGreaterThanOrEqual(8);
  });

  it('builds a uPlot chart tagged with its metric, takes data and resizes', () => {
    const chart = new TelemetryChart({
      metric: 'utilization',
      title: 'GPU utilization (%)',
      unit: '%',
      seriesLabels: ['GPU 0', 'GPU 1'],
      range: [0, 100],
      windowSeconds: 60,
      theme: readChartTheme(),
      width: 400,
      height: 150
    });
    document.body.appendChild(chart.node);
    expect(chart.node.dataset.metric).toBe('utilization');
    expect(chart.node.querySelector('.u-title')!.textContent).toBe('GPU utilization (%)');
    expect(chart.node.textContent).toContain('GPU 1');
    chart.setData([
      [100, 101, 102],
      [10, null, 30],
      [null, 50, 60]
    ]);
    chart.setSize(600, 150);
    chart.dispose();
    expect(chart.node.isConnected).toBe(false);
  });
});
