import { expect, test } from '@playwright/test';
import { chartedSamples, keepScreenshot, openLab, openSidebar, runFromPalette, chooseTheme } from './helpers';

test('sidebar shows both GPUs of a replayed 2-GPU node and the monitor charts advance', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', e => errors.push(String(e)));

  await openLab(page);
  const panel = await openSidebar(page);

  await expect(panel.locator('.gpudojo-mode-badge')).toContainText('Replay');
  const cards = panel.locator('.gpudojo-gpu-card');
  await expect(cards).toHaveCount(2);
  await expect(cards.nth(0)).toContainText('NVIDIA H100 80GB HBM3');
  await expect(cards.nth(0)).toHaveAttribute('data-gpu-index', '0');
  await expect(cards.nth(1)).toHaveAttribute('data-gpu-index', '1');
  await expect(panel.locator('.gpudojo-topology')).toContainText('NV18');
  await expect(panel.locator('.gpudojo-no-gpu')).toHaveCount(0);
  await keepScreenshot(page, 'replay-2gpu-sidebar.png');

  await panel.locator('.gpudojo-open-monitor').click();
  const monitor = page.locator('#gpudojo-gpu-monitor');
  await expect(monitor).toBeVisible();
  for (const metric of ['utilization', 'memory', 'power', 'temperature', 'sm_clock', 'host_cpu', 'host_memory']) {
    await expect(monitor.locator(`.gpudojo-chart[data-metric="${metric}"]`)).toBeVisible();
  }
  // Each GPU chart draws a canvas with one series per GPU.
  await expect(monitor.locator('.gpudojo-chart[data-metric="utilization"] canvas')).toHaveCount(1);
  await expect(monitor.locator('.gpudojo-chart[data-metric="utilization"] .u-legend .u-series')).toHaveCount(3);

  await expect.poll(() => chartedSamples(page)).toBeGreaterThan(2);
  const first = await chartedSamples(page);
  await expect.poll(() => chartedSamples(page)).toBeGreaterThan(first + 3);
  await expect(monitor.locator('.gpudojo-status')).toHaveAttribute('data-state', 'open');
  await keepScreenshot(page, 'replay-2gpu-monitor.png');

  // Pause stops the charts; resume starts them again.
  await monitor.locator('.gpudojo-pause').click();
  await expect(monitor.locator('.gpudojo-pause')).toContainText('Resume');
  await page.waitForTimeout(500);
  const paused = await chartedSamples(page);
  await page.waitForTimeout(1500);
  expect(await chartedSamples(page)).toBe(paused);
  await monitor.locator('.gpudojo-pause').click();
  await expect.poll(() => chartedSamples(page)).toBeGreaterThan(paused);

  expect(errors).toEqual([]);
});

test('the monitor opens from the command palette', async ({ page }) => {
  await openLab(page);
  await expect(page.locator('#gpudojo-gpu-monitor')).toHaveCount(0);
  await runFromPalette(page, 'Open GPU Monitor');
  await expect(page.locator('#gpudojo-gpu-monitor .gpudojo-chart[data-metric="utilization"]')).toBeVisible();
});

test('the dark theme keeps the GPU cards readable', async ({ page }) => {
  await openLab(page);
  await chooseTheme(page, 'JupyterLab Dark');
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', 'false');
  const panel = await openSidebar(page);
  const card = panel.locator('.gpudojo-gpu-card').first();
  await expect(card).toBeVisible();
  // Light text on the dark theme: the card follows JupyterLab's variables, not fixed colours.
  const luminance = await card.evaluate(el => {
    const [r, g, b] = getComputedStyle(el).color.match(/\d+/g)!.map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  });
  expect(luminance).toBeGreaterThan(0.5);
  await expect(page.locator('#jupyterlab-splash')).toHaveCount(0);
  await keepScreenshot(page, 'dark-theme-sidebar.png');
  await chooseTheme(page, 'JupyterLab Light');
  await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', 'true');
});
