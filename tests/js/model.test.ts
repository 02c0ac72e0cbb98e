import { TelemetryModel, TelemetryChange } from '../../extension/src/gpu/model';
import { GPU_METRICS, HOST_METRICS } from '../../extension/src/gpu/series';
import { GIB, gpuSample, sample } from './fixtures';
import type { RecordingInfo } from '../../extension/src/api/types';

const metric = (id: string) => GPU_METRICS.find(m => m.id === id)!;
const host = (id: string) => HOST_METRICS.find(m => m.id === id)!;

function history(
  samples = [sample(100), sample(101)],
  mode: 'gpu' | 'cpu' | 'replay' = 'gpu',
  recording: RecordingInfo | null = null
) {
  return { type: 'history' as const, rate_hz: 4, max_hz: 20, mode, recording, samples };
}

describe('TelemetryModel', () => {
  it('starts from the history message and records rate, ceiling and mode', () => {
    const model = new TelemetryModel();
    model.handleMessage(history([sample(101), sample(100)], 'replay'));
    expect(model.samples.map(s => s.t)).toEqual([100, 101]);
    expect(model.rateHz).toBe(4);
    expect(model.maxHz).toBe(20);
    expect(model.mode).toBe('replay');
    expect(model.received).toBe(2);
  });

  it('appends samples after the history and counts them', () => {
    const model = new TelemetryModel();
    const changes: TelemetryChange[] = [];
    model.changed.connect((_, change) => changes.push(change));
    model.handleMessage(history());
    model.handleMessage(sample(102));
    model.handleMessage(sample(103));
    expect(model.samples.map(s => s.t)).toEqual([100, 101, 102, 103]);
    expect(model.received).toBe(4);
    expect(changes).toEqual(['history', 'sample', 'sample']);
  });

  it('keeps only the samples inside the time window', () => {
    const model = new TelemetryModel({ windowSeconds: 10 });
    for (let t = 0; t <= 30; t++) {
      model.handleMessage(sample(t));
    }
    expect(model.samples[0].t).toBe(20);
    expect(model.samples[model.samples.length - 1].t).toBe(30);
    expect(model.size).toBe(11);
    expect(model.received).toBe(31);
  });

  it('narrowing the window trims at once; widening keeps what is left', () => {
    const model = new TelemetryModel({ windowSeconds: 60 });
    for (let t = 0; t < 60; t++) {
      model.handleMessage(sample(t));
    }
    model.windowSeconds = 5;
    expect(model.samples.map(s => s.t)).toEqual([54, 55, 56, 57, 58, 59]);
    model.windowSeconds = 120;
    expect(model.size).toBe(6);
  });

  it('caps the number of samples kept whatever their times', () => {
    const model = new TelemetryModel({ windowSeconds: 600, maxSamples: 50 });
    for (let i = 0; i < 5000; i++) {
      model.handleMessage(sample(i * 0.05));
    }
    expect(model.size).toBe(50);
    expect(model.latest!.t).toBeCloseTo(4999 * 0.05);
  });

  it('drops duplicate and late samples so times stay increasing', () => {
    const model = new TelemetryModel();
    model.handleMessage(history([sample(100), sample(101)]));
    model.handleMessage(sample(101));
    model.handleMessage(sample(100.5));
    expect(model.samples.map(s => s.t)).toEqual([100, 101]);
  });

  it('starts over when the clock jumps back by more than a window (a replay restarted)', () => {
    const model = new TelemetryModel({ windowSeconds: 10 });
    model.handleMessage(history([sample(1000), sample(1001)]));
    model.handleMessage(sample(5));
    expect(model.samples.map(s => s.t)).toEqual([5]);
  });

  it('ignores samples while paused and takes them again after resuming', () => {
    const model = new TelemetryModel();
    model.handleMessage(history());
    model.setPaused(true);
    model.handleMessage(sample(102));
    expect(model.samples.map(s => s.t)).toEqual([100, 101]);
    expect(model.received).toBe(2);
    model.setPaused(false);
    model.handleMessage(sample(103));
    expect(model.samples.map(s => s.t)).toEqual([100, 101, 103]);
  });

  it('follows the server state message for pause and rate', () => {
    const model = new TelemetryModel();
    model.handleMessage({ type: 'state', paused: true, rate_hz: 20 });
    expect(model.paused).toBe(true);
    expect(model.rateHz).toBe(20);
    model.handleMessage({ type: 'state', paused: false, rate_hz: 2 });
    expect(model.paused).toBe(false);
    expect(model.rateHz).toBe(2);
  });

  it('reports server errors without losing samples', () => {
    const model = new TelemetryModel();
    const errors: string[] = [];
    model.errorReported.connect((_, message) => errors.push(message));
    model.handleMessage(history());
    model.handleMessage({ type: 'error', error: { code: 'bad_control', message: 'hz must be > 0', detail: null } });
    expect(errors).toEqual(['hz must be > 0']);
    expect(model.lastError).toBe('hz must be > 0');
    expect(model.size).toBe(2);
  });

  describe('series', () => {
    it('gives one aligned y array per GPU with values in chart units', () => {
      const model = new TelemetryModel();
      model.handleMessage(
        history([
          sample(1, [gpuSample(0, { memory_used_bytes: 2 * GIB }), gpuSample(1, { memory_used_bytes: 4 * GIB })]),
          sample(2, [gpuSample(0, { memory_used_bytes: 3 * GIB }), gpuSample(1, { memory_used_bytes: 5 * GIB })])
        ])
      );
      expect(model.gpuSeries(metric('memory'))).toEqual([
        [1, 2],
        [2, 3],
        [4, 5]
      ]);
    });

    it('gives null, not 0, for fields NVML reports as unsupported or null', () => {
      const model = new TelemetryModel();
      model.handleMessage(
        history([
          sample(1, [gpuSample(0, { power_w: 150, unsupported: [] })]),
          sample(2, [gpuSample(0, { power_w: null, unsupported: ['power_w'] })]),
          sample(3, [gpuSample(0, { power_w: null })])
        ])
      );
      expect(model.gpuSeries(metric('power'))).toEqual([
        [1, 2, 3],
        [150, null, null]
      ]);
    });

    it('adds a series when a GPU appears and fills its past with null', () => {
      const model = new TelemetryModel();
      model.handleMessage(history([sample(1, [gpuSample(0)])]));
      expect(model.gpuIndices()).toEqual([0]);
      model.handleMessage(
        sample(2, [gpuSample(2, { utilization_gpu_pct: 90 }), gpuSample(0, { utilization_gpu_pct: 10 })])
      );
      expect(model.gpuIndices()).toEqual([0, 2]);
      expect(model.gpuSeries(metric('utilization'))).toEqual([
        [1, 2],
        [50, 10],
        [null, 90]
      ]);
    });

    it('extracts host CPU and memory (GiB) for the host charts', () => {
      const model = new TelemetryModel();
      model.handleMessage(history([sample(1, []), sample(2, [])], 'cpu'));
      expect(model.hostSeries(host('host_cpu'))).toEqual([[1, 2], [12.5, 12.5]]);
      expect(model.hostSeries(host('host_memory'))).toEqual([[1, 2], [4, 4]]);
      expect(model.gpuIndices()).toEqual([]);
      expect(model.gpuSeries(metric('utilization'))).toEqual([[1, 2]]);
    });

    it('charts a replay against the recording time, each recorded sample once', () => {
      const recording: RecordingInfo = { synthetic: true, note: null, rate_hz: 2, duration_s: 49.5, cycle_s: 50 };
      const model = new TelemetryModel({ windowSeconds: 60 });
      model.handleMessage(history([sample(1000, [gpuSample(0)], 0)], 'replay', recording));
      // Read at 4 Hz, a 2 Hz recording gives each sample twice: the duplicate is dropped.
      model.handleMessage(sample(1000.25, [gpuSample(0)], 0));
      model.handleMessage(sample(1000.5, [gpuSample(0, { utilization_gpu_pct: 97 })], 0.5));
      model.handleMessage(sample(1000.75, [gpuSample(0)], 0.5));
      expect(model.recording).toEqual(recording);
      expect(model.received).toBe(2);
      expect(model.gpuSeries(metric('utilization'))).toEqual([
        [0, 0.5],
        [50, 97]
      ]);
      expect(model.hostSeries(host('host_cpu'))[0]).toEqual([0, 0.5]);
    });

    it('only covers the window', () => {
      const model = new TelemetryModel({ windowSeconds: 2 });
      for (let t = 0; t < 10; t++) {
        model.handleMessage(sample(t, [gpuSample(0, { temperature_c: t })]));
      }
      expect(model.gpuSeries(metric('temperature'))).toEqual([
        [7, 8, 9],
        [7, 8, 9]
      ]);
    });
  });
});
