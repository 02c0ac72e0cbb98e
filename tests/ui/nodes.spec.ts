import { Locator, Page, expect, test } from '@playwright/test';
import { ChildProcess, spawn } from 'child_process';
import * as path from 'path';
import { keepScreenshot, openLab, openSidebar } from './helpers';

/**
 * torchrun across nodes from the run form: this machine runs node 0 under the run service,
 * and "the other machine" is the join command the view shows, run by the test on this
 * same machine over loopback (a second torchrun agent, as a learner would paste it).
 */

const repo = path.resolve(__dirname, '..', '..');
const gpudojo = path.join(repo, '.venv', 'bin', 'gpudojo');
const LAB = 'lab-03-ddp';
/** Two agents with two gloo ranks each on two cores, rendezvous included. */
const RUN_TIMEOUT = 180_000;

async function openRunForm(page: Page): Promise<Locator> {
  const panel = await openSidebar(page);
  const button = panel.locator(`#gpudojo-course-section .gpudojo-run-lab[data-lab="${LAB}"]`);
  await expect(button).toBeVisible({ timeout: 30_000 });
  await button.click();
  const form = page.locator(`#gpudojo-run-form-${LAB} .gpudojo-run-form`);
  await expect(form).toBeVisible();
  return form;
}

/** Run a pasted command line of plain words (the join command has no quoting) in a session of its own. */
function runCommand(line: string): { child: ChildProcess; output: () => string } {
  const [program, ...args] = line.trim().split(/\s+/);
  expect(program).toBe('gpudojo');
  let output = '';
  const child = spawn(gpudojo, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', chunk => (output += String(chunk)));
  child.stderr?.on('data', chunk => (output += String(chunk)));
  return { child, output: () => output };
}

/** Stop the joined node's agent and its ranks (its own process group), if still running. */
function stopCommand(child: ChildProcess): void {
  if (child.exitCode === null && child.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

test('a learner runs the DDP lab on two nodes: the join command, the rendezvous and every rank by node', async ({
  page,
  context
}) => {
  test.setTimeout(360_000);
  await openLab(page);
  const form = await openRunForm(page);

  const where = form.locator('.gpudojo-run-where');
  await where.locator('input[type="radio"][data-engine="torchrun-nodes"]').check();
  await expect(where.locator('input[name="where-nnodes"]')).toHaveValue('2');
  // The form proposes an address of this machine that other nodes reach, never loopback.
  const host = where.locator('input[name="where-host"]');
  const addresses = (await page.request.get('/gpudojo/api/runs/engines?token=gpudojo-ui-test').then(r => r.json()))
    .engines.find((e: { name: string }) => e.name === 'torchrun-nodes').addresses as string[];
  await expect(host).toHaveValue(addresses[0] ?? '127.0.0.1');
  await expect(where.locator('.gpudojo-run-where-addresses')).toBeVisible();
  // An engine that cannot run here says why in one line; what lies behind it opens on demand.
  const listed = (await page.request.get('/gpudojo/api/runs/engines?token=gpudojo-ui-test').then(r => r.json()))
    .engines as Array<{ name: string; available: boolean; reason: string; detail: string }>;
  for (const engine of listed.filter(e => !e.available)) {
    const reason = where.locator(`.gpudojo-run-where-choice[data-engine="${engine.name}"] .gpudojo-run-where-reason`);
    expect(await reason.textContent()).not.toContain('\n');
    const detail = where.locator(`.gpudojo-run-where-detail[data-engine="${engine.name}"]`);
    await expect(detail).toHaveCount(engine.detail ? 1 : 0);
    if (engine.detail) {
      await expect(detail.locator('pre')).toBeHidden();
      await detail.locator('summary').click();
      await expect(detail.locator('pre')).toHaveText(engine.detail.trim());
    }
  }
  // Elastic needs a minimum below the node count.
  await where.locator('input[name="where-min_nodes"]').fill('3');
  await form.locator('.gpudojo-run-start').click();
  await expect(where.locator('.gpudojo-field-error[data-for="where.min_nodes"]')).toHaveText(
    'at most the number of nodes (2)'
  );
  // This test plays the other machine on this one: loopback, allowed only behind the testing box.
  await host.fill('127.0.0.1');
  await form.locator('.gpudojo-run-start').click();
  await expect(where.locator('.gpudojo-field-error[data-for="where.host"]')).toContainText(
    'a node on another machine cannot reach it'
  );
  const practice = where.locator('.gpudojo-run-where-same-machine label');
  await expect(practice).toHaveText('Every node on this machine (practice): 127.0.0.1 is then allowed');
  // The server refuses the same: loopback for nodes that are other machines is a 400 at the host.
  const refused = await page.request.post('/gpudojo/api/runs?token=gpudojo-ui-test', {
    data: { kind: 'lab', lab: LAB, params: { nproc: 1 }, where: { engine: 'torchrun-nodes', host: '127.0.0.1' } }
  });
  expect(refused.status()).toBe(400);
  const [why] = (await refused.json()).error.detail as Array<{ loc: string[]; msg: string }>;
  expect(why.loc[why.loc.length - 1]).toBe('host');
  expect(why.msg).toContain("127.0.0.1 is this machine's loopback: a node on another machine cannot reach it.");
  await keepScreenshot(page, 'run-form-nodes-loopback-refused.png');
  await where.locator('input[name="where-same_machine"]').check();
  await where.locator('input[name="where-min_nodes"]').fill('');
  await where.locator('input[name="where-join_timeout_s"]').fill('150');
  await form.locator('input[name="nproc"]').fill('2');
  await form.locator('input[name="epochs"]').fill('1');
  await form.locator('.gpudojo-run-start').click();
  await expect(form).toHaveCount(0, { timeout: 30_000 });
  const view = page.locator('.gpudojo-run-view:visible');
  await expect(view).toBeVisible();

  // While node 1 is awaited: the join command up front with its Copy button, node 1 waiting.
  await expect(view.locator('.gpudojo-run-engine-job')).toHaveText(/^torchrun across 2 nodes/);
  const join = view.locator('.gpudojo-run-join');
  await expect(join).toBeVisible({ timeout: 60_000 });
  const command = join.locator('.gpudojo-run-join-command');
  await expect(command).toHaveText(/^gpudojo node join 127\.0\.0\.1:\d+ --token \S+$/);
  const waiting = view.locator('.gpudojo-run-node[data-state="waiting"]');
  await expect(waiting).toHaveCount(1, { timeout: 60_000 });
  await expect(waiting.locator('.gpudojo-run-node-name')).toHaveText('node 1');
  await expect(waiting.locator('.gpudojo-node-state')).toHaveText('Waiting');
  await expect(view.locator('.gpudojo-run-rendezvous')).toContainText('1 of 2 nodes joined');
  await expect(view.locator('.gpudojo-run-rendezvous')).toHaveAttribute('data-state', 'waiting');
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await join.locator('.gpudojo-run-join-copy').click();
  await expect(join.locator('.gpudojo-run-join-copy')).toHaveText('Copied');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await command.textContent());
  await view.locator('.gpudojo-run-top').evaluate(node => node.scrollTo(0, 0));
  await keepScreenshot(page, 'run-view-nodes-waiting.png');

  // "The other machine" pastes it.
  const node1 = runCommand(copied);
  try {
    await expect(view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });
    await expect.poll(() => node1.child.exitCode, { timeout: 30_000, message: node1.output() }).toBe(0);
  } finally {
    stopCommand(node1.child);
  }
  await expect(join).toBeHidden();
  await expect(view.locator('.gpudojo-run-rendezvous')).toContainText('2 of 2 nodes joined');

  // Both nodes, each with its ranks under it; each rank's log is labelled with its node.
  const nodes = view.locator('.gpudojo-run-nodes-section .gpudojo-run-node');
  await expect(nodes).toHaveCount(2);
  await expect(nodes.nth(0)).toHaveAttribute('data-state', 'succeeded');
  await expect(nodes.nth(1)).toHaveAttribute('data-state', 'succeeded');
  await expect(nodes.nth(0).locator('.gpudojo-run-node-rank')).toHaveText(['Rank 0', 'Rank 1']);
  await expect(nodes.nth(1).locator('.gpudojo-run-node-rank')).toHaveText(['Rank 2', 'Rank 3']);
  const node1Name = await nodes.nth(1).getAttribute('data-node');
  await expect(view.locator('.gpudojo-log-tab[data-rank="3"]')).toHaveAttribute('data-node', node1Name ?? '');
  for (const rank of ['0', '3']) {
    await view.locator(`.gpudojo-run-node-rank[data-rank="${rank}"]`).click();
    await expect(view.locator(`.gpudojo-log-tab[data-rank="${rank}"]`)).toHaveAttribute('aria-selected', 'true');
    await expect(view.locator(`.gpudojo-log-line[data-rank="${rank}"]`).first()).toBeVisible();
  }
  for (const check of ['loss-decreases', 'ranks-in-sync', 'succeeded']) {
    await expect(view.locator(`.gpudojo-run-checks li[data-check="${check}"]`)).toHaveAttribute('data-ok', 'true');
  }
  // The generated files: the join command, node 0's torchrun, the job every node was given.
  await expect(view.locator('.gpudojo-run-artifact')).toHaveCount(3);
  const node0 = view.locator('.gpudojo-run-artifact[data-artifact="node0-torchrun.txt"]');
  await node0.locator('.gpudojo-artifact-view').click();
  await expect(node0.locator('.gpudojo-artifact-text')).toContainText('--rdzv-backend c10d');
  await node0.locator('.gpudojo-artifact-view').click();
  await view.locator('.gpudojo-log-tab[data-rank="all"]').click();
  await view.locator('.gpudojo-run-top').evaluate(node => node.scrollTo(0, 0));
  await keepScreenshot(page, 'run-view-nodes.png');
});
