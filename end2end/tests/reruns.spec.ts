import { test, expect, signIn, hydrated, token, expectAccessible, tabTo } from './support';

// The seed's partial-success case (ORD-1002): the plan is only the summary, with its original key.
test('staff start a rerun request, confirm the five checks and request approval', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await page.goto('/operations/ORD-1002');
  await hydrated(page);
  await page.getByLabel('申請の理由').fill('要約が起動しなかったため、要約だけを再実行する');
  await page.getByRole('button', { name: '再実行の計画を作る' }).click();
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  await hydrated(page);
  await expect(page.getByTestId('plan')).toContainText('ORD-1002-ai_summary');
  await expect(page.getByTestId('plan')).not.toContainText('register_order');
  // The order is left out, and said to be: the outside system shows it executed, its flag is now set.
  await expect(page.getByTestId('left-out')).toContainText('register_order');
  await expect(page.getByTestId('left-out')).toContainText('実行済み');
  await expect(page.getByTestId('left-out')).toContainText('設定済み');
  await expect(page.getByTestId('request-status')).toContainText('下書き');

  // The first check by keyboard alone: Tab to the comment, type, Tab to the button, Enter.
  const first = page.locator('li[data-check="1"]');
  await tabTo(page, first.getByLabel('確認のコメント'));
  await page.keyboard.type('外部システムのログで確認した');
  await tabTo(page, first.getByRole('button', { name: '確認した' }));
  await page.keyboard.press('Enter');
  await expect(first.getByTestId('confirmed')).toBeVisible();
  for (const n of [2, 3, 4]) {
    const item = page.locator(`li[data-check="${n}"]`);
    await item.getByLabel('確認のコメント').fill('外部システムのログで確認した');
    await item.getByRole('button', { name: '確認した' }).click();
    await expect(item.getByTestId('confirmed')).toBeVisible();
  }
  const cause = page.locator('li[data-check="5"]');
  await cause.getByLabel('原因の分類').selectOption('system_error');
  await cause.getByLabel('原因の内容').fill('受付後に要約ジョブを起動する処理が例外で止まった');
  await cause.getByLabel('確認のコメント').fill('ログとエラーを確認した');
  await cause.getByRole('button', { name: '確認した' }).click();
  await expect(cause.getByTestId('confirmed')).toContainText('システムエラー');
  await page.screenshot({ path: '../docs/screenshots/checklist.png', fullPage: true });
  await expectAccessible(page, 'the checklist');

  await page.getByRole('button', { name: '承認を依頼する' }).click();
  await expect(page.getByTestId('request-status')).toContainText('承認待ち');
  // Who prepared it is told why they do not decide (maker ≠ checker).
  await expect(page.getByTestId('standing')).toContainText('準備に関わったため');
  await page.goto('/operations/ORD-1002');
  await expect(page.getByTestId('operation-status')).toContainText('再実行待ち');
  await expect(page.getByTestId('open-request')).toContainText('承認待ち');
  // Staff find what they asked for, and where it stands, under "your requests".
  await page.getByRole('link', { name: '依頼・承認' }).click();
  const mine = page.getByTestId('my-requests').locator('li', { hasText: 'ORD-1002' });
  await expect(mine.getByTestId('stage')).toContainText('承認待ち');
  await expect(mine).toContainText('営業部');
});

test('a rerun cannot be requested while a step result is unknown, and the reason is shown', async ({ page, violations }) => {
  await signIn(page, 'ito');
  await page.goto('/operations/INV-2001');
  await hydrated(page);
  await page.getByLabel('保留を解除する理由').fill('配信事業者の回答待ちを解除');
  await page.getByRole('button', { name: '保留を解除する' }).click();
  await expect(page.getByTestId('operation-status')).toContainText('停止');
  await page.getByLabel('申請の理由').fill('請求書メールを再送したい');
  await page.getByRole('button', { name: '再実行の計画を作る' }).click();
  await expect(page.getByTestId('plan-blocked')).toContainText('send_mail');
  await expect(page.getByTestId('plan-blocked')).toContainText('不明');
});

