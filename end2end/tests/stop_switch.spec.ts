import { test, expect, signIn, hydrated, expectAccessible } from './support';

// The department's owner stops reruns to the AI service (its API is broken this morning) with a reason: the
// board says so to everyone; resuming needs a reason too.
test('an owner stops reruns to an outside system with a reason, the board shows it, and resumes them', async ({ page }) => {
  await signIn(page, 'suzuki');
  await page.goto('/stop-switch');
  await hydrated(page);
  const ai = page.locator('li[data-switch="connector:ai-summary"]');
  await expect(ai).toContainText('送信中');
  await expect(page.locator('li[data-switch="workflow:monthly-billing"] form')).toHaveCount(0); // another department's
  await ai.getByLabel('止める理由').fill('AI の API キーが期限切れ');
  await ai.getByRole('button', { name: '送信を止める' }).click();
  await expect(ai).toContainText('停止中');
  await expectAccessible(page, 'the stop switch');

  await page.goto('/');
  const banner = page.getByTestId('paused-banner');
  await expect(banner).toContainText('ai-summary');
  await expect(banner).toContainText('AI の API キーが期限切れ');
  await expectAccessible(page, 'the board with a stop banner');

  await page.goto('/stop-switch');
  await hydrated(page);
  await ai.getByLabel('再開する理由').fill('キーを更新した');
  await ai.getByRole('button', { name: '再開する' }).click();
  await expect(ai).toContainText('送信中');
  await page.goto('/');
  await expect(page.getByTestId('paused-banner')).toHaveCount(0);
});
