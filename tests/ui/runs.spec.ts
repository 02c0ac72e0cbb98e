import { Locator, Page, expect, test } from '@playwright/test';
import { TOKEN, keepScreenshot, openLab, openSidebar, startScriptRun } from './helpers';

const LAB = 'lab-03-ddp';
/** A 2-process gloo run takes about 10 s on two cores; a sweep runs its members one after another. */
const RUN_TIMEOUT = 150_000;

/** Open lab 3's run form from its Run button in the Course section (the item's own click stays the playground's). */
async function openRunForm(page: Page): Promise<Locator> {
  const panel = await openSidebar(page);
  const button = panel.locator(`#gpudojo-course-section .gpudojo-run-lab[data-lab="${LAB}"]`);
  await expect(button).toBeVisible({ timeout: 30_000 });
  await button.click();
  const form = page.locator(`#gpudojo-run-form-${LAB} .gpudojo-run-form`);
  await expect(form).toBeVisible();
  return form;
}

/** Press Start and return the run view the form opened (the form closes: the view's tab has the id). */
async function startRun(page: Page, form: Locator): Promise<{ id: string; view: Locator }> {
  await form.locator('.gpudojo-run-start').click();
  await expect(form).toHaveCount(0, { timeout: 30_000 });
  const shown = page.locator('.gpudojo-run-view:visible');
  await expect(shown).toBeVisible();
  const tab = await shown.evaluate(node => node.closest('[id^="gpudojo-run-"]')?.id ?? '');
  const id = /^gpudojo-run-(\d{8}-\d{6}-[0-9a-f]{6})$/.exec(tab)![1];
  const view = page.locator(`#gpudojo-run-${id} .gpudojo-run-view`);
  await expect(view).toBeVisible();
  return { id, view };
}

