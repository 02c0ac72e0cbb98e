import { Page, expect, test } from '@playwright/test';
import { TOKEN, keepScreenshot, openLab, runFromPalette } from './helpers';

/** A vector add with no bounds check: launched with 1024 threads for 1000 elements, thread 232 of block 3 reads a[1000] (line 4). */
const UNCHECKED = `extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
`;

const CHECKED = UNCHECKED.replace('    c[i] = a[i] + b[i];', '    if (i < n) {\n        c[i] = a[i] + b[i];\n    }');

const VECTOR_ADD_ARGS = JSON.stringify([
  { kind: 'array', name: 'a', dtype: 'float32', shape: [1000], init: 'random', seed: 1 },
  { kind: 'array', name: 'b', dtype: 'float32', shape: [1000], init: 'random', seed: 2 },
  { kind: 'array', name: 'c', dtype: 'float32', shape: [1000], init: 'zeros', output: true },
  { kind: 'scalar', name: 'n', dtype: 'int32', value: 1000 }
]);

/** Each lane reads 32 floats past its neighbour (line 5: 32 sectors per request) and writes next to it (line 6: 4). */
const STRIDED = `extern "C" __global__ void strided_copy(const float *src, float *dst, int n, int stride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = src[i * stride];
        dst[i] = v;
    }
}
`;

const STRIDED_ARGS = JSON.stringify([
  { kind: 'array', name: 'src', dtype: 'float32', shape: [32768], init: 'arange' },
  { kind: 'array', name: 'dst', dtype: 'float32', shape: [1024], init: 'zeros', output: true },
  { kind: 'scalar', name: 'n', dtype: 'int32', value: 1024 },
  { kind: 'scalar', name: 'stride', dtype: 'int32', value: 32 }
]);

/** Replace the whole editor text, as a paste does (no auto-indent or bracket closing). */
async function replaceSource(page: Page, text: string): Promise<void> {
  const content = page.locator('#gpudojo-kernel-playground .cm-content');
  await content.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(text);
}

