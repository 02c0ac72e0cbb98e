import { APIRequestContext, Page, expect, test } from '@playwright/test';
import { keepScreenshot } from './helpers';
import { CLASSHUB_PASSWORD, CLASSHUB_SETUP_TOKEN } from './playwright.config';

/**
 * The instructor's view of a class (docs/class-service.md): on the class hub of start-hub.sh,
 * alice (two lessons and a lab done) and bob (one lesson) have their gpudojo servers running;
 * ines, in the instructors group, opens the gpudojo-class service through the hub's login and
 * sees both; alice, a learner, is refused. tests/python/test_classview_hub.py covers the JSON,
 * the CSV and a stopped server on the same kind of hub.
 */
const CLASS = '/services/gpudojo-class/';

async function startServer(request: APIRequestContext, user: string): Promise<void> {
  const headers = { Authorization: `token ${CLASSHUB_SETUP_TOKEN}` };
  const started = await request.post(`/hub/api/users/${user}/server`, { headers });
  expect([201, 202, 400]).toContain(started.status()); // 400: already running
  await expect(async () => {
    const model = await (await request.get(`/hub/api/users/${user}`, { headers })).json();
    expect(model.servers?.['']?.ready).toBe(true);
  }).toPass({ timeout: 120_000, intervals: [1_000] });
}

async function logInThroughTheService(page: Page, user: string): Promise<number | undefined> {
  await page.goto(CLASS);
  await expect(page).toHaveURL(/\/hub\/login/);
  await page.locator('input[name="username"]').fill(user);
  await page.locator('input[name="password"]').fill(CLASSHUB_PASSWORD);
  const [response] = await Promise.all([
    page.waitForResponse(r => r.request().isNavigationRequest() && r.status() !== 302, { timeout: 30_000 }),
    page.locator('input[type="submit"], button[type="submit"]').first().click()
  ]);
  await page.waitForLoadState();
  return response?.status();
}

test.beforeAll(async ({ request }) => {
  test.setTimeout(300_000);
  await startServer(request, 'alice');
  await startServer(request, 'bob');
});

test('the instructor sees both learners with their own progress', async ({ page }) => {
  expect(await logInThroughTheService(page, 'ines')).toBe(200);
  await expect(page).toHaveURL(new RegExp(`${CLASS}$`));
  const learners = page.getByRole('table', { name: 'Learners' });
  const alice = learners.getByRole('row', { name: /alice/ });
  const bob = learners.getByRole('row', { name: /bob/ });
  await expect(alice.getByRole('cell').nth(0)).toHaveText(/answered/);
  await expect(alice.getByRole('cell').nth(1)).toHaveText('2 of 8');
  await expect(alice.getByRole('cell').nth(2)).toHaveText('1 of 6');
  await expect(bob.getByRole('cell').nth(0)).toHaveText(/answered/);
  await expect(bob.getByRole('cell').nth(1)).toHaveText('1 of 8');
  await expect(bob.getByRole('cell').nth(2)).toHaveText('0 of 6');
  const items = page.getByRole('table', { name: 'Items' });
  await expect(items.getByRole('row', { name: /gpu-intro/ }).getByRole('cell').nth(1)).toHaveText('2 of 2');
  await expect(items.getByRole('row', { name: /cuda-basics/ }).getByRole('cell').nth(1)).toHaveText('1 of 2');
  await keepScreenshot(page, 'class-view.png');

  const csv = await page.request.get(`${CLASS}class.csv`);
  expect(csv.status()).toBe(200);
  expect(await csv.text()).toContain('alice,ok,2,8,1,6');
});

test('a learner without the instructor role gets 403', async ({ page }) => {
  expect(await logInThroughTheService(page, 'alice')).toBe(403);
  await expect(page.getByRole('table', { name: 'Learners' })).toHaveCount(0);
});
