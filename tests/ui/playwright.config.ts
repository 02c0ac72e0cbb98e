import { defineConfig } from '@playwright/test';
import * as path from 'path';

const repo = path.resolve(__dirname, '..', '..');
export const TOKEN = 'gpudojo-ui-test';

/** A port from the environment (two checkouts can run their browser tests side by side), else the default. */
function port(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

/**
 * One JupyterLab per scenario: a replayed 2-GPU node, a replayed 8-GPU node with MIG, this
 * machine as it is, and this machine beside a one-host Slurm cluster of its own
 * (start-lab-slurm.sh: the engines' specs). GPUDOJO_UI_PORT_REPLAY, GPUDOJO_UI_PORT_REPLAY8,
 * GPUDOJO_UI_PORT_LIVE and GPUDOJO_UI_PORT_SLURM move them off 18891, 18894, 18892 and 18993.
 */
const servers = {
  replay: {
    port: port('GPUDOJO_UI_PORT_REPLAY', 18891),
    args: `--GPUDojo.gpu_replay_file=${repo}/tests/data/gpu/2gpu-h100-nvlink.jsonl`
  },
  replay8: {
    port: port('GPUDOJO_UI_PORT_REPLAY8', 18894),
    args: `--GPUDojo.gpu_replay_file=${repo}/tests/data/gpu/8gpu-a100-mig.jsonl`
  },
  live: { port: port('GPUDOJO_UI_PORT_LIVE', 18892), args: '' },
  slurm: { port: port('GPUDOJO_UI_PORT_SLURM', 18993), args: '', script: 'start-lab-slurm.sh' }
};

/**
 * The class's JupyterHubs (start-hub.sh, tests/python/hub_harness.py; DummyAuthenticator with one
 * password each): `hub`, docs/deploy/jupyterhub_config.py with learners alice and bob, on
 * GPUDOJO_UI_PORT_HUB (default 18895) and the next four ports; `classHub`, the gpudojo-class
 * service of docs/jupyterhub_class_service.py with instructor ines and the learners' servers
 * started by class-view.spec.ts with the setup token, on GPUDOJO_UI_PORT_CLASSHUB (default 19530)
 * and the next five ports.
 */
export const HUB_PASSWORD = 'gpudojo-ui-class';
export const CLASSHUB_PASSWORD = 'gpudojo-ui-classview';
export const CLASSHUB_SETUP_TOKEN = 'gpudojo-ui-classview-setup';
const hubs = {
  hub: { kind: 'deploy', port: port('GPUDOJO_UI_PORT_HUB', 18895), args: HUB_PASSWORD },
  classHub: {
    kind: 'class',
    port: port('GPUDOJO_UI_PORT_CLASSHUB', 19530),
    args: `${CLASSHUB_PASSWORD} ${CLASSHUB_SETUP_TOKEN}`
  }
};

export default defineConfig({
  testDir: '.',
  outputDir: path.join(repo, 'test-results', 'ui'),
  timeout: 90_000,
  expect: { timeout: 20_000 },
  retries: process.env.CI ? 1 : 0,
  workers: 1,
  reporter: [['list']],
  use: {
    video: 'off',
    actionTimeout: 15_000,
    trace: 'off',
    screenshot: 'only-on-failure',
    viewport: { width: 1400, height: 900 },
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--headless=new',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  },
  projects: [
    {
      name: 'replay-2gpu',
      testMatch: /(gpu-replay|kernels|lab-kernels|runs|memory)\.spec\.ts/,
      use: { baseURL: `http://127.0.0.1:${servers.replay.port}` }
    },
    {
      name: 'replay-8gpu',
      testMatch: /gpu-replay-8\.spec\.ts/,
      use: { baseURL: `http://127.0.0.1:${servers.replay8.port}` }
    },
    {
      name: 'no-gpu',
      testMatch: /(gpu-none|course|exercise|profile|first-hour|kernel-cpu-run)\.spec\.ts/,
      use: { baseURL: `http://127.0.0.1:${servers.live.port}` }
    },
    {
      name: 'engines',
      testMatch: /(slurm|nodes)\.spec\.ts/,
      use: { baseURL: `http://127.0.0.1:${servers.slurm.port}` }
    },
    {
      name: 'hub',
      testMatch: /\/hub\.spec\.ts$/,
      use: { baseURL: `http://127.0.0.1:${hubs.hub.port}` }
    },
    {
      name: 'class-view',
      testMatch: /\/class-view\.spec\.ts$/,
      use: { baseURL: `http://127.0.0.1:${hubs.classHub.port}` }
    }
  ],
  webServer: [
    ...Object.values(servers).map(s => ({
      command: `bash tests/ui/${'script' in s ? s.script : 'start-lab.sh'} ${s.port} ${s.args}`,
      // The Slurm server's wrapper stops its cluster on SIGTERM; the others are SIGKILLed as before.
      ...('script' in s ? { gracefulShutdown: { signal: 'SIGTERM' as const, timeout: 20_000 } } : {}),
      cwd: repo,
      url: `http://127.0.0.1:${s.port}/api/status?token=${TOKEN}`,
      timeout: 120_000,
      reuseExistingServer: false,
      stdout: 'ignore' as const,
      stderr: 'ignore' as const
    })),
    ...Object.values(hubs).map(h => ({
      command: `bash tests/ui/start-hub.sh ${h.kind} ${h.port} ${h.args}`,
      // A hub stops the learners' servers, its services and its proxy on SIGTERM.
      gracefulShutdown: { signal: 'SIGTERM' as const, timeout: 20_000 },
      cwd: repo,
      url: `http://127.0.0.1:${h.port}/hub/health`,
      timeout: 120_000,
      reuseExistingServer: false,
      stdout: 'ignore' as const,
      stderr: 'ignore' as const
    }))
  ]
});
