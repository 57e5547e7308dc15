import { test, expect, signIn, hydrated, expectAccessible } from './support';

/** A `datetime-local` value in Tokyo time (the demo users' zone), `minutes` from now. */
function tokyo(minutes: number): string {
  const at = new Date(Date.now() + minutes * 60_000);
  return at.toLocaleString('sv-SE', { timeZone: 'Asia/Tokyo' }).replace(' ', 'T').slice(0, 16);
}

// The demo's outage: six sales orders got 503 from the order system (ORD-1101 to ORD-1106) and one more
// (ORD-1107) is in the order system with another amount. One request, one checklist and one approval for the six;
// the seventh is shown with its reason and never blocks the others. The six go out in stages: a canary of three,
// proven at the outside systems, then the rest.
test('staff preview a bulk rerun by filter, request it and confirm the checks once; the owner approves; all six are rerun in stages', async ({ page, browser, violations }) => {
  test.setTimeout(240_000);
  await signIn(page, 'sato');
  await hydrated(page);

  // The board's filters select the outage.
  const filters = page.getByRole('form', { name: '絞り込み' });
  await filters.getByLabel('部門').selectOption('sales');
  await filters.getByLabel('ワークフロー').selectOption('order-intake');
  await filters.getByLabel('イベント').selectOption('temporary_failure');
  await filters.getByRole('button', { name: '絞り込む' }).click();
  await expect(page).toHaveURL(/department=sales&workflow=order-intake&event=temporary_failure/);
  expect(page.url()).not.toContain('&=');
  const card = page.getByTestId('bulk-rerun');
  await expect(card.getByTestId('bulk-selection')).toContainText('受注の取り込み');
  await expect(page.getByTestId('board')).toContainText('ORD-1106');

  // Ticked rows replace the filters; unticked, the filters apply again.
  const tick = (processId: string) => page.getByRole('checkbox', { name: `${processId} を一括再実行に選ぶ` });
  await tick('ORD-1101').check();
  await tick('ORD-1102').check();
  await expect(card.getByRole('button', { name: '選んだ 2 件でプレビューを作る' })).toBeVisible();
  await expect(card.locator('input[name="process_ids"]')).toHaveValue('ORD-1101,ORD-1102');
  await tick('ORD-1101').uncheck();
  await tick('ORD-1102').uncheck();
  await expect(card.locator('input[name="process_ids"]')).toHaveValue('');

  await card.getByLabel('障害の種類').selectOption('outside_service_outage');
  // Only what stalled before this suite began (other specs register operations of their own).
  await card.getByLabel('登録日時（まで）').fill(tokyo(-20));
  await card.getByLabel('一括再実行の理由').fill('受注システムの障害（503）で止まった注文をまとめて再実行する');
  await card.getByRole('button', { name: '絞り込み条件でプレビューを作る' }).click();
  await expect(page).toHaveURL(/\/batches\/rb_[0-9a-f]+$/);
  const id = new URL(page.url()).pathname.split('/').pop()!;
  await hydrated(page);

  // The look-ups run in the background; the page follows them to the dry run's totals.
  const status = page.getByTestId('batch-status');
  await expect(status).toContainText('プレビュー', { timeout: 30_000 });
  const totals = page.getByTestId('batch-totals');
  await expect(totals.getByTestId('total-operations')).toHaveText('6 件');
  await expect(totals.getByTestId('total-blocked')).toHaveText('1 件');
  await expect(totals.getByTestId('total-calls')).toContainText('order-api: 6 回');
  await expect(totals.getByTestId('total-calls')).toContainText('ai-summary: 6 回');
  await expect(page.getByTestId('batch-planned')).toContainText('ORD-1101-register_order');
  await expect(page.getByTestId('batch-planned')).toContainText('ORD-1106-ai_summary');
  const blocked = page.getByTestId('batch-blocked');
  await expect(blocked.locator('tr[data-member="ORD-1107"]')).toContainText('内容が一致しません');
  // The stages are part of the plan: a canary of three, then the rest.
  const stages = page.getByTestId('batch-stages');
  await expect(stages.getByTestId('stages-plan')).toContainText('まず 3 件');
  await expect(stages.locator('tr[data-stage="1"] [data-count="operations"]')).toHaveText('3');
  await expect(stages.locator('tr[data-stage="2"] [data-count="operations"]')).toHaveText('3');
  await expectAccessible(page, 'a bulk rerun preview');

  // Requested at the configured rate; the five checks are confirmed once for all six.
  await page.getByLabel('毎分の送信数').fill('60');
  await page.getByRole('button', { name: '申請する', exact: true }).click();
  await expect(status).toContainText('チェックリスト確認中');
  for (const n of [1, 2, 3, 4]) {
    const item = page.getByTestId(`check-${n}`);
    await expect(item.getByTestId('passing')).toHaveText('6 / 6 件の事前チェックが通過');
    await item.getByLabel('確認のコメント').fill('受注システムの記録と照合した');
    await item.getByRole('button', { name: '確認した' }).click();
    await expect(item.getByTestId('confirmed')).toBeVisible();
  }
  const cause = page.getByTestId('check-5');
  // The class the six operations have is offered first.
  await expect(cause.getByLabel('原因の分類')).toHaveValue('outside_service_outage');
  await cause.getByLabel('原因の分類').selectOption('outside_service_outage');
  await cause.getByLabel('原因の内容').fill('受注システムが 10 時から 20 分間 503 を返していた（復旧済み）');
  await cause.getByLabel('確認のコメント').fill('障害報告と照合した');
  await cause.getByRole('button', { name: '確認した' }).click();
  await expect(cause.getByTestId('confirmed')).toContainText('外部サービス障害');
  await expectAccessible(page, 'a bulk rerun checklist');
  await page.getByRole('button', { name: '承認を依頼する' }).click();
  await expect(status).toContainText('承認待ち');

  // The department's owner, in a browser of their own, finds it in the list and approves it once.
  const owner = await browser.newContext();
  const manager = await owner.newPage();
  await signIn(manager, 'suzuki');
  await manager.getByRole('link', { name: '一括再実行' }).click();
  await expect(manager).toHaveURL(/\/batches$/);
  const row = manager.getByTestId('batches').locator(`tr[data-batch="${id}"]`);
  await expect(row.getByTestId('awaits-me')).toBeVisible();
  await expect(row).toContainText('営業部');
  // The inbox lists it beside the single requests, and leads to its decision page.
  await manager.getByRole('link', { name: '依頼・承認' }).click();
  const item = manager.getByTestId('inbox').locator(`li[data-request="${id}"]`);
  await expect(item).toHaveAttribute('data-subject', 'batch');
  await expect(item).toContainText('一括再実行 6 件');
  await expect(item).toContainText('受注システムの障害');
  await item.getByTestId('open-decision').click();
  await expect(manager).toHaveURL(new RegExp(`/batches/${id}$`));
  await hydrated(manager);
  await expect(manager.getByTestId('batch-totals').getByTestId('total-operations')).toHaveText('6 件');
  await manager.getByLabel('承認のコメント（任意）').fill('障害の復旧を確認した');
  // The approval waits until the approver ticks what will be sent.
  await expect(manager.getByTestId('batch-decide')).toContainText('6 件のオペレーション');
  await manager.getByTestId('confirm-sent').check();
  await manager.getByRole('button', { name: '承認する' }).click();
  await expect(manager.getByTestId('batch-status')).toContainText(/送信中|完了/);
  await expect(manager.getByTestId('decided')).toContainText('判断を記録しました');
  await owner.close();

  // The staff page follows the canary: three sent, reported, then proven at the outside systems once the AI's
  // summaries are done and the settle time passed; only then does the rest go out.
  const canary = stages.locator('tr[data-stage="1"]');
  await expect(canary.getByTestId('stage-outcome')).toHaveText('✓ 合格', { timeout: 90_000 });
  await expect(canary.locator('[data-count="verified"]')).toHaveText('3');
  await expect(canary.locator('[data-count="failed"]')).toHaveText('0');
  await stages.screenshot({ path: '../docs/screenshots/batch-stages-ja.png' });
  await page.context().addCookies([{ name: 'lang', value: 'en', url: new URL(page.url()).origin }]);
  await page.reload();
  await expect(stages.getByTestId('stages-plan')).toContainText('First 3');
  await stages.screenshot({ path: '../docs/screenshots/batch-stages-en.png' });
  await page.context().addCookies([{ name: 'lang', value: 'ja', url: new URL(page.url()).origin }]);
  await page.reload();
  await hydrated(page);

  // The page follows the dispatch at its rate until every rerun has succeeded.
  await expect(status).toContainText('完了', { timeout: 90_000 });
  const progress = page.getByTestId('batch-progress');
  await expect(progress.locator('[data-progress="succeeded"] strong')).toHaveText('6', { timeout: 30_000 });
  await expect(progress.locator('[data-progress="waiting"] strong')).toHaveText('0');
  await expect(progress.locator('[data-progress="sent"] strong')).toHaveText('0');
  await expect(progress.getByTestId('progress-finished')).toHaveText('6 / 6 件が終わりました');
  await expect(page.getByTestId('batch-decisions')).toContainText('鈴木 一郎');
  // The history tells each stage's start and verdict.
  await page.getByTestId('batch-history-part').locator('summary').click();
  await expect(page.getByTestId('batch-history')).toContainText('一括再実行の段階が合格（外部システムで確認）');
  await expect(page.getByTestId('batch-history')).toContainText('段階の確認（自動）');
  await page.screenshot({ path: '../docs/screenshots/batch.png', fullPage: true });
  await expectAccessible(page, 'a completed bulk rerun');

  await page.goto('/operations/ORD-1103');
  await hydrated(page);
  await expect(page.getByTestId('operation-status')).toContainText('完了');
  await page.goto('/operations/ORD-1107');
  await hydrated(page);
  await expect(page.getByTestId('operation-status')).toContainText('停止');
});