// Runs after the request above: another person, the department's owner, decides in their own browser context.
test('the department owner decides on the request page, with the evidence in front of them', async ({ page, violations }) => {
  await signIn(page, 'suzuki');
  await page.getByRole('link', { name: '依頼・承認' }).click();
  await expect(page).toHaveURL(/\/approvals$/);
  await hydrated(page);
  const request = page.getByTestId('inbox').locator('li', { hasText: 'ORD-1002' });
  await expect(request).toContainText('ORD-1002-ai_summary');
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: '../docs/screenshots/approvals-phone.png', fullPage: true });
  await expectAccessible(page, 'the approval inbox on a phone');
  // Nothing wider than the phone: no sideways scrolling of the page.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);

  // The decision page: the steps with their flags and what the outside systems say, the checklist, the makers.
  await request.getByTestId('open-decision').click();
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  await hydrated(page);
  await expect(page.locator('tr[data-step="ai_summary"]').getByTestId('verdict')).toContainText('未実行');
  await expect(page.getByTestId('checklist')).toContainText('ログとエラーを確認した');
  await expect(page.getByTestId('makers')).toContainText('佐藤 花子');
  await expect(page.getByTestId('approvals')).toContainText('承認 0 / 1');
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: '../docs/screenshots/decision.png', fullPage: true });
  await expectAccessible(page, 'the decision page');
  // The same page on a phone, in English: the steps are cards, nothing is wider than the screen.
  const origin = new URL(page.url()).origin;
  await page.context().addCookies([{ name: 'lang', value: 'en', url: origin }]);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await hydrated(page);
  await expect(page.locator('tr[data-step="ai_summary"]').getByTestId('verdict')).toContainText('Not executed');
  await expect(page.getByTestId('approvals')).toContainText('0 / 1');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await page.screenshot({ path: '../docs/screenshots/decision-phone-en.png', fullPage: true });
  await expectAccessible(page, 'the decision page on a phone, in English');
  // Decided there, on the phone, in Japanese: the evidence and the decision on one page.
  await page.context().addCookies([{ name: 'lang', value: 'ja', url: origin }]);
  await page.reload();
  await hydrated(page);
  await expect(page.locator('tr[data-step="ai_summary"]').getByTestId('verdict')).toContainText('未実行');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await page.screenshot({ path: '../docs/screenshots/decision-phone-ja.png', fullPage: true });
  await expectAccessible(page, 'the decision page on a phone, in Japanese');
  // Approved by keyboard alone, after ticking what will be sent.
  await tabTo(page, page.getByTestId('confirm-sent'));
  await page.keyboard.press('Space');
  await tabTo(page, page.getByRole('button', { name: '承認する' }));
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('decided')).toContainText('承認を記録しました');
  await expect(page.getByTestId('standing')).toBeVisible();
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.goto('/approvals');
  await expect(page.getByTestId('inbox-empty')).toBeVisible();
  const decided = page.getByTestId('my-decisions').locator('li', { hasText: 'ORD-1002' });
  await expect(decided.getByTestId('my-decision')).toContainText('あなたが承認');

  // The dispatcher sends the rerun to the demo integration, which performs the summary with its original key
  // and reports back: the operation completes.
  // Waited for through the API, then the page is opened once.
  const headers = { authorization: `Bearer ${token('sales')}` };
  await expect(async () => {
    const answer = await page.request.get('/api/v1/operations/ORD-1002', { headers });
    expect((await answer.json()).status).toBe('completed');
  }).toPass({ timeout: 20_000 });
  await page.goto('/operations/ORD-1002');
  await hydrated(page);
  await expect(page.getByTestId('operation-status')).toContainText('完了');
  await expect(page.locator('tr[data-step="ai_summary"]').getByTestId('flag')).toContainText('✓');
  // The look-up from before the rerun no longer describes the summary: it is shown as superseded, with the time,
  // and the decision table's advice gives way to "done".
  const summary = page.locator('tr[data-step="ai_summary"]');
  await expect(summary).toHaveAttribute('data-superseded', 'true');
  await expect(summary.getByTestId('superseded')).toContainText('更新済み');
  await expect(page.getByTestId('guidance-done')).toContainText('再実行するものはありません');
  await expect(page.getByTestId('guidance')).toHaveCount(0);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: '../docs/screenshots/operation-completed-phone.png', fullPage: true });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await expect(page.getByTestId('timeline').locator('[title="rerun.dispatched"]').first()).toContainText('再実行を送信');
  await expect(page.getByTestId('timeline').locator('[title="rerun_request.succeeded"]').first()).toContainText('再実行が成功');
});
