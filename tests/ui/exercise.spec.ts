import { expect, test } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import { TOKEN, keepScreenshot, openLab, openSidebar } from './helpers';

const EXERCISE = 'cuda-kernel';
const FOLDER = path.resolve(__dirname, '..', '..', 'content', 'exercises', EXERCISE);

/** The files of a folder, relative to it (the solution's files replace the learner's). */
function files(dir: string, prefix = ''): string[] {
  return fs.readdirSync(path.join(dir, prefix), { withFileTypes: true }).flatMap(e =>
    e.isDirectory() ? files(dir, path.join(prefix, e.name)) : [path.join(prefix, e.name)]
  );
}

test('a learner starts exercise 2, checks the starter, fixes it and completes the exercise', async ({ page }) => {
  test.setTimeout(360_000);
  await openLab(page);
  const panel = await openSidebar(page);
  const row = panel.locator(`#gpudojo-course-section .gpudojo-course-item[data-kind="exercise"][data-id="${EXERCISE}"]`);
  await expect(row).toBeVisible();
  await expect(row).toHaveAttribute('data-status', 'not_started');
  await expect(panel.locator('.gpudojo-course-item[data-kind="exercise"]')).toHaveCount(11);

  // The exercise view: README, requirements not checked yet, the CPU variant label.
  await row.click();
  const view = page.locator(`#gpudojo-exercise-${EXERCISE}`);
  await expect(view).toBeVisible();
  await expect(view.locator('.gpudojo-exercise-mode')).toHaveAttribute('data-mode', 'cpu');
  await expect(view.locator('.gpudojo-exercise-mode')).toContainText('CPU variant');
  await expect(view.locator('.gpudojo-exercise-mode')).toContainText('cannot show');
  await expect(view.locator('.gpudojo-exercise-readme h1, .gpudojo-exercise-readme h2').first()).toBeVisible();
  const requirements = view.locator('.gpudojo-exercise-requirement');
  const total = await requirements.count();
  expect(total).toBeGreaterThanOrEqual(4);
  await expect(view.locator('.gpudojo-exercise-requirement[data-outcome="pending"]')).toHaveCount(total);

  // Start: the starters are copied and the main starter opens in an editor.
  const manifest = fs.readFileSync(path.join(FOLDER, 'exercise.toml'), 'utf-8');
  const main = /^main\s*=\s*"([^"]+)"/m.exec(manifest)![1];
  await view.locator('button[data-action="start"]').click();
  await expect(page.locator('#jp-main-dock-panel .lm-TabBar-tab', { hasText: path.basename(main) })).toBeVisible();
  await expect(row).toHaveAttribute('data-status', 'in_progress');

  // Check the untouched starter: failures with their reasons.
  await page.locator(`.lm-TabBar-tab[data-id="gpudojo-exercise-${EXERCISE}"]`).click();
  await view.locator('button[data-action="check"]').click();
  await expect(view.locator('.gpudojo-exercise-status')).toHaveAttribute('data-state', 'running');
  await expect(view.locator('.gpudojo-exercise-status')).toHaveAttribute('data-state', 'done', { timeout: 240_000 });
  const failed = view.locator('.gpudojo-exercise-requirement[data-outcome="failed"]');
  expect(await failed.count()).toBeGreaterThanOrEqual(1);
  await expect(failed.first().locator('.gpudojo-exercise-reason')).not.toBeEmpty();
  await expect(view.locator('.gpudojo-exercise-attempts li')).toHaveCount(1);
  await keepScreenshot(page, 'exercise-starter-checked.png');

  // Replace the starter with our solution (as a learner pasting it would), check again.
  for (const file of files(path.join(FOLDER, 'solution'))) {
    const put = await page.request.put(`/api/contents/gpudojo-exercises/${EXERCISE}/${file}?token=${TOKEN}`, {
      data: { type: 'file', format: 'text', content: fs.readFileSync(path.join(FOLDER, 'solution', file), 'utf-8') }
    });
    expect(put.ok()).toBe(true);
  }
  await view.locator('button[data-action="check"]').click();
  await expect(view.locator('.gpudojo-exercise-status')).toHaveAttribute('data-state', 'running');
  await expect(view.locator('.gpudojo-exercise-status')).toHaveAttribute('data-state', 'done', { timeout: 240_000 });
  await expect(view.locator('.gpudojo-exercise-requirement[data-outcome="failed"]')).toHaveCount(0);
  const passed = await view.locator('.gpudojo-exercise-requirement[data-outcome="passed"]').count();
  const skipped = await view.locator('.gpudojo-exercise-requirement[data-outcome="skipped"]').count();
  expect(passed).toBeGreaterThanOrEqual(1);
  expect(passed + skipped).toBe(total);
  await expect(view.locator('.gpudojo-exercise-status')).toContainText('Completed');
  await expect(view.locator('.gpudojo-exercise-attempts li')).toHaveCount(2);
  await expect(row).toHaveAttribute('data-status', 'completed');
  await keepScreenshot(page, 'exercise-completed.png');
});
