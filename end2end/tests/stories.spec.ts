import { test, expect, signIn, hydrated, token } from './support';

// The seed's first story, in Japanese: ORD-1001's answer from the order system was lost. The order is there (the
// order system shows it, 4,000 yen as sent), the summary never started. sato requests the summary alone — the
// start confirms the order's flag, and the plan bound after that write is submitted as it is — suzuki approves,
// the demo integration runs the summary with its original key, and ORD-1001 completes.
test('ORD-1001, the answer lost: the summary alone is requested, approved by the owner and completes', async ({ page, browser, violations }) => {
  test.setTimeout(120_000);
  await signIn(page, 'sato');
  await page.goto('/operations/ORD-1001');
  await hydrated(page);
  await expect(page.locator('tr[data-step="register_order"]')).toHaveAttribute('data-verdict', 'executed');
  await page.getByLabel('申請の理由').fill('受注は登録済み。要約だけを再実行する');
  await page.getByRole('button', { name: '再実行の計画を作る' }).click();
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  await hydrated(page);
  const request = page.url();
  await expect(page.getByTestId('plan')).toContainText('ORD-1001-ai_summary');
  await expect(page.getByTestId('plan')).not.toContainText('ORD-1001-register_order');
  await expect(page.getByTestId('left-out')).toContainText('設定済み');
  for (const n of [1, 2, 3, 4]) {
    const item = page.locator(`li[data-check="${n}"]`);
    await item.getByLabel('確認のコメント').fill('受注システムの記録で確認した');
    await item.getByRole('button', { name: '確認した' }).click();
    await expect(item.getByTestId('confirmed')).toBeVisible();
  }
  const cause = page.locator('li[data-check="5"]');
  await cause.getByLabel('原因の分類').selectOption('outside_service_outage');
  await cause.getByLabel('原因の内容').fill('受注システムの応答が途中で切れた（登録は済んでいた）');
  await cause.getByLabel('確認のコメント').fill('接続ログで確認した');
  await cause.getByRole('button', { name: '確認した' }).click();
  await expect(cause.getByTestId('confirmed')).toBeVisible();
  await page.getByRole('button', { name: '承認を依頼する' }).click();
  await expect(page.getByTestId('request-status')).toContainText('承認待ち');
  await expect(page.getByTestId('plan-changed')).toHaveCount(0);

  const owner = await browser.newContext();
  const manager = await owner.newPage();
  await signIn(manager, 'suzuki');
  await manager.goto(request);
  await hydrated(manager);
  await manager.getByTestId('confirm-sent').check();
  await manager.getByRole('button', { name: '承認する' }).click();
  await expect(manager.getByTestId('decided')).toContainText('承認を記録しました');
  await owner.close();

  await expect(async () => {
    await page.goto('/operations/ORD-1001');
    await expect(page.getByTestId('operation-status')).toContainText('完了', { timeout: 1_000 });
  }).toPass({ timeout: 60_000 });
  await expect(page.locator('tr[data-step="ai_summary"]')).toContainText('✓ 成功');
});

/** An order intake registered through the ingestion API with its content; the department's API headers. */
async function registered(request: import('@playwright/test').APIRequestContext, processId: string, content: object) {
  const headers = { authorization: `Bearer ${token('sales')}` };
  const steps = ['register_order', 'ai_summary'].map((name) => ({ name, idempotency_key: `${processId}-${name}`, content }));
  const answer = await request.post('/api/v1/operations', {
    headers: { ...headers, 'idempotency-key': processId },
    data: { process_id: processId, workflow: 'order-intake', department: 'sales', content, steps },
  });
  expect(answer.status()).toBe(201);
  return headers;
}

/** The order system takes the order under its original key (the demo order API), as the integration's call did. */
async function orderTaken(request: import('@playwright/test').APIRequestContext, processId: string, content: object) {
  const done = await request.post('/demo/orders/requests', {
    headers: { 'idempotency-key': `${processId}-register_order`, 'process-id': processId },
    data: content,
  });
  expect(done.status()).toBe(201);
}

/** An order whose registration answer was lost: the order system holds it, the integration reported "unknown". */
async function answerLost(request: import('@playwright/test').APIRequestContext, processId: string) {
  const content = { item: 'Standing desk', amount: 52000 };
  const headers = await registered(request, processId, content);
  await orderTaken(request, processId, content);
  const lost = await request.post(`/api/v1/operations/${processId}/steps/register_order/events`, {
    headers,
    data: { seq: 1, type: 'unknown', error: { class: 'no_response', message: 'the connection broke before the answer' } },
  });
  expect((await lost.json()).applied).toBe(true);
}

