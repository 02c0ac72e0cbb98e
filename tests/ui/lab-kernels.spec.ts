import { expect, test } from '@playwright/test';
import { TOKEN, keepScreenshot, openLab, openSidebar } from './helpers';

const LAB = 'lab-01-cuda-hello';
const LAB_TITLE = 'CUDA hello world and device introspection';
const PLAYGROUND_ID = `gpudojo-kernel-playground-kernels-${LAB}`;
const NUMBA_BLOCK_SUM = 'Sum of a vector with shared memory and barriers (numba, runs in the simulator)';

test("a learner opens lab 1's kernels from the course, sees the first compiled, and runs the numba block sum in the simulator", async ({
  page
}) => {
  await openLab(page);
  const panel = await openSidebar(page);
  const labItem = panel.locator(`#gpudojo-course-section .gpudojo-course-item[data-kind="lab"][data-id="${LAB}"]`);
  await expect(labItem).toHaveClass(/gpudojo-mod-clickable/);
  await expect(labItem).toHaveAttribute('role', 'button');

  // The lab's Kernels button opens its own playground tab, with the lab's first example loaded
  // (the row itself opens the lab's README).
  await labItem.locator('.gpudojo-open-kernels').click();
  const playground = page.locator(`#${PLAYGROUND_ID}`);
  await expect(playground.locator('.gpudojo-playground')).toBeVisible();
  // The main area's tab (not the playground's own output tabs).
  const tabs = page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: `Kernels: ${LAB}` });
  await expect(tabs).toHaveCount(1);
  await expect(tabs).toHaveAttribute('data-id', PLAYGROUND_ID);
  await expect(tabs).toHaveClass(/lm-mod-current/);
  const examples = playground.locator('.gpudojo-examples');
  await expect(examples.locator('option').first()).toHaveText(`Examples from ${LAB_TITLE}…`);
  await expect(examples.locator('option[data-index]')).toHaveCount(6);
  await expect(examples).toBeEnabled();

  const status = playground.locator('.gpudojo-compile-status');
  const editor = playground.locator('.cm-content');
  const run = playground.locator('.gpudojo-run-panel');
  await expect(playground.locator('.gpudojo-language')).toHaveValue('cuda');
  await expect(editor).toContainText('vector_add');
  await expect(run.locator('.gpudojo-run-kernel')).toHaveValue('vector_add');
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 90_000 });
  await playground.locator('.gpudojo-playground-outputs .lm-TabBar-tab', { hasText: 'Resources' }).click();
  await expect(playground.locator('.gpudojo-resources tr[data-kernel="vector_add"]')).toBeVisible();

  // The numba block sum: language, source and launch all come with it, and it passes in the simulator.
  await examples.selectOption({ label: NUMBA_BLOCK_SUM });
  await expect(playground.locator('.gpudojo-language')).toHaveValue('numba');
  await expect(editor).toContainText('def block_sum');
  await expect(run.locator('.gpudojo-run-kernel')).toHaveValue('block_sum');
  await expect(run.locator('.gpudojo-run-args')).toHaveValue(/"name": "total"/);
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 90_000 });
  await run.locator('.gpudojo-run').click();
  const mode = run.locator('.gpudojo-run-mode');
  await expect(mode).toHaveAttribute('data-mode', 'simulator', { timeout: 90_000 });
  await expect(run.locator('.gpudojo-run-result')).toHaveAttribute('data-status', 'passed');
  await expect(run.locator('.gpudojo-run-checks tr[data-name="total"]')).toHaveAttribute('data-ok', 'true');
  await keepScreenshot(page, 'lab-kernels.png');

  // Once the learner has edited the numba source, loading another numba example asks first.
  await editor.locator('.cm-line').last().click();
  await page.keyboard.press('End');
  await page.keyboard.insertText('\n# my note');
  await expect(editor).toContainText('# my note');
  const vectorAdd = 'Vector add, one thread per element (numba, runs in the simulator)';
  await examples.selectOption({ label: vectorAdd });
  const dialog = page.locator('.jp-Dialog', { hasText: 'Replace your kernel?' });
  await expect(dialog).toBeVisible();
  await dialog.locator('button', { hasText: 'Keep my code' }).click();
  await expect(dialog).toHaveCount(0);
  await expect(editor).toContainText('# my note');
  await expect(run.locator('.gpudojo-run-kernel')).toHaveValue('block_sum');
  await examples.selectOption({ label: vectorAdd });
  await dialog.locator('button', { hasText: 'Replace' }).click();
  await expect(editor).not.toContainText('# my note');
  await expect(run.locator('.gpudojo-run-grid')).toHaveValue('16');

  // Opening the lab's kernels again reveals the same tab as it is.
  await labItem.locator('.gpudojo-open-kernels').click();
  await expect(tabs).toHaveCount(1);
  await expect(tabs).toHaveClass(/lm-mod-current/);
  await expect(run.locator('.gpudojo-run-grid')).toHaveValue('16');

  // A lesson's Related link to the lab opens its README, and from there the same playground.
  await panel.locator('#gpudojo-course-section .gpudojo-course-item[data-id="gpu-intro"]').click();
  const related = page.locator(`#gpudojo-lesson-gpu-intro .gpudojo-lesson-related li[data-kind="lab"][data-id="${LAB}"] a`);
  await expect(related).toBeVisible();
  await expect(tabs).not.toHaveClass(/lm-mod-current/);
  await related.click();
  await page.locator(`#gpudojo-lab-readme-${LAB} .gpudojo-open-kernels`).click();
  await expect(tabs).toHaveClass(/lm-mod-current/);
  await expect(tabs).toHaveCount(1);

  // A reload reopens the lab's playground with the learner's code, not the first example, and its menu.
  // The playground's state is saved to the workspace a moment after the last change.
  const saved = async () => {
    const workspace = await (await page.request.get(`/lab/api/workspaces/default?token=${TOKEN}`)).json();
    const args = workspace.data[`gpudojo-kernel-playground:${PLAYGROUND_ID}`]?.data ?? {};
    return { lab: args.lab, vectorAdd: String(args.source ?? '').includes('def vector_add') };
  };
  await expect.poll(saved, { timeout: 20_000 }).toEqual({ lab: LAB, vectorAdd: true });
  await page.goto(`/lab?token=${TOKEN}`);
  const restored = page.locator(`#${PLAYGROUND_ID}`);
  await expect(restored.locator('.gpudojo-language')).toHaveValue('numba', { timeout: 60_000 });
  await expect(restored.locator('.cm-content')).toContainText('def vector_add');
  await expect(restored.locator('.gpudojo-examples option[data-index]')).toHaveCount(6);
  await expect(restored.locator('.gpudojo-examples option').first()).toHaveText(`Examples from ${LAB_TITLE}…`);
});