test("without a GPU a learner's CUDA C runs in the CPU emulator: an out-of-bounds read named by thread and line, then the fix passes with its coalescing report", async ({
  page,
  request
}) => {
  const devices = await (await request.get(`/gpudojo/api/gpu/devices?token=${TOKEN}`)).json();
  test.skip(devices.available, 'this machine has a usable GPU: its runs go to the GPU, not the CPU emulator');
  test.setTimeout(240_000);

  await openLab(page);
  await runFromPalette(page, 'Open Kernel Playground');
  const playground = page.locator('#gpudojo-kernel-playground');
  const status = playground.locator('.gpudojo-compile-status');
  const editor = playground.locator('.cm-content');
  const run = playground.locator('.gpudojo-run-panel');
  const result = run.locator('.gpudojo-run-result');
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 90_000 });
  await expect(run.locator('.gpudojo-run-where')).toContainText("No GPU here: CUDA C kernels run in gpudojo's CPU emulator");

  // The vector add with its bounds check missing: the read past a's end is named by thread, block and line.
  await replaceSource(page, UNCHECKED);
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await run.locator('.gpudojo-run-kernel').fill('vector_add');
  await run.locator('.gpudojo-run-grid').fill('4');
  await run.locator('.gpudojo-run-block').fill('256');
  await run.locator('.gpudojo-run-args').fill(VECTOR_ADD_ARGS);
  await run.locator('.gpudojo-run-expected').fill('{"c": "a + b"}');
  await run.locator('.gpudojo-run').click();
  const failure = run.locator('.gpudojo-run-error[data-kind="out_of_bounds"]');
  await expect(failure).toBeVisible({ timeout: 90_000 });
  await expect(run.locator('.gpudojo-run-mode')).toHaveAttribute('data-mode', 'cpu-emulation');
  await expect(run.locator('.gpudojo-run-mode')).toHaveText("CPU emulation: results are exact, times are not a GPU's");
  await expect(failure.locator('.gpudojo-run-error-message')).toContainText('a[1000]');
  await expect(failure.locator('.gpudojo-run-error-thread')).toHaveText('In thread (232, 0, 0) of block (3, 0, 0)');
  await expect(failure.locator('.gpudojo-run-error-line')).toHaveAttribute('data-line', '4');
  await expect(editor.locator('[data-diag-line="4"]')).toBeVisible();
  // A run that failed has no access report to mislead with.
  await expect(result.locator('.gpudojo-access-report')).toHaveCount(0);
  await keepScreenshot(page, 'kernel-cpu-out-of-bounds.png');

  // Fixed: it passes, and the report calls every access of a vector add coalesced.
  await replaceSource(page, CHECKED);
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await run.locator('.gpudojo-run').click();
  await expect(result).toHaveAttribute('data-status', 'passed', { timeout: 90_000 });
  await expect(run.locator('.gpudojo-run-verdict')).toHaveText('Passed: 1 output matches');
  await expect(run.locator('.gpudojo-run-checks tr[data-name="c"]')).toHaveAttribute('data-ok', 'true');
  await expect(editor.locator('[data-diag-line]')).toHaveCount(0);
  const report = result.locator('.gpudojo-access-report');
  await expect(report).toBeVisible();
  await expect(report.locator('.gpudojo-access-source')).toContainText('not measured by hardware counters');
  await expect(report.locator('.gpudojo-access-note')).toContainText('every access of all 4 blocks recorded');
  await expect(report.locator('.gpudojo-access-headline')).toHaveText(/^Every access is ideal/);
  // One thread per element: the 1000 elements of c were stored by 1000 threads, once each.
  await expect(report.locator('.gpudojo-access-writers li[data-array="c"]')).toHaveText('c: stored by 1000 threads, 1 store each');
  const added = report.locator('tr.gpudojo-access-row[data-line="5"][data-space="global"]');
  await expect(added.locator('.gpudojo-access-verdict')).toHaveText('coalesced');
  await expect(editor.locator('[data-access-line]')).toHaveCount(0);

  // A strided read: 32 sectors per request where 4 would do, ranked first and marked beside its line.
  await replaceSource(page, STRIDED);
  await expect(status).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await run.locator('.gpudojo-run-kernel').fill('strided_copy');
  await run.locator('.gpudojo-run-args').fill(STRIDED_ARGS);
  await run.locator('.gpudojo-run-expected').fill('{"dst": "src[::32]"}');
  await run.locator('.gpudojo-run').click();
  await expect(result).toHaveAttribute('data-status', 'passed', { timeout: 90_000 });
  const rows = report.locator('tr.gpudojo-access-row');
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(0)).toHaveAttribute('data-line', '5');
  await expect(rows.nth(0)).toHaveAttribute('data-wasteful', 'true');
  await expect(rows.nth(0).locator('.gpudojo-access-figure')).toHaveText('32 sectors per request (min 4)');
  await expect(rows.nth(0).locator('.gpudojo-access-verdict')).toHaveText('8× the minimum: not coalesced');
  await expect(rows.nth(1)).toHaveAttribute('data-line', '6');
  await expect(rows.nth(1).locator('.gpudojo-access-figure')).toHaveText('4 sectors per request (min 4)');
  await expect(report.locator('.gpudojo-access-headline')).toHaveText(
    '1 of 2 lines spend more than the ideal (1 not coalesced): worst first.'
  );
  await expect(report.locator('.gpudojo-access-totals li[data-space="global"]')).toHaveText(
    'Global: 64 requests, 1152 sectors (min 256), 22% efficient'
  );
  const mark = editor.locator('[data-access-line="5"]');
  await expect(mark).toHaveAttribute('title', /global load 32 sectors per request \(min 4\)/);
  await expect(editor.locator('[data-access-line]')).toHaveCount(1);

  // The row shows its line in the editor: the cursor goes there (the PTX follows the cursor).
  await editor.locator('.cm-line').nth(0).click();
  await rows.nth(0).locator('.gpudojo-access-goto').click();
  await playground.locator('.gpudojo-playground-outputs .lm-TabBar-tab', { hasText: 'PTX' }).click();
  await expect(playground.locator('.gpudojo-ptx .gpudojo-asm-current').first()).toHaveAttribute('data-src-line', '5');
  await keepScreenshot(page, 'kernel-cpu-access-report.png');

  // An edit makes the report stale: the marks beside the source go until the next run.
  await editor.locator('.cm-line').last().click();
  await page.keyboard.insertText('// edited');
  await expect(result).toHaveClass(/gpudojo-mod-stale/);
  await expect(editor.locator('[data-access-line]')).toHaveCount(0);
});