// Ticked rows instead of filters: the one ticked cannot be rerun (the order system has another amount), so
// there is nothing to request, and the preview is cancelled with a reason.
test('a ticked operation that cannot be rerun shows its reason; nothing can be requested and the preview is cancelled', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await hydrated(page);
  const card = page.getByTestId('bulk-rerun');
  await page.getByRole('checkbox', { name: 'ORD-1107 を一括再実行に選ぶ' }).check();
  await card.getByLabel('一括再実行の理由').fill('金額が食い違う注文を確かめる');
  await card.getByRole('button', { name: '選んだ 1 件でプレビューを作る' }).click();
  await expect(page).toHaveURL(/\/batches\/rb_[0-9a-f]+$/);
  await hydrated(page);
  const status = page.getByTestId('batch-status');
  await expect(status).toContainText('プレビュー', { timeout: 30_000 });
  await expect(page.getByTestId('batch-totals').getByTestId('total-operations')).toHaveText('0 件');
  await expect(page.getByTestId('batch-blocked').locator('tr[data-member="ORD-1107"]')).toContainText('内容が一致しません');

  await page.getByRole('button', { name: '申請する', exact: true }).click();
  await expect(page.getByRole('alert')).toBeVisible();
  await expect(status).toContainText('プレビュー');
  await page.getByLabel('理由', { exact: true }).fill('再実行できるものがないため取り消す');
  await page.getByRole('button', { name: '取り消す' }).click();
  await expect(status).toContainText('取り消し');
  await expect(page.getByTestId('batch-controls')).toHaveCount(0);
});

// A box ticked while the page's code is still on its way: the form waits for it, and the tick counts once the
// page is interactive (before, the preview took every stalled operation of the filters).
test('rows ticked before the page is interactive are the ones a bulk rerun takes', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await hydrated(page);
  // The board loaded again, its code held back until a row is ticked (routing also turns the cache off).
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  await page.route(/\.wasm$/, async (route) => {
    await held;
    await route.continue();
  });
  try {
    await page.reload({ waitUntil: 'domcontentloaded' });
    const card = page.getByTestId('bulk-rerun');
    await page.getByRole('checkbox', { name: 'ORD-1107 を一括再実行に選ぶ' }).check();
    await expect(card.locator('button[type="submit"]')).toBeDisabled();
    release();
    await hydrated(page);
    await expect(card.getByRole('button', { name: '選んだ 1 件でプレビューを作る' })).toBeEnabled();
    await expect(card.locator('input[name="process_ids"]')).toHaveValue('ORD-1107');
  } finally {
    release(); // a failure above must not leave the page waiting for its code
  }
  await page.unroute(/\.wasm$/);
});
