import { expect, test } from '@playwright/test';
import { TOKEN, chartedSamples, keepScreenshot, openLab, openSidebar } from './helpers';

test('with no GPU the sidebar says why and the host charts still stream', async ({ page, request }) => {
  const devices = await (await request.get(`/gpudojo/api/gpu/devices?token=${TOKEN}`)).json();
  test.skip(devices.available, 'this machine has a usable GPU; the no-GPU path is checked where there is none');

  await openLab(page);
  const panel = await openSidebar(page);
  await expect(panel.locator('.gpudojo-mode-badge')).toContainText('No GPU');
  // One line; why, and what still works, behind it.
  const message = panel.locator('.gpudojo-no-gpu');
  await expect(message).toBeHidden();
  await panel.locator('.gpudojo-no-gpu-details summary').click();
  await expect(message).toBeVisible();
  await expect(message).toContainText('No NVIDIA driver found');
  await expect(message).toContainText('Host metrics still stream.');
  await expect(panel.locator('.gpudojo-gpu-card')).toHaveCount(0);
  await expect(panel.locator('.gpudojo-host')).toContainText('cores');
  await keepScreenshot(page, 'no-gpu-sidebar.png');

  await panel.locator('.gpudojo-open-monitor').click();
  const monitor = page.locator('#gpudojo-gpu-monitor');
  await expect(monitor.locator('.gpudojo-no-gpu')).toContainText('No NVIDIA driver found');
  await expect(monitor.locator('.gpudojo-chart[data-metric="host_cpu"]')).toBeVisible();
  await expect(monitor.locator('.gpudojo-chart[data-metric="host_memory"]')).toBeVisible();
  await expect(monitor.locator('.gpudojo-chart[data-metric="utilization"]')).toHaveCount(0);
  const first = await chartedSamples(page);
  await expect.poll(() => chartedSamples(page)).toBeGreaterThan(first + 3);
  await keepScreenshot(page, 'no-gpu-monitor.png');
});
