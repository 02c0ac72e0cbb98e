import { Page, expect, test } from '@playwright/test';
import { answerKey, answerQuiz, keepScreenshot, openSidebar } from './helpers';
import { HUB_PASSWORD } from './playwright.config';

/**
 * A learner of the class: logs in to the hub (start-hub.sh, docs/deploy/jupyterhub_config.py),
 * gets their own server, opens gpudojo's sidebar under /user/alice/lab and runs lab 3 through the
 * proxy, its log and status streaming over the websocket, then takes lesson 1's quiz, graded by her
 * own server. tests/python/test_jupyterhub.py checks
 * the same hub for what a browser cannot see (the other learner's server, the data dirs).
 */
const LAB = 'lab-03-ddp';

async function logIn(page: Page, user: string, password: string): Promise<void> {
  await page.goto('/hub/login');
  await page.locator('input[name="username"]').fill(user);
  await page.locator('input[name="password"]').fill(password);
  await page.locator('input[type="submit"], button[type="submit"]').first().click();
}

test('a learner logs in to the class hub, opens gpudojo in their own Lab, runs a lab and takes a quiz', async ({ page }) => {
  test.setTimeout(300_000);
  await logIn(page, 'alice', 'not the password');
  await expect(page.getByText('Invalid username or password')).toBeVisible();

  await logIn(page, 'alice', HUB_PASSWORD);
  // The hub starts alice's server and sends her to JupyterLab under her own prefix.
  await page.waitForURL(/\/user\/alice\/lab/, { timeout: 120_000 });
  await expect(page.locator('#jp-main-dock-panel')).toBeVisible({ timeout: 60_000 });

  const panel = await openSidebar(page);
  const button = panel.locator(`#gpudojo-course-section .gpudojo-run-lab[data-lab="${LAB}"]`);
  await expect(button).toBeVisible({ timeout: 30_000 });
  await button.click();
  const form = page.locator(`#gpudojo-run-form-${LAB} .gpudojo-run-form`);
  await expect(form).toBeVisible();
  await form.locator('input[name="nproc"]').fill('1');
  await form.locator('input[name="epochs"]').fill('1');
  await form.locator('.gpudojo-run-start').click();
  await expect(form).toHaveCount(0, { timeout: 30_000 });

  const view = page.locator('.gpudojo-run-view:visible');
  await expect(view).toHaveAttribute('data-status', 'succeeded', { timeout: 150_000 });
  await expect(view.locator('.gpudojo-log-view .gpudojo-log-line').first()).toBeVisible();
  await keepScreenshot(page, 'hub-alice-lab3.png');

  // Through the proxy, alice's browser reaches her gpudojo and nothing of bob's.
  const mine = await page.request.get('/user/alice/gpudojo/api/runs');
  expect(mine.status()).toBe(200);
  expect((await mine.json()).runs).toHaveLength(1);
  const theirs = await page.request.get('/user/bob/gpudojo/api/runs', { maxRedirects: 5 });
  expect([403, 404]).toContain(theirs.status());

  // Lesson 1's quiz, through the proxy: one wrong answer, then all right.
  await panel.locator('#gpudojo-course-section .gpudojo-course-item[data-id="gpu-intro"]').click();
  const lesson = page.locator('#gpudojo-lesson-gpu-intro');
  const quiz = lesson.locator('.gpudojo-quiz');
  await quiz.scrollIntoViewIfNeeded();
  const key = answerKey('lessons/01-gpu-intro.quiz.toml');
  await expect(quiz.locator('.gpudojo-quiz-question')).toHaveCount(key.size);
  const [firstQuestion] = [...key.keys()];
  await answerQuiz(quiz, key, { wrong: firstQuestion });
  await quiz.locator('.gpudojo-quiz-submit').click();
  await expect(quiz.locator('.gpudojo-quiz-score')).toContainText(`Score: ${key.size - 1} / ${key.size}`);
  await quiz.locator('.gpudojo-quiz-retry').click();
  await answerQuiz(quiz, key, { only: firstQuestion });
  await quiz.locator('.gpudojo-quiz-submit').click();
  await expect(quiz.locator('.gpudojo-quiz-score')).toContainText(`Score: ${key.size} / ${key.size}`);
  await keepScreenshot(page, 'hub-alice-quiz.png');

  // The score is kept by alice's server (bob's shows none of it: test_jupyterhub.py).
  const catalog = await page.request.get('/user/alice/gpudojo/api/course/catalog');
  expect(catalog.status()).toBe(200);
  const lesson1 = (await catalog.json()).lessons.find((l: { id: string }) => l.id === 'gpu-intro');
  expect([lesson1.progress.quiz_score, lesson1.progress.quiz_total]).toEqual([key.size, key.size]);
});
