import { RunModel } from '../../extension/src/runs/runModel';
import { ALL_TAB, LAUNCHER_TAB } from '../../extension/src/runs/logBuffer';
import { chartedMetrics } from '../../extension/src/runs/metricSeries';
import { DDP_LAB, log, makeRun, metric, status } from './runsFixtures';

const ID = '20250101-120000-abcdef';

describe('RunModel', () => {
  it('keeps each rank’s lines in its tab and all of them merged in arrival order', () => {
    const model = new RunModel(ID);
    model.applyBatch([
      status(0),
      log(1, 0, 'rank 0 starts'),
      log(2, 1, 'rank 1 starts'),
      log(3, null, 'torchrun: WARNING'),
      log(4, 1, 'Traceback', 'stderr')
    ]);
    const { logs } = model;
    expect(logs.tabs()).toEqual(['0', '1', LAUNCHER_TAB]);
    expect(logs.count(ALL_TAB)).toBe(4);
    expect([0, 1, 2, 3].map(i => logs.line(ALL_TAB, i).text)).toEqual([
      'rank 0 starts',
      'rank 1 starts',
      'torchrun: WARNING',
      'Traceback'
    ]);
    expect(logs.count('1')).toBe(2);
    expect(logs.line('1', 1)).toEqual({ rank: 1, kind: 'stderr', text: 'Traceback' });
    expect(logs.line(LAUNCHER_TAB, 0).rank).toBeNull();
  });

  it('skips events a resumed stream replays (seq at or below the last applied)', () => {
    const model = new RunModel(ID);
    model.applyBatch([status(0), log(1, 0, 'a'), log(2, 0, 'b')]);
    // The reconnect asked for after=2 but a proxy replayed from 1: only 3 is new.
    const change = model.applyBatch([log(1, 0, 'a'), log(2, 0, 'b'), log(3, 0, 'c')]);
    expect(change.logs).toBe(true);
    expect(model.logs.count('0')).toBe(3);
    expect(model.lastSeq).toBe(3);
    expect(model.applyBatch([log(3, 0, 'c')])).toEqual({ run: false, logs: false, metrics: false });
  });

  it('takes the newest status event as the run and says when it is final', () => {
    const model = new RunModel(ID);
    model.applyBatch([status(0, { status: 'queued' }), status(1, { status: 'running' })]);
    expect(model.run?.status).toBe('running');
    expect(model.isFinal).toBe(false);
    model.applyBatch([status(2, { status: 'succeeded', exit_code: 0 })]);
    expect(model.isFinal).toBe(true);
  });

  it('lets a REST document in only where the stream has not said more', () => {
    const model = new RunModel(ID);
    expect(model.offerRun(makeRun({ status: 'queued' }))).toBe(true);
    model.applyBatch([status(0, { status: 'running' })]);
    // A stale GET answer does not undo the stream's newer status.
    expect(model.offerRun(makeRun({ status: 'queued' }))).toBe(false);
    // A cancel's answer may beat its status event.
    expect(model.offerRun(makeRun({ status: 'cancelled' }))).toBe(true);
    expect(model.offerRun(makeRun({ status: 'running' }))).toBe(false);
    expect(model.offerRun(makeRun({ id: '20250101-120000-000000', status: 'failed' }))).toBe(false);
    expect(model.run?.status).toBe('cancelled');
  });

  it('shows the truncation notice in every tab, including ranks that print later', () => {
    const model = new RunModel(ID);
    model.applyBatch([log(0, 0, 'x'), { type: 'truncated', seq: 1, message: 'Output past 64 MiB is not streamed' }]);
    model.applyBatch([log(2, 1, 'late')]);
    expect(model.truncated).toMatch(/64 MiB/);
    expect(model.logs.line('0', 1).kind).toBe('marker');
    expect(model.logs.line('1', 0).kind).toBe('marker');
    expect(model.logs.line(ALL_TAB, 1).kind).toBe('marker');
  });

  it('keeps 100k lines without slowing down', () => {
    const model = new RunModel(ID);
    const events = [];
    for (let i = 0; i < 100_000; i++) {
      events.push(log(i, i % 4, `step ${i}`));
    }
    const started = Date.now();
    for (let i = 0; i < events.length; i += 500) {
      model.applyBatch(events.slice(i, i + 500));
    }
    expect(Date.now() - started).toBeLessThan(2000);
    expect(model.logs.count(ALL_TAB)).toBe(100_000);
    expect(model.logs.count('3')).toBe(25_000);
    expect(model.logs.line('3', 24_999).text).toBe('step 99999');
  });
});

describe('MetricSeries', () => {
  it('aligns every rank on the steps, with null where a rank has no point', () => {
    const model = new RunModel(ID);
    model.applyBatch([
      metric(0, 0, 0, { loss: 2.0, epoch: 0 }),
      metric(1, 1, 0, { loss: 2.1, epoch: 0 }),
      metric(2, 0, 1, { loss: 1.5, epoch: 0 }),
      metric(3, 1, 2, { loss: 1.2, note: 'text', missing: null })
    ]);
    const { metrics } = model;
    expect(metrics.ranks('loss')).toEqual([0, 1]);
    expect(metrics.aligned('loss')).toEqual([
      [0, 1, 2],
      [2.0, 1.5, null],
      [2.1, null, 1.2]
    ]);
    // Strings and nulls (NaN arrives as null) are not drawn.
    expect(metrics.names()).toEqual(['loss', 'epoch']);
  });

  it('places a point without a step after the rank’s last one', () => {
    const model = new RunModel(ID);
    model.applyBatch([metric(0, 0, 5, { loss: 1 }), metric(1, 0, null, { loss: 0.5 })]);
    expect(model.metrics.aligned('loss')[0]).toEqual([5, 6]);
  });

  it('charts a lab’s manifest metrics that have points, in the manifest’s order', () => {
    const model = new RunModel(ID);
    model.applyBatch([metric(0, 0, 0, { epoch_time_s: 1.5, loss: 2, epoch: 0 })]);
    expect(chartedMetrics(model.metrics, DDP_LAB.metrics)).toEqual(['loss', 'epoch_time_s']);
    expect(chartedMetrics(model.metrics, null)).toEqual(['epoch_time_s', 'loss', 'epoch']);
    expect(model.metrics.mean('epoch_time_s', 0)).toBe(1.5);
    expect(model.metrics.mean('epoch_time_s', 1)).toBeNull();
  });
});
