import { test, expect, signIn, hydrated, expectAccessible } from './support';

// The admin practises two bad mornings on the demo database: a slow AI job and an answer lost after the work
// was done. Staff see the practice operations marked on the board and decide; the report tells how long they
// took and whether the decision table agrees. The drill is ended at once, so that the other specs meet no fault.
test('an admin runs a drill, staff decide on a practice operation, and the report shows the decision against the table', async ({ page, browser }) => {
  test.setTimeout(90_000);
  await signIn(page, 'admin');
  await page.goto('/admin/drills');
  await hydrated(page);
  await page.getByLabel('AI のバックグラウンド処理が遅い').check();
  await page.getByLabel('処理後に応答が失われる（受注システム）').check();
  await page.getByLabel('続ける時間（分、5〜480）').fill('30');
  await page.getByLabel('訓練のねらい・メモ').fill('応答喪失と AI 遅延の朝を練習する');
  await page.getByRole('button', { name: '訓練を始める' }).click();
  await expect(page).toHaveURL(/\/admin\/drills\/dr_[0-9a-f]+$/);
  const report = page.getByTestId('drill-report');
  await expect(report.locator('tr[data-fault="slow_ai_job"]')).toContainText('AI 処理中');
  await expect(report.locator('tr[data-fault="answer_lost"]')).toContainText('応答なし');
  await expect(report.locator('tr[data-fault="slow_ai_job"]')).toContainText('まだ判断していません');
  const slow = (await report.locator('tr[data-fault="slow_ai_job"] a').innerText()).trim();

  // Staff, in their own browser: the practice operations are marked; they wait for the AI job (a hold).
  const staff = await (await browser.newContext()).newPage();
  await signIn(staff, 'sato');
  await expect(staff.locator('tr', { hasText: slow }).getByTestId('drill')).toBeVisible();
  await staff.goto(`/operations/${slow}`);
  await hydrated(staff);
  await staff.getByText('保留にする（').click();
  await staff.getByLabel('保留の理由').fill('AI の生成が終わるまで待つ');
  await staff.getByRole('button', { name: '保留にする' }).click();
  await expect(staff.getByTestId('hold')).toContainText('AI の生成が終わるまで待つ');

  await page.reload();
  await expect(report.locator('tr[data-fault="slow_ai_job"]')).toContainText('保留にする（sato）');
  await expect(report.locator('tr[data-fault="slow_ai_job"]')).toContainText('✓ 判断表どおり');
  await expectAccessible(page, 'a drill report');
  await page.screenshot({ path: '../docs/screenshots/drill-report.png', fullPage: true });
  const csv = await (await page.request.get(await page.getByRole('link', { name: 'CSV でダウンロード' }).getAttribute('href') ?? '')).text();
  expect(csv).toContain('slow_ai_job');

  await page.goto('/admin/drills');
  await hydrated(page);
  await expectAccessible(page, 'the drills page');
  await page.getByRole('button', { name: '今すぐ終える' }).click();
  await expect(page.getByTestId('drills')).not.toContainText('実施中');
});
