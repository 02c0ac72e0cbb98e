import { RunStream } from '../../extension/src/api/runStream';
import type { SocketLike } from '../../extension/src/api/telemetry';
import type { Sweep } from '../../extension/src/api/types';
import { SweepModel } from '../../extension/src/runs/sweepModel';
import { batch, makeRun, metric } from './runsFixtures';

/** A socket that opens at once and takes frames from the test. */
class ScriptedSocket implements SocketLike {
  onopen: ((event: any) => void) | null = null;
  onclose: ((event: any) => void) | null = null;
  onerror: ((event: any) => void) | null = null;
  onmessage: ((event: any) => void) | null = null;
  readyState = 1;
  send(): void {}
  close(): void {}
  receive(data: string) {
    this.onmessage?.({ data });
  }
}

function sweepOf(statuses: Array<'queued' | 'running' | 'succeeded'>): Sweep {
  return {
    group: 'sweep-0123456789',
    lab: 'lab-03-ddp',
    param: 'nproc',
    runs: statuses.map((status, i) =>
      makeRun({
        id: `20250101-12000${i}-abcdef`,
        status,
        nproc: i + 1,
        params: { nproc: i + 1 },
        group: 'sweep-0123456789',
        group_param: 'nproc'
      })
    )
  };
}

describe('SweepModel', () => {
  it('follows each started member’s stream and turns rank 0’s epoch times into scaling points', async () => {
    const sockets = new Map<string, ScriptedSocket>();
    let next = sweepOf(['running', 'queued']);
    const model = new SweepModel('sweep-0123456789', {
      getSweep: async () => next,
      openRunStream: id =>
        new RunStream({
          createSocket: () => {
            const socket = new ScriptedSocket();
            sockets.set(id, socket);
            return socket;
          }
        })
    });
    await model.refresh();
    // The queued member has no stream yet.
    expect([...sockets.keys()]).toEqual(['20250101-120000-abcdef']);
    sockets.get('20250101-120000-abcdef')!.receive(
      batch([metric(0, 0, 31, { epoch_time_s: 4 }), metric(1, 0, 63, { epoch_time_s: 2 }), metric(2, 1, 31, { epoch_time_s: 9 })])
    );
    expect(model.points()[0].epochTimeS).toBe(3);
    expect(model.isFinal).toBe(false);

    next = sweepOf(['succeeded', 'succeeded']);
    await model.refresh();
    sockets.get('20250101-120001-abcdef')!.receive(batch([metric(0, 0, 31, { epoch_time_s: 2 })]));
    const points = model.points();
    expect(points.map(p => p.value)).toEqual([1, 2]);
    expect(points[1].speedup).toBe(1.5);
    expect(points[1].efficiency).toBe(0.75);
    expect(model.isFinal).toBe(true);
    model.dispose();
  });
});