test('a learner runs the DDP lab on two CPU ranks, sweeps nproc and reads a crashed rank’s root cause', async ({
  page
}) => {
  test.setTimeout(600_000);
  await openLab(page);
  const form = await openRunForm(page);

  // The form is the manifest's: typed inputs with bounds and help; mistakes show at their field.
  const nproc = form.locator('input[name="nproc"]');
  await expect(nproc).toHaveAttribute('type', 'number');
  await expect(nproc).toHaveAttribute('max', '8');
  await expect(form.locator('input[name="use_sampler"]')).toBeChecked();
  await nproc.fill('9');
  await expect(form.locator('.gpudojo-field-error[data-for="nproc"]')).toHaveText('9 is above the maximum, 8');
  await nproc.fill('2');
  await expect(form.locator('.gpudojo-field-error[data-for="nproc"]')).toHaveText('');
  await form.locator('input[name="epochs"]').fill('1');

  const { id, view } = await startRun(page, form);
  await expect(view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });
  await expect(view.locator('.gpudojo-run-status')).toHaveText('Succeeded');
  // Without a GPU the run says so: CPU processes talking through gloo.
  await expect(view.locator('.gpudojo-run-mode')).toHaveText('CPU · gloo');
  await expect(view.locator('.gpudojo-run-mode')).toHaveAttribute('data-mode', 'cpu');
  await expect(view.locator('.gpudojo-run-mode-note')).toContainText('gloo');
  await expect(view.locator('.gpudojo-run-command')).toContainText('--nproc-per-node 2');
  await expect(view.locator('.gpudojo-run-command')).toContainText('--epochs 1');
  await expect(view.locator('.gpudojo-run-cancel')).toBeHidden();
  await expect(view.locator('.gpudojo-run-rerun')).toBeEnabled();

  // One log tab per rank and one for torchrun, each with its own lines.
  for (const rank of ['0', '1']) {
    const tab = view.locator(`.gpudojo-log-tab[data-rank="${rank}"]`);
    await tab.click();
    await expect(tab).toHaveAttribute('aria-selected', 'true');
    await expect(view.locator(`.gpudojo-log-view .gpudojo-log-line[data-rank="${rank}"]`).first()).toBeVisible();
    await expect(view.locator('.gpudojo-log-view .gpudojo-log-line:visible:not([data-rank="' + rank + '"])')).toHaveCount(0);
  }
  await view.locator('.gpudojo-log-tab[data-rank="all"]').click();
  await expect(view.locator('.gpudojo-log-line[data-rank="0"]').first()).toBeVisible();

  // The loss is charted per rank, and the lab's checks are ticked.
  const loss = view.locator('.gpudojo-run-chart[data-metric="loss"]');
  await expect(loss).toBeVisible();
  await expect.poll(async () => Number(await loss.getAttribute('data-points'))).toBeGreaterThan(4);
  await expect(loss.locator('.u-legend')).toContainText('rank 1');
  for (const check of ['loss-decreases', 'ranks-in-sync', 'succeeded']) {
    await expect(view.locator(`.gpudojo-run-checks li[data-check="${check}"]`)).toHaveAttribute('data-ok', 'true');
  }
  await keepScreenshot(page, 'run-view.png');

  // The Runs section lists it, newest first; a row opens its view.
  const rows = page.locator('#gpudojo-runs-list .gpudojo-run-row');
  await expect(rows.first()).toHaveAttribute('data-run', id, { timeout: 30_000 });
  await expect(rows.first()).toHaveAttribute('data-status', 'succeeded');

  // A sweep over nproc: the scaling view fills in as each run reports its epoch times.
  const sweepForm = await openRunForm(page);
  await sweepForm.locator('input[name="sweep-enabled"]').check();
  await sweepForm.locator('select[name="sweep-param"]').selectOption('nproc');
  await expect(sweepForm.locator('input[name="nproc"]')).toBeDisabled();
  await sweepForm.locator('input[name="sweep-values"]').fill('1, 2');
  await expect(sweepForm.locator('.gpudojo-run-start')).toHaveText('Start 2 runs');
  await sweepForm.locator('.gpudojo-run-start').click();
  const sweep = page.locator('.gpudojo-sweep-view[data-group]:visible');
  await expect(sweep).toBeVisible({ timeout: 30_000 });
  const points = sweep.locator('.gpudojo-scaling-table tr[data-value]');
  await expect(points).toHaveCount(2);
  await expect(points.nth(0)).toHaveAttribute('data-value', '1');
  await expect(points.nth(1)).toHaveAttribute('data-status', 'succeeded', { timeout: 2 * RUN_TIMEOUT });
  await expect(points.nth(0)).toHaveAttribute('data-status', 'succeeded');
  const chart = sweep.locator('.gpudojo-scaling-chart');
  await expect(chart).toHaveAttribute('data-measured', '2', { timeout: 30_000 });
  await expect(sweep).toHaveAttribute('data-mode', 'cpu');
  await expect(chart).toContainText('CPU · gloo');
  await expect(points.nth(0).locator('.gpudojo-scaling-efficiency')).toHaveText('100 %');
  await expect(points.nth(1).locator('.gpudojo-scaling-efficiency')).toHaveText(/^\d+ %$/);
  await keepScreenshot(page, 'sweep-view.png');

  // Rank 1 crashes at step 3: the root cause comes first and names it.
  const crashForm = await openRunForm(page);
  await crashForm.locator('input[name="sweep-enabled"]').uncheck();
  await crashForm.locator('input[name="nproc"]').fill('2');
  await crashForm.locator('input[name="crash_rank"]').fill('1');
  const crashed = await startRun(page, crashForm);
  await expect(crashed.view).toHaveAttribute('data-status', 'failed', { timeout: RUN_TIMEOUT });
  const cause = crashed.view.locator('.gpudojo-root-cause');
  await expect(cause).toHaveAttribute('data-rank', '1');
  await expect(cause.locator('.gpudojo-root-cause-headline')).toHaveText(/^Rank 1 failed: RuntimeError/);
  await expect(cause.locator(':scope > .gpudojo-root-cause-traceback')).toContainText('Traceback (most recent call last)');
  await expect(crashed.view.locator('.gpudojo-run-checks li[data-check="succeeded"]')).toHaveAttribute('data-ok', 'false');
  await keepScreenshot(page, 'run-view-failed.png');

  // A reload reopens the run views that were open.
  await page.goto(`/lab?token=${TOKEN}`);
  await expect(page.locator(`#gpudojo-run-${crashed.id} .gpudojo-run-view`)).toHaveAttribute('data-status', 'failed', {
    timeout: 60_000
  });
});

