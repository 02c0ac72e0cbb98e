import { Page, expect, test } from '@playwright/test';
import { TOKEN, chooseTheme, keepScreenshot, openLab, runFromPalette } from './helpers';

/** A kernel with an undeclared identifier on line 3. */
const BROKEN = `extern "C" __global__ void scale(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + undeclared_offset;
    if (i < n) {
        x[i] = 2.0f * x[i];
    }
}
`;

const FIXED = BROKEN.replace(' + undeclared_offset', '');

/** numba vector add writing one element past its thread's: the last thread writes out of bounds (line 7). */
const OUT_OF_BOUNDS = `from numba import cuda


@cuda.jit
def vector_add(a, b, c):
    i = cuda.grid(1)
    c[i + 1] = a[i] + b[i]
`;

/** Replace the whole editor text, as a paste does (no auto-indent or bracket closing). */
async function replaceSource(page: Page, text: string): Promise<void> {
  const content = page.locator('#gpudojo-kernel-playground .cm-content');
  await content.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(text);
}

async function openTab(page: Page, label: string): Promise<void> {
  await page
    .locator('#gpudojo-kernel-playground .gpudojo-playground-outputs .lm-TabBar-tab', { hasText: label })
    .click();
}

test('a learner fixes a CUDA kernel, reads its PTX, SASS and occupancy, and runs a numba kernel in the simulator', async ({
  page
}) => {
  await openLab(page);
  await runFromPalette(page, 'Open Kernel Playground');
  const playground = page.locator('#gpudojo-kernel-playground');
  await expect(playground.locator('.gpudojo-playground')).toBeVisible();
  const status = playground.locator('.gpudojo-compile-status');
  const editor = playground.locator('.cm-content');

  // The starter compiles for an architecture from the server's list.
  await expect(playground.locator('.gpudojo-arch option').first()).toHaveText(/^sm_\d+ · \w+/);
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 90_000 });
  await expect(editor).toContainText('saxpy');

  // An undeclared identifier on line 3: the line is marked in the editor and listed under it.
  await replaceSource(page, BROKEN);
  await expect(editor.locator('[data-diag-line="3"]')).toBeVisible({ timeout: 30_000 });
  await expect(editor.locator('[data-diag-line="3"] .gpudojo-diag-underline')).toHaveText('undeclared_offset');
  await expect(status).toHaveAttribute('data-state', 'error');
  await expect(status).toContainText('1 error');
  const listed = playground.locator('.gpudojo-diagnostics li[data-line="3"]');
  await expect(listed).toContainText('undeclared_offset');

  // Fixed: the mark goes and the compile is ok.
  await replaceSource(page, FIXED);
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 30_000 });
  await expect(editor.locator('[data-diag-line]')).toHaveCount(0);
  await expect(playground.locator('.gpudojo-compiler')).toContainText('NVRTC');

  // PTX, and the PTX lines of the editor's current line.
  await openTab(page, 'PTX');
  const ptx = playground.locator('.gpudojo-ptx');
  await expect(ptx).toContainText('.visible .entry scale');
  await editor.locator('.cm-line').nth(4).click();
  await expect(ptx.locator('.gpudojo-asm-current').first()).toBeVisible();
  await expect(ptx.locator('.gpudojo-asm-current').first()).toHaveAttribute('data-src-line', '5');

  // SASS of the kernel, with instructions linked to source lines.
  await openTab(page, 'SASS');
  const sass = playground.locator('.gpudojo-sass');
  await expect(sass.locator('.gpudojo-asm-line').first()).toBeVisible();
  await expect(sass).toContainText(/EXIT|STG|LDG|FMUL/);
  await expect(sass.locator('.gpudojo-asm-current').first()).toBeVisible();
  // Clicking an instruction puts the editor on its source line.
  const linked = sass.locator('.gpudojo-asm-line[data-src-line]:not(.gpudojo-asm-current)').first();
  const sourceLine = Number(await linked.getAttribute('data-src-line'));
  await linked.click();
  await expect(editor.locator('.cm-line.gpudojo-linked-line')).toHaveCount(1);
  await expect(editor.locator('.cm-line').nth(sourceLine - 1)).toHaveClass(/gpudojo-linked-line/);
  await expect(sass.locator(`.gpudojo-asm-current[data-src-line="${sourceLine}"]`).first()).toBeVisible();

  // Resources: one row for the kernel.
  await openTab(page, 'Resources');
  await expect(playground.locator('.gpudojo-resources tr[data-kernel="scale"]')).toBeVisible();

  // Occupancy: the curve, and the figure in words at another block size.
  await openTab(page, 'Occupancy');
  const occupancy = playground.locator('.gpudojo-occupancy');
  await expect(occupancy.locator('canvas')).toBeVisible();
  await expect(occupancy.locator('.gpudojo-occupancy-summary')).toContainText(/\d+ warps of \d+ per SM \(\d+%\), limited by/);
  await occupancy.locator('.gpudojo-block-size').fill('1024');
  await occupancy.locator('.gpudojo-block-size').press('Enter');
  await expect(occupancy.locator('.gpudojo-occupancy-detail')).toContainText('of 1024 threads per SM');
  await keepScreenshot(page, 'kernel-playground-occupancy.png');

  // No GPU here: a CUDA C run of the kernel runs in the CPU emulator, and the page says so.
  const run = playground.locator('.gpudojo-run-panel');
  await run.locator('.gpudojo-run-kernel').fill('scale');
  await run
    .locator('.gpudojo-run-args')
    .fill('[{"kind": "array", "name": "x", "shape": [4096], "init": "arange", "output": true}, {"kind": "scalar", "name": "n", "value": 4096}]');
  await run.locator('.gpudojo-run-expected').fill('{"x": "2 * x"}');
  await run.locator('.gpudojo-run').click();
  await expect(run.locator('.gpudojo-run-mode')).toHaveAttribute('data-mode', 'cpu-emulation', { timeout: 60_000 });
  await expect(run.locator('.gpudojo-run-mode')).toHaveText("CPU emulation: results are exact, times are not a GPU's");

  // numba: the vector add runs in the simulator, and the page says so.
  await playground.locator('.gpudojo-language').selectOption('numba');
  await expect(editor).toContainText('vector_add');
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 90_000 });
  await expect(run.locator('.gpudojo-run-where')).toContainText('simulator');
  await run.locator('.gpudojo-run').click();
  const mode = run.locator('.gpudojo-run-mode');
  await expect(mode).toHaveAttribute('data-mode', 'simulator', { timeout: 90_000 });
  await expect(mode).toContainText('Simulator (numba CUDA simulator');
  await expect(run.locator('.gpudojo-run-result')).toHaveAttribute('data-status', 'passed');
  await expect(run.locator('.gpudojo-run-checks tr[data-name="c"]')).toHaveAttribute('data-ok', 'true');
  await openTab(page, 'SASS');
  await expect(playground.locator('.gpudojo-sass .gpudojo-asm-line').first()).toBeVisible();

  await keepScreenshot(page, 'kernel-playground.png');

  // An out-of-bounds write: the failing thread and block are named, and its line is marked.
  await replaceSource(page, OUT_OF_BOUNDS);
  await run.locator('.gpudojo-run').click();
  const failure = run.locator('.gpudojo-run-error[data-kind="out_of_bounds"]');
  await expect(failure).toBeVisible({ timeout: 90_000 });
  await expect(mode).toHaveAttribute('data-mode', 'simulator');
  await expect(failure.locator('.gpudojo-run-error-thread')).toHaveText('In thread (127, 0, 0) of block (7, 0, 0)');
  await expect(editor.locator('[data-diag-line="7"]')).toBeVisible();

  // The dark theme: light text on dark listings, from JupyterLab's variables.
  await chooseTheme(page, 'JupyterLab Dark');
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', 'false');
  const listing = playground.locator('.gpudojo-sass');
  const [text, background] = await listing.evaluate(el => {
    const luminance = (css: string) => {
      const [r, g, b] = css.match(/\d+/g)!.map(Number);
      return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
    };
    const style = getComputedStyle(el);
    return [luminance(style.color), luminance(style.backgroundColor)];
  });
  expect(text).toBeGreaterThan(0.5);
  expect(background).toBeLessThan(0.3);
  await expect(page.locator('#jupyterlab-splash')).toHaveCount(0);
  await keepScreenshot(page, 'kernel-playground-dark.png');
  await chooseTheme(page, 'JupyterLab Light');
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', 'true');

  // A reload reopens the playground as it was: language and source.
  // The source is saved to the workspace a moment after the last edit.
  await expect
    .poll(async () => (await page.request.get(`/lab/api/workspaces/default?token=${TOKEN}`)).text(), {
      timeout: 20_000
    })
    .toContain('c[i + 1] = a[i] + b[i]');
  await page.goto(`/lab?token=${TOKEN}`);
  const restored = page.locator('#gpudojo-kernel-playground');
  await expect(restored.locator('.gpudojo-language')).toHaveValue('numba', { timeout: 60_000 });
  await expect(restored.locator('.cm-content')).toContainText('c[i + 1] = a[i] + b[i]');
});
