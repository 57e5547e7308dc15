import { Page } from '@playwright/test';
import { test, expect, signIn, hydrated, stalledOperation, expectAccessible } from './support';

// run.sh starts a local OpenID Connect provider (oidc-provider) with takeda in the group sales-approvers, which
// the suite's configuration maps to manager of sales; decisions there need a sign-in within the last minute.

/** The provider's own login page (oidc-provider's development interaction: any password). */
async function signInAtProvider(page: Page, login: string) {
  await expect(page.locator('input[name=login]')).toBeVisible();
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.locator('button[type=submit]').click();
}

/** sato asks for a rerun of `processId` (a sales order the order system answered 503): the five checks, then approval. */
async function requested(page: Page, processId: string) {
  await signIn(page, 'sato');
  await expect(async () => {
    await page.goto(`/operations/${processId}`);
    await expect(page.getByTestId('operation-status')).toContainText('停止', { timeout: 2000 });
  }).toPass({ timeout: 20_000 });
  await hydrated(page);
  await page.getByLabel('申請の理由').fill('受注システムが 503 を返したため再実行する');
  await page.getByRole('button', { name: '再実行の計画を作る' }).click();
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  await hydrated(page);
  for (const n of [1, 2, 3, 4]) {
    const item = page.locator(`li[data-check="${n}"]`);
    await item.getByLabel('確認のコメント').fill('外部システムのログで確認した');
    await item.getByRole('button', { name: '確認した' }).click();
    await expect(item.getByTestId('confirmed')).toBeVisible();
  }
  const cause = page.locator('li[data-check="5"]');
  await cause.getByLabel('原因の分類').selectOption('outside_service_outage');
  await cause.getByLabel('原因の内容').fill('受注システムの一時的な障害');
  await cause.getByLabel('確認のコメント').fill('障害情報を確認した');
  await cause.getByRole('button', { name: '確認した' }).click();
  await expect(cause.getByTestId('confirmed')).toBeVisible();
  await page.getByRole('button', { name: '承認を依頼する' }).click();
  await expect(page.getByTestId('request-status')).toContainText('承認待ち');
  await page.context().clearCookies();
}

test('a manager signs in with the company account and approves after signing in again', async ({ page, request, violations }) => {
  test.setTimeout(180_000);
  await stalledOperation(request, 'sales', 'order-intake', 'ORD-E2E-OIDC');
  await requested(page, 'ORD-E2E-OIDC');

  // The company account first on the sign-in page, then the provider's own login page.
  await page.goto('/sign-in?next=%2Fapprovals');
  await hydrated(page);
  await page.screenshot({ path: '../docs/screenshots/sign-in-company.png' });
  await expectAccessible(page, 'the sign-in page with the company account');
  await page.getByRole('link', { name: '会社のアカウントでサインイン' }).click();
  await signInAtProvider(page, 'takeda');
  await expect(page).toHaveURL(/\/approvals$/);
  const signedInAt = Date.now();
  await hydrated(page);
  await expect(page.locator('header')).toContainText('武田 真一');
  const request_ = page.getByTestId('inbox').locator('li', { hasText: 'ORD-E2E-OIDC' });
  await expect(request_).toBeVisible();

  await request_.getByTestId('open-decision').click();
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  await hydrated(page);
  const decisionPage = page.url();

  // A minute later the sign-in is too old for a decision: the page sends takeda through the provider again
  // (max_age=0 and prompt=login: the provider asks for the login whatever its own session says) and back to
  // the decision page.
  await page.waitForTimeout(Math.max(0, signedInAt + 62_000 - Date.now()));
  await page.getByLabel('コメント（任意）').fill('金額を確認した');
  await page.getByTestId('confirm-sent').check();
  await page.getByRole('button', { name: '承認する' }).click();
  await signInAtProvider(page, 'takeda');
  await expect(page).toHaveURL(decisionPage);
  await hydrated(page);
  // What was typed and ticked waits on the page: one more press decides.
  await expect(page.getByLabel('コメント（任意）')).toHaveValue('金額を確認した');
  await expect(page.getByTestId('confirm-sent')).toBeChecked();
  await page.getByRole('button', { name: '承認する' }).click();
  await expect(page.getByTestId('decided')).toContainText('承認を記録しました');
  await page.goto('/approvals');
  await expect(page.getByTestId('inbox').locator('li', { hasText: 'ORD-E2E-OIDC' })).toHaveCount(0);
});
