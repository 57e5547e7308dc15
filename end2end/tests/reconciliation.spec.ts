import { test, expect, signIn, hydrated, expectAccessible } from './support';

// The demo's seed cases are loaded by run.sh (`server demo load`): stalled and reconciled at load.
test('the partial-success case shows the order executed next to the summary not executed', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await expect(page.getByTestId('board')).toContainText('ORD-1002');
  await page.getByRole('link', { name: 'ORD-1002' }).click();
  await expect(page).toHaveURL(/\/operations\/ORD-1002$/);
  await hydrated(page);

  const order = page.locator('tr[data-step="register_order"]');
  const summary = page.locator('tr[data-step="ai_summary"]');
  await expect(order).toHaveAttribute('data-verdict', 'executed');
  await expect(order.getByTestId('flag')).toContainText('✓');
  await expect(order.getByTestId('verdict')).toContainText('実行済み');
  await expect(summary).toHaveAttribute('data-verdict', 'not_executed');
  await expect(summary.getByTestId('flag')).toContainText('未完了');
  await expect(summary.getByTestId('verdict')).toContainText('未実行');
  await expect(page.getByTestId('guidance')).toContainText('途中まで成功');
  await page.screenshot({ path: '../docs/screenshots/reconciliation.png', fullPage: true });
  await expectAccessible(page, 'the partial-success case');

  // Asking again records a fresh look-up by this user.
  await page.getByRole('button', { name: '外部システムに照会する' }).click();
  await expect(order.getByTestId('verdict')).toContainText('佐藤 花子');
  await expect(page.getByTestId('timeline').locator('[title="step.reconciled"]').first()).toContainText('照合を実施');
});

test('the lost-answer case shows the 4,000-yen order found with the amount compared', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await page.goto('/operations/ORD-1001');
  const order = page.locator('tr[data-step="register_order"]');
  await expect(order).toHaveAttribute('data-verdict', 'executed');
  await expect(order.getByTestId('verdict')).toContainText('amount: 4000 = 4000');
});

test('billing staff find the unknown mail on hold with its reason', async ({ page, violations }) => {
  await signIn(page, 'ito');
  await expect(page.getByTestId('board')).toContainText('INV-2001');
  await expect(page.getByTestId('on-hold')).toBeVisible();
  await page.goto('/operations/INV-2001');
  await expect(page.locator('tr[data-step="send_mail"]')).toHaveAttribute('data-verdict', 'unknown');
  await expect(page.getByTestId('hold')).toContainText('配信事業者に送信有無を問い合わせ中');
});

test('staff put a stalled operation on hold with a reason and release it again', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await page.goto('/operations/ORD-1001');
  await hydrated(page);
  await page.getByText('保留にする（').click();
  await page.getByLabel('保留の理由').fill('受注システムの担当者に確認中');
  await page.getByRole('button', { name: '保留にする' }).click();
  await expect(page.getByTestId('hold')).toContainText('受注システムの担当者に確認中');
  await expect(page.getByTestId('operation-status')).toContainText('保留');

  await page.getByLabel('保留を解除する理由').fill('登録済みと確認できた');
  await page.getByRole('button', { name: '保留を解除する' }).click();
  await expect(page.getByTestId('hold')).toHaveCount(0);
  await expect(page.getByTestId('operation-status')).toContainText('停止');
  await expect(page.getByTestId('timeline').locator('[title="operation.released"]').first()).toContainText('保留を解除');
});
