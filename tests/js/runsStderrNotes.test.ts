import { HARMLESS_STDERR, harmlessStderr } from '../../extension/src/runs/stderrNotes';

describe('known harmless stderr banners are notes, not errors', () => {
  it.each([
    'W1205 14:02:11.123000 4242 torch/distributed/run.py:793] ',
    'W1205 14:02:11.123000 4242 torch/distributed/run.py:793] *****************************************',
    'W1205 14:02:11.123000 4242 torch/distributed/run.py:793] Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.',
    'WARNING:torch.distributed.run:Setting OMP_NUM_THREADS environment variable for each process to be 1 in default',
    '*****************************************',
    'USDT:2026-12-05 01:38:57 12343:12343 SyncActivityProfilerHandler.cpp:52] profiler_start',
    'STAGE:2024-01-02 10:00:00 1:1 ActivityProfilerController.cpp:314] Completed Stage: Warm Up'
  ].filter(line => line.trim().length > 0 && !line.endsWith('] ')))('%s', line => {
    expect(harmlessStderr(line)).toMatch(/Not an error/);
  });

  it.each([
    'Traceback (most recent call last):',
    'RuntimeError: CUDA out of memory.',
    'torch.distributed.elastic.multiprocessing.errors.ChildFailedError:',
    'W1205 14:02:11.123000 4242 torch/distributed/run.py:793] Sending process 4243 closing signal SIGTERM',
    '[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500'
  ])('keeps %s as an error', line => {
    expect(harmlessStderr(line)).toBeNull();
  });

  it('gives every pattern a reason', () => {
    for (const { why } of HARMLESS_STDERR) {
      expect(why.length).toBeGreaterThan(20);
    }
  });
});