test('a learner runs their own script with torchrun from the file browser', async ({ page }) => {
  test.setTimeout(300_000);
  const script = 'import os\nprint(f"hello from rank {os.environ[\'RANK\']} of {os.environ[\'WORLD_SIZE\']}")\n';
  const put = await page.request.put(`/api/contents/hello_ranks.py?token=${TOKEN}`, {
    data: { type: 'file', format: 'text', content: script }
  });
  expect(put.ok()).toBe(true);
  await openLab(page);
  // The file browser is open on a fresh workspace; a click on its tab would close it.
  if (!(await page.locator('#filebrowser').isVisible())) {
    await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click();
  }
  const item = page.locator('.jp-DirListing-item[data-file-type="python"]', { hasText: 'hello_ranks.py' });
  await item.click({ button: 'right' });
  await page.locator('.lm-Menu-itemLabel', { hasText: 'Run with torchrun…' }).click();
  const dialog = page.locator('.jp-Dialog');
  await dialog.locator('input[name="nproc"]').fill('2');
  await dialog.locator('input[name="args"]').fill('--greeting "hi there"');
  await dialog.locator('button', { hasText: 'Start' }).click();
  const view = page.locator('.gpudojo-run-view:visible');
  await expect(view).toHaveAttribute('data-status', 'succeeded', { timeout: RUN_TIMEOUT });
  await expect(view.locator('.gpudojo-run-title')).toHaveText('hello_ranks.py');
  await expect(view.locator('.gpudojo-run-command')).toContainText("'hi there'");
  await view.locator('.gpudojo-log-tab[data-rank="1"]').click();
  await expect(view.locator('.gpudojo-log-line[data-rank="1"]', { hasText: 'hello from rank 1 of 2' })).toBeVisible();
  await expect(view.locator('.gpudojo-run-checks-section')).toBeHidden();
});

test('a learner cancels a running script, and Re-run starts it again', async ({ page }) => {
  test.setTimeout(300_000);
  const script = 'import time\nprint("sleeping", flush=True)\ntime.sleep(120)\n';
  const id = await startScriptRun(page, 'sleepy.py', script, { args: ['--quiet'], launcher: 'torchrun' });

  await openLab(page);
  const panel = await openSidebar(page);
  await panel.locator(`#gpudojo-runs-list .gpudojo-run-row[data-run="${id}"]`).click();
  const view = page.locator(`#gpudojo-run-${id} .gpudojo-run-view`);
  await expect(view).toHaveAttribute('data-status', 'running', { timeout: 60_000 });
  await expect(view.locator('.gpudojo-log-line', { hasText: 'sleeping' })).toBeVisible({ timeout: 60_000 });
  // The duration ticks while it runs.
  const duration = view.locator('.gpudojo-run-duration');
  const before = await duration.textContent();
  await expect(duration).not.toHaveText(before ?? '', { timeout: 5_000 });

  await view.locator('.gpudojo-run-cancel').click();
  await expect(view).toHaveAttribute('data-status', 'cancelled', { timeout: 60_000 });
  await expect(view.locator('.gpudojo-run-cancel')).toBeHidden();

  // Re-run opens a new view of the same script with the same arguments.
  await view.locator('.gpudojo-run-rerun').click();
  const shown = page.locator('.gpudojo-run-panel:visible');
  await expect(shown).not.toHaveAttribute('id', `gpudojo-run-${id}`, { timeout: 30_000 });
  const again = page.locator(`#${await shown.getAttribute('id')} .gpudojo-run-view`);
  await expect(again.locator('.gpudojo-run-title')).toHaveText('sleepy.py');
  await expect(again.locator('.gpudojo-run-command')).toContainText('sleepy.py --quiet');
  await expect(again).toHaveAttribute('data-status', /queued|running/);
  await again.locator('.gpudojo-run-cancel').click();
  await expect(again).toHaveAttribute('data-status', 'cancelled', { timeout: 60_000 });
});