// A bulk rerun of operations whose first answer was lost, in English: every member reaches approval (none is
// dropped because its own start set the order's flag) and all complete in stages, a canary of three first.
test('a bulk rerun of lost answers reaches approval with every member and completes in stages', async ({ page, browser, request, violations }) => {
  test.setTimeout(240_000);
  const ids = ['LOST-E2E-1', 'LOST-E2E-2', 'LOST-E2E-3', 'LOST-E2E-4'];
  for (const id of ids) await answerLost(request, id);
  await signIn(page, 'sato');
  const origin = new URL(page.url()).origin;
  await page.context().addCookies([{ name: 'lang', value: 'en', url: origin }]);
  await expect(async () => {
    await page.goto('/?event=no_response');
    await expect(page.getByTestId('board')).toContainText('LOST-E2E-4', { timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  await hydrated(page);
  for (const id of ids) await page.getByRole('checkbox', { name: `Tick ${id} for a bulk rerun` }).check();
  const card = page.getByTestId('bulk-rerun');
  await card.getByLabel('Reason for the bulk rerun').fill('The order system answered after the timeout: rerun the summaries');
  await card.getByRole('button', { name: 'Preview the 4 ticked' }).click();
  await expect(page).toHaveURL(/\/batches\/rb_[0-9a-f]+$/);
  await hydrated(page);
  await expect(page.getByTestId('batch-planned')).toContainText('LOST-E2E-4-ai_summary', { timeout: 30_000 });
  await expect(page.getByTestId('batch-planned')).not.toContainText('LOST-E2E-1-register_order');
  await page.getByLabel(/Reruns sent a minute/).fill('60');
  await page.getByRole('button', { name: 'Request', exact: true }).click();
  for (const n of [1, 2, 3, 4, 5]) {
    const item = page.getByTestId(`check-${n}`);
    await expect(item.getByTestId('passing')).toContainText('4 of 4');
    if (n === 5) {
      await item.getByLabel('Cause category').selectOption('outside_service_outage');
      await item.getByLabel('Cause details').fill('The order system answered after our timeout');
    }
    await item.getByLabel('Confirmation comment').fill('Checked against the order system');
    await item.getByRole('button', { name: 'Confirm' }).click();
    await expect(item.getByTestId('confirmed')).toBeVisible();
  }
  await page.getByRole('button', { name: 'Request approval' }).click();
  const status = page.getByTestId('batch-status');
  await expect(status).toContainText('Awaiting approval');
  await expect(page.getByTestId('batch-totals').getByTestId('total-dropped')).toHaveText('0');
  const batch = page.url();

  const owner = await browser.newContext();
  const manager = await owner.newPage();
  await signIn(manager, 'suzuki');
  await manager.context().addCookies([{ name: 'lang', value: 'en', url: origin }]);
  await manager.goto(batch);
  await hydrated(manager);
  await manager.getByTestId('confirm-sent').check();
  await manager.getByRole('button', { name: 'Approve' }).click();
  await expect(manager.getByTestId('decided')).toBeVisible();
  await owner.close();

  const stages = page.getByTestId('batch-stages');
  await expect(stages.locator('tr[data-stage="1"] [data-count="operations"]')).toHaveText('3');
  await expect(stages.locator('tr[data-stage="1"]').getByTestId('stage-outcome')).toContainText('Passed', { timeout: 90_000 });
  await expect(status).toContainText('Completed', { timeout: 90_000 });
  const progress = page.getByTestId('batch-progress');
  await expect(progress.locator('[data-progress="succeeded"] strong')).toHaveText('4', { timeout: 30_000 });
});

// A plan that really changed is refused, and the page says what changed and offers the way on: the order went
// through at the order system after the plan was made (someone's retry), so the plan to send it again no longer
// holds. The request page names the change, step and verdict before and after; one press makes the plan again,
// and the new plan is the summary alone.
test('a plan whose facts changed is refused, names the change, and is made again in one press', async ({ page, request, violations }) => {
  const processId = 'CHANGED-E2E-1';
  const content = { item: 'Monitor arm', amount: 7200 };
  const headers = await registered(request, processId, content);
  await request.post(`/api/v1/operations/${processId}/steps/register_order/events`, {
    headers,
    data: { seq: 1, type: 'failed', error: { class: 'server_error', message: '503 from the order system' } },
  });
  await signIn(page, 'sato');
  await expect(async () => {
    await page.goto(`/operations/${processId}`);
    await expect(page.getByTestId('operation-status')).toContainText('停止', { timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  await hydrated(page);
  await page.getByLabel('申請の理由').fill('受注システムの障害で止まった');
  await page.getByRole('button', { name: '再実行の計画を作る' }).click();
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  const first = page.url();
  await hydrated(page);
  await expect(page.getByTestId('plan')).toContainText(`${processId}-register_order`);

  // Meanwhile the order system took the order after all; staff ask the outside systems again.
  await orderTaken(request, processId, content);
  await page.goto(`/operations/${processId}`);
  await hydrated(page);
  await page.getByRole('button', { name: '外部システムに照会する' }).click();
  await expect(page.locator('tr[data-step="register_order"]')).toHaveAttribute('data-verdict', 'executed');

  await page.goto(first);
  await hydrated(page);
  const changed = page.getByTestId('plan-changed');
  await expect(changed).toContainText('受注の登録: 外部システムの照合結果');
  await expect(changed).toContainText('→');
  await page.screenshot({ path: '../docs/screenshots/plan-changed.png', fullPage: true });
  await changed.getByRole('button', { name: 'いまの事実で計画を作り直す' }).click();
  await expect(page).not.toHaveURL(first);
  await expect(page).toHaveURL(/\/reruns\/rr_/);
  await hydrated(page);
  await expect(page.getByTestId('plan')).toContainText(`${processId}-ai_summary`);
  await expect(page.getByTestId('plan')).not.toContainText(`${processId}-register_order`);
  await expect(page.getByTestId('plan-changed')).toHaveCount(0);
  await page.goto(first);
  await expect(page.getByTestId('request-status')).toContainText('取り消し');
});
