/**
 * @jest-environment jsdom
 */
// jsdom has no DragEvent, which @lumino/dragdrop extends as it loads: set it before the imports.
(globalThis as unknown as { DragEvent: unknown }).DragEvent ??= class extends MouseEvent {};
import type { GpudojoClient } from '../../extension/src/api/client';
import type { Capture, Run } from '../../extension/src/api/types';
import { RunMemorySection } from '../../extension/src/memory/runMemory';
import { makeRun } from './runsFixtures';

// The icon comes from @jupyterlab/ui-components, an ES module jest does not load.
jest.mock('../../extension/src/icons', () => ({ gpudojoIcon: undefined }));

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

const CAPTURE: Capture = {
  id: 'run:20250101-120000-abcdef:rank0.memory.json',
  run: '20250101-120000-abcdef',
  rank: 0,
  kind: 'cpu-profiler',
  label: 'rank 0',
  source: 'memory/rank0.memory.json',
  size_bytes: 2048
};

/** A client whose listCaptures answers from `answers` in turn (an Error is thrown), counting calls. */
function client(answers: Array<Capture[] | Error>): { client: GpudojoClient; calls: () => number } {
  let calls = 0;
  const fake = {
    listCaptures: async () => {
      const answer = answers[Math.min(calls++, answers.length - 1)];
      if (answer instanceof Error) {
        throw answer;
      }
      return { captures: answer };
    }
  };
  return { client: fake as unknown as GpudojoClient, calls: () => calls };
}

describe("a run view's Memory section (the shared run-artifact section)", () => {
  it('asks for the captures when the run starts and once more when it ends, not on every update', async () => {
    const { client: c, calls } = client([[], [CAPTURE]]);
    const section = new RunMemorySection({ client: c, openCapture: () => undefined, openCaptures: () => [] });
    const running = makeRun({ status: 'running', record_memory: true } as Partial<Run>);
    section.update(running);
    section.update({ ...running });
    await settle();
    expect(calls()).toBe(1);
    expect(section.node.querySelector('.gpudojo-memory-captures-message')?.textContent).toMatch(/Recording memory/);
    section.update(makeRun({ status: 'succeeded', record_memory: true } as Partial<Run>));
    await settle();
    expect(calls()).toBe(2);
    const items = Array.from(section.node.querySelectorAll('.gpudojo-memory-captures li'));
    expect(items.map(li => li.getAttribute('data-capture'))).toEqual([CAPTURE.id]);
    expect(section.node.querySelector<HTMLElement>('.gpudojo-memory-captures-message')!.hidden).toBe(true);
  });

  it('says when the captures could not be listed, and keeps the section', async () => {
    const { client: c } = client([new Error('500 Internal Server Error')]);
    const section = new RunMemorySection({ client: c, openCapture: () => undefined, openCaptures: () => [] });
    section.update(makeRun({ status: 'succeeded', record_memory: true } as Partial<Run>));
    await settle();
    expect(section.node.querySelector('h3')?.textContent).toBe('Memory');
    expect(section.node.querySelector('.gpudojo-memory-captures-message')?.textContent).toBe(
      "The run's memory captures could not be listed: 500 Internal Server Error"
    );
  });
});
