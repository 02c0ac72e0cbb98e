import { Locator, Page, expect, test } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';
import { TOKEN, keepScreenshot, openLab, openSidebar } from './helpers';

const EXERCISE = 'cuda-kernel';
const FOLDER = path.resolve(__dirname, '..', '..', 'content', 'exercises', EXERCISE);

/** The files the manifest's requirements name (`files = [...]`), in order, without repeats. */
function namedFiles(manifest: string): string[] {
  const out: string[] = [];
  for (const m of manifest.matchAll(/^files\s*=\s*\[([^\]]*)\]/gm)) {
    for (const f of m[1].matchAll(/"([^"]+)"/g)) {
      if (!out.includes(f[1])) {
        out.push(f[1]);
      }
    }
  }
  return out;
}

/** The main-area tab of a file, by its name. */
function fileTab(page: Page, name: string) {
  return page.locator('#jp-main-dock-panel .lm-TabBar-tab', { has: page.locator('.lm-TabBar-tabLabel', { hasText: new RegExp(`^${name.replace('.', '\\.')}$`) }) });
}

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

  // Start: the starters are copied and every file the requirements name opens, the main one in front.
  const manifest = fs.readFileSync(path.join(FOLDER, 'exercise.toml'), 'utf-8');
  const main = /^main\s*=\s*"([^"]+)"/m.exec(manifest)![1];
  const named = namedFiles(manifest);
  expect(named).toEqual(expect.arrayContaining(['kernel.cu', 'ops.py', 'kernel_numba.py']));
  await view.locator('button[data-action="start"]').click();
  for (const name of named) {
    await expect(fileTab(page, name)).toBeVisible();
  }
  await expect(fileTab(page, path.basename(main))).toHaveClass(/lm-mod-current/);
  await expect(row).toHaveAttribute('data-status', 'in_progress');
  // The exercise view lists the copy's files, each one click away.
  await expect(view.locator('.gpudojo-exercise-files button[data-file="ops.py"]')).toHaveCount(1);

  // kernel.cu: highlighted as CUDA C++, compiled as it is edited, labelled with the mode.
  const cu = page.locator('.jp-MainAreaWidget.gpudojo-cuda-file:visible');
  await expect(cu).toBeVisible();
  await expect(cu.locator('.cm-content .cm-line span').first()).toBeVisible();
  await expect(page.locator('#jp-main-statusbar')).toContainText('CUDA');
  const bar = cu.locator('.gpudojo-file-compile');
  await expect(bar.locator('.gpudojo-file-mode')).toHaveText('CPU emulation');
  await expect(bar.locator('.gpudojo-file-compile-detail')).toContainText('NVRTC');
  await expect(bar.locator('.gpudojo-compile-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await expect(bar.locator('.gpudojo-file-kernel[data-kernel="fused_bias_gelu"]')).toContainText('registers');

  // An error is marked on its line, with the compiler's words under the status; fixing it clears the mark.
  const starter = fs.readFileSync(path.join(FOLDER, 'starters', main), 'utf-8');
  const lastLine = starter.split('\n').length;
  await cu.locator('.cm-content').click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type('int broken = undefined_name;');
  const marked = cu.locator(`.cm-line.gpudojo-diag-error[data-diag-line="${lastLine}"]`);
  await expect(marked).toBeVisible({ timeout: 60_000 });
  await expect(bar.locator('.gpudojo-compile-status')).toHaveAttribute('data-state', 'error');
  await expect(bar.locator(`.gpudojo-diagnostic[data-line="${lastLine}"]`, { hasText: 'undefined_name' })).toBeVisible();
  await expect(bar.locator('.gpudojo-file-kernel')).toHaveCount(0);
  // The bar takes the height its lines need above the text (not squeezed to nothing by the layout).
  const box = await bar.boundingBox();
  expect(box!.height).toBeGreaterThan(40);
  await keepScreenshot(page, 'exercise-kernel-cu-error-marked.png');
  await page.keyboard.press('Shift+Home');
  await page.keyboard.press('Delete');
  await expect(bar.locator('.gpudojo-compile-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await expect(cu.locator('.cm-line.gpudojo-diag-error')).toHaveCount(0);
  await expect(bar.locator('.gpudojo-file-kernel[data-kernel="fused_bias_gelu"]')).toContainText('registers');
  await page.keyboard.press('Control+s');

  // "Open in Kernel Playground" on kernel.cu in the file browser: the playground, linked to the file.
  await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click();
  const listing = page.locator('#filebrowser .jp-DirListing-content');
  for (const folder of ['gpudojo-exercises', EXERCISE]) {
    await listing
      .locator('.jp-DirListing-item', { has: page.locator('.jp-DirListing-itemText', { hasText: new RegExp(`^${folder}$`) }) })
      .dblclick();
  }
  const cuItem = listing.locator('.jp-DirListing-item[data-file-type="cuda"]', { hasText: main });
  await cuItem.click({ button: 'right' });
  await page.locator('.lm-Menu-itemLabel', { hasText: /^Open in Kernel Playground$/ }).click();
  const playground = page.locator('#gpudojo-kernel-playground-file-gpudojo-exercises-cuda-kernel-kernel-cu');
  await expect(playground).toBeVisible();
  await expect(playground.locator('.gpudojo-playground-file')).toContainText(`gpudojo-exercises/${EXERCISE}/${main}`);
  await expect(playground.locator('.gpudojo-playground-file-state')).toHaveText('Saved');
  await expect(playground.locator('.gpudojo-source .cm-content')).toContainText('fused_bias_gelu');
  await expect(playground.locator('.gpudojo-compile-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await playground.locator('.lm-TabBar-tab', { hasText: 'Resources' }).click();
  await expect(playground.locator('.gpudojo-resources-table tr[data-kernel="fused_bias_gelu"]')).toBeVisible();
  await expect(playground.locator('input.gpudojo-run-kernel')).toHaveValue('fused_bias_gelu');
  await keepScreenshot(page, 'exercise-in-playground.png');
  // An edit there is unsaved until Save writes it back to kernel.cu.
  await playground.locator('.gpudojo-source .cm-content').click();
  await page.keyboard.press('Control+Home');
  await page.keyboard.type('// tried in the playground\n');
  await expect(playground.locator('.gpudojo-playground-file-state')).toHaveText('Unsaved changes');
  await playground.locator('.gpudojo-playground-save').click();
  await expect(playground.locator('.gpudojo-playground-file-state')).toHaveText('Saved');
  const saved = await page.request.get(`/api/contents/gpudojo-exercises/${EXERCISE}/${main}?token=${TOKEN}&content=1`);
  expect((await saved.json()).content).toContain('// tried in the playground');

  // Editor -> playground: what the learner types in kernel.cu reaches the playground as typed.
  const playgroundTab = page.locator('.lm-TabBar-tab[data-id="gpudojo-kernel-playground-file-gpudojo-exercises-cuda-kernel-kernel-cu"]');
  const fileState = playground.locator('.gpudojo-playground-file-state');
  const typeAtTop = async (where: Locator, text: string) => {
    await where.locator('.cm-content').click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.type(text);
  };
  await fileTab(page, main).click();
  await typeAtTop(cu, '// typed in the editor\n');
  await playgroundTab.click();
  await expect(playground.locator('.gpudojo-source .cm-content')).toContainText('// typed in the editor');
  await expect(fileState).toHaveText('Follows its editor (not saved there)');
  // The exercise in the playground, for the README and the before/after.
  await page.screenshot({ path: path.resolve(__dirname, '..', '..', 'docs', 'exercise-in-playground.png') });
  // Both changed: the playground keeps its own edit and offers the editor's text.
  await typeAtTop(playground.locator('.gpudojo-source'), '// mine\n');
  await expect(fileState).toHaveText('Unsaved changes');
  await fileTab(page, main).click();
  await typeAtTop(cu, '// theirs\n');
  await playgroundTab.click();
  await expect(fileState).toHaveText('Unsaved changes; its editor changed too');
  await expect(playground.locator('.gpudojo-source .cm-content')).toContainText('// mine');
  await playground.locator('.gpudojo-playground-take').click();
  await expect(playground.locator('.gpudojo-source .cm-content')).not.toContainText('// mine');
  await expect(playground.locator('.gpudojo-source .cm-content')).toContainText('// theirs');
  await expect(playground.locator('.gpudojo-playground-take')).toBeHidden();
  await playground.locator('.gpudojo-playground-save').click();
  await expect(fileState).toHaveText('Saved');
  const synced = await page.request.get(`/api/contents/gpudojo-exercises/${EXERCISE}/${main}?token=${TOKEN}&content=1`);
  expect((await synced.json()).content).toMatch(/^\/\/ theirs\n\/\/ typed in the editor\n/);

  // Check the untouched starter: failures with their reasons.
  await page.locator(`.lm-TabBar-tab[data-id="gpudojo-exercise-${EXERCISE}"]`).click();
  await view.locator('button[data-action="check"]').click();
  await expect(view.locator('.gpudojo-exercise-status')).toHaveAttribute('data-state', 'running');
  await expect(view.locator('.gpudojo-exercise-status')).toHaveAttribute('data-state', 'done', { timeout: 240_000 });
  const failed = view.locator('.gpudojo-exercise-requirement[data-outcome="failed"]');
  expect(await failed.count()).toBeGreaterThanOrEqual(1);
  await expect(failed.first().locator('.gpudojo-exercise-reason')).not.toBeEmpty();
  await expect(view.locator('.gpudojo-exercise-attempts li')).toHaveCount(1);
  // Each failure links to the file it is about; a click opens it.
  await expect(failed.first().locator('.gpudojo-exercise-fix-in button[data-file]').first()).toBeVisible();
  const launch = view.locator('.gpudojo-exercise-requirement[data-id="launch-config"][data-outcome="failed"]');
  await expect(launch.locator('.gpudojo-exercise-fix-in button[data-file="ops.py"]')).toBeVisible();
  await expect(
    view.locator('.gpudojo-exercise-requirement[data-id="bounds-check"] .gpudojo-exercise-fix-in button[data-file="kernel_numba.py"]')
  ).toBeVisible();
  await keepScreenshot(page, 'exercise-starter-checked.png');
  await launch.locator('.gpudojo-exercise-fix-in button[data-file="ops.py"]').click();
  await expect(fileTab(page, 'ops.py')).toHaveClass(/lm-mod-current/);
  await page.locator(`.lm-TabBar-tab[data-id="gpudojo-exercise-${EXERCISE}"]`).click();

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
