import { Locator, Page, expect, test } from '@playwright/test';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { ARTIFACTS, TOKEN, keepScreenshot, openLab, openSidebar } from './helpers';

/**
 * The run form's "Where" against a real one-host Slurm cluster (Debian's slurm-wlm and
 * munge, started beside this project's server by start-lab-slurm.sh): lab 3 goes to
 * Slurm as a batch job, and its ranks, metrics and checks come back into the run view.
 */

const repo = path.resolve(__dirname, '..', '..');
const python = path.join(repo, '.venv', 'bin', 'python');
const LAB = 'lab-03-ddp';
/** sbatch, the job's torchrun with two gloo ranks, sacct/scontrol polling: about 20 s on two cores. */
const RUN_TIMEOUT = 150_000;

interface EngineInfo {
  name: string;
  title: string;
  available: boolean;
  reason: string;
}

/** The Slurm and munge binaries this machine lacks (slurm_cluster.py's own list). */
function missingSlurm(): string[] {
  const out = execFileSync(python, [path.join(repo, 'tests', 'python', 'slurm_cluster.py'), 'missing'], {
    encoding: 'utf8'
  });
  return out.split('\n').filter(Boolean);
}

async function engines(page: Page): Promise<EngineInfo[]> {
  const response = await page.request.get(`/gpudojo/api/runs/engines?token=${TOKEN}`);
  expect(response.ok()).toBe(true);
  return (await response.json()).engines as EngineInfo[];
}

async function openRunForm(page: Page): Promise<Locator> {
  const panel = await openSidebar(page);
  const button = panel.locator(`#gpudojo-course-section .gpudojo-run-lab[data-lab="${LAB}"]`);
  await expect(button).toBeVisible({ timeout: 30_000 });
  await button.click();
  const form = page.locator(`#gpudojo-run-form-${LAB} .gpudojo-run-form`);
  await expect(form).toBeVisible();
  return form;
}

test('a learner sends the DDP lab to Slurm and follows the job to success', async ({ page, context }) => {
  const missing = missingSlurm();
  test.skip(
    missing.length > 0,
    `Slurm is not installed here (${missing.join(', ')} missing): \`make test\` installs Debian's slurm-wlm and munge`
  );
  test.setTimeout(300_000);
  const listed = await engines(page);
  const slurm = listed.find(e => e.name === 'slurm');
  expect(slurm?.available, `Slurm should be available beside start-lab-slurm.sh's cluster: ${slurm?.reason}`).toBe(
    true
  );

  await openLab(page);
  const form = await openRunForm(page);

  // Every engine is offered; one that cannot run from here is disabled and says why.
  const where = form.locator('.gpudojo-run-where');
  await expect(where.locator('input[type="radio"][data-engine="local"]')).toBeChecked();
  for (const engine of listed) {
    const choice = where.locator(`.gpudojo-run-where-choice[data-engine="${engine.name}"]`);
    await expect(choice).toContainText(engine.title);
    if (!engine.available) {
      await expect(choice.locator('input')).toBeDisabled();
      await expect(choice.locator('.gpudojo-run-where-reason')).toHaveText(`Unavailable: ${engine.reason}`);
    }
  }

  // Slurm's options are typed fields with the schema's bounds; a mistake shows at its field.
  await where.locator('input[type="radio"][data-engine="slurm"]').check();
  await expect(where).toHaveAttribute('data-engine', 'slurm');
  const nodes = where.locator('input[name="where-nodes"]');
  await expect(nodes).toHaveAttribute('type', 'number');
  await expect(nodes).toHaveAttribute('max', '64');
  await expect(where.locator('input[name="where-time_limit_min"]')).toHaveValue('30');
  await expect(where.locator('input[name="where-partition"]')).toHaveValue('');
  await nodes.fill('65');
  await expect(where.locator('.gpudojo-field-error[data-for="where.nodes"]')).toHaveText('65 is above the maximum, 64');
  await nodes.fill('1');
  await expect(where.locator('.gpudojo-field-error[data-for="where.nodes"]')).toHaveText('');
  await where.locator('input[name="where-time_limit_min"]').fill('10');
  await keepScreenshot(page, 'run-form-where-slurm.png');

  await form.locator('input[name="nproc"]').fill('2');
  await form.locator('input[name="epochs"]').fill('1');
  await form.locator('.gpudojo-run-start').click();
  await expect(form).toHaveCount(0, { timeout: 30_000 });
  const view = page.locator('.gpudojo-run-view:visible');
  await expect(view).toBeVisible();

  // Slurm's own job id and state, as sbatch and scontrol give them.
  const job = view.locator('.gpudojo-run-engine-job');
  await expect(job).toHaveText(/^Slurm job \d+ · (PENDING|RUNNING|COMPLETING|COMPLETED)$/, { timeout: 60_000 });
  const jobId = await job.getAttribute('data-job-id');
  expect(jobId).toMatch(/^\d+$/);

  await expect(view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });
  await expect(view.locator('.gpudojo-run-status')).toHaveText('Succeeded');
  await expect(job).toHaveText(`Slurm job ${jobId} · COMPLETED`);
  await expect(view.locator('.gpudojo-run-command')).toContainText('gpudojo.worker.follow_slurm');

  // The node Slurm gave the job, with both ranks under it; a rank opens its own log.
  const node = view.locator('.gpudojo-run-nodes-section .gpudojo-run-node');
  await expect(node).toHaveCount(1);
  await expect(node).toHaveAttribute('data-state', 'succeeded');
  await expect(node.locator('.gpudojo-node-state')).toHaveText('Succeeded');
  await expect(node.locator('.gpudojo-run-node-rank')).toHaveText(['Rank 0', 'Rank 1']);
  for (const rank of ['0', '1']) {
    await node.locator(`.gpudojo-run-node-rank[data-rank="${rank}"]`).click();
    await expect(view.locator(`.gpudojo-log-tab[data-rank="${rank}"]`)).toHaveAttribute('aria-selected', 'true');
    await expect(
      view.locator(`.gpudojo-log-line[data-rank="${rank}"]`, { hasText: `rank ${rank} epoch` }).first()
    ).toBeVisible();
    await expect(view.locator(`.gpudojo-log-view .gpudojo-log-line:visible:not([data-rank="${rank}"])`)).toHaveCount(0);
  }
  await view.locator('.gpudojo-log-tab[data-rank="launcher"]').click();
  await expect(view.locator('.gpudojo-log-line', { hasText: `submitted Slurm job ${jobId}` })).toBeVisible();

  // The lab's checks pass, and the loss is charted for both ranks as on this machine.
  for (const check of ['loss-decreases', 'ranks-in-sync', 'succeeded']) {
    await expect(view.locator(`.gpudojo-run-checks li[data-check="${check}"]`)).toHaveAttribute('data-ok', 'true');
  }
  await expect(view.locator('.gpudojo-run-chart[data-metric="loss"] .u-legend')).toContainText('rank 1');

  // The batch script that was submitted: shown, and copied as it is.
  const script = view.locator('.gpudojo-run-artifacts-section .gpudojo-run-artifact[data-artifact="job.sbatch"]');
  await expect(script).toBeVisible();
  await script.locator('.gpudojo-artifact-view').click();
  const text = script.locator('.gpudojo-artifact-text');
  await expect(text).toBeVisible();
  await expect(text).toContainText('#SBATCH --nodes=1');
  await expect(text).toContainText('#SBATCH --time=0:10:00');
  await expect(text).toContainText('torch.distributed.run');
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await script.locator('.gpudojo-artifact-copy').click();
  await expect(script.locator('.gpudojo-artifact-copy')).toHaveText('Copied');
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  expect(copied).toBe(await text.textContent());

  await script.locator('.gpudojo-artifact-view').click();
  await expect(text).toBeHidden();
  await view.locator('.gpudojo-log-tab[data-rank="all"]').click();
  await view.locator('.gpudojo-run-top').evaluate(node => node.scrollTo(0, 0));
  await keepScreenshot(page, 'run-view-slurm.png');
  fs.mkdirSync(path.join(repo, 'docs'), { recursive: true });
  fs.copyFileSync(path.join(ARTIFACTS, 'run-view-slurm.png'), path.join(repo, 'docs', 'run-view-slurm.png'));
});

test('a learner sends their own script to Slurm from the file browser', async ({ page }) => {
  const missing = missingSlurm();
  test.skip(missing.length > 0, `Slurm is not installed here (${missing.join(', ')} missing)`);
  test.setTimeout(240_000);
  const script = 'import os\nprint(f"hello from rank {os.environ[\'RANK\']} of {os.environ[\'WORLD_SIZE\']}", flush=True)\n';
  const put = await page.request.put(`/api/contents/hello_slurm.py?token=${TOKEN}`, {
    data: { type: 'file', format: 'text', content: script }
  });
  expect(put.ok()).toBe(true);
  await openLab(page);
  if (!(await page.locator('#filebrowser').isVisible())) {
    await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click();
  }
  const item = page.locator('.jp-DirListing-item[data-file-type="python"]', { hasText: 'hello_slurm.py' });
  await item.click({ button: 'right' });
  await page.locator('.lm-Menu-itemLabel', { hasText: 'Run with torchrun…' }).click();
  const dialog = page.locator('.jp-Dialog');
  await dialog.locator('input[name="nproc"]').fill('2');
  await dialog.locator('.gpudojo-run-where input[data-engine="slurm"]').check();
  // Out of bounds: the field says so and Start waits (the dialog refuses invalid inputs).
  const start = dialog.locator('button', { hasText: 'Start' });
  await dialog.locator('input[name="where-nodes"]').fill('0');
  await expect(dialog.locator('.gpudojo-field-error[data-for="where.nodes"]')).toHaveText('0 is below the minimum, 1');
  await expect(start).toBeDisabled();
  await dialog.locator('input[name="where-nodes"]').fill('1');
  // A name Slurm would refuse sends nothing: the dialog comes back saying which field.
  await dialog.locator('input[name="where-partition"]').fill('my queue');
  await start.click();
  await expect(dialog.locator('.gpudojo-script-form > .gpudojo-field-error')).toHaveText(
    "Where: partition: expected letters, digits, '_', '.' and '-' only"
  );
  await expect(dialog.locator('.gpudojo-run-where input[data-engine="slurm"]')).toBeChecked();
  await dialog.locator('input[name="where-partition"]').fill('');
  await start.click();

  const view = page.locator('.gpudojo-run-view:visible');
  await expect(view.locator('.gpudojo-run-engine-job')).toHaveText(/^Slurm job \d+/, { timeout: 60_000 });
  await expect(view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });
  await expect(view.locator('.gpudojo-run-title')).toHaveText('hello_slurm.py');
  await view.locator('.gpudojo-log-tab[data-rank="1"]').click();
  await expect(view.locator('.gpudojo-log-line[data-rank="1"]', { hasText: 'hello from rank 1 of 2' })).toBeVisible();
});
