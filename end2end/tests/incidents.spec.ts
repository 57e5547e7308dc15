import { test, expect, signIn, hydrated, token, expectAccessible } from './support';

/** A moment in Tokyo as a date-time field takes it (`YYYY-MM-DDTHH:MM`), `minutes` from now. */
function tokyo(minutes: number): string {
  const at = new Date(Date.now() + minutes * 60_000);
  return at.toLocaleString('sv-SE', { timeZone: 'Asia/Tokyo' }).replace(' ', 'T').slice(0, 16);
}

// The seed's lost-answer case (ORD-1001, stalled in sales): staff report it and plan a prevention action.
test('staff file an incident from a stalled operation and add a prevention action', async ({ page, violations }) => {
  await signIn(page, 'sato');
  await page.goto('/operations/ORD-1001');
  await hydrated(page);
  await page.getByTestId('start-incident').getByRole('link').click();
  await expect(page).toHaveURL(/\/incidents\?from=ORD-1001$/);
  await hydrated(page);

  const form = page.getByTestId('file-incident');
  await expect(form.getByLabel('プロセス ID', { exact: true })).toHaveValue('ORD-1001');
  await form.getByLabel('件名', { exact: true }).fill('応答喪失後の注文の再送');
  await form.getByLabel('発生日時', { exact: true }).fill(tokyo(-60));
  await form.getByLabel('影響', { exact: true }).fill('4,000 円の注文の結果が画面に出ず、再送されかけた');
  await form.getByLabel('原因', { exact: true }).fill('注文 API の応答が途中で切れた');
  await form.getByLabel('対応', { exact: true }).fill('注文 API の記録で登録済みを確認し、再送を止めた');
  await form.getByRole('button', { name: '報告する' }).click();
  await expect(page).toHaveURL(/\/incidents\/\d+$/);
  await hydrated(page);
  await expect(page.getByTestId('incident-title')).toHaveText('応答喪失後の注文の再送');
  await expect(page.getByTestId('incident-operations')).toContainText('ORD-1001');
  await expect(page.getByTestId('response')).toContainText('登録済みを確認し');

  const add = page.getByTestId('add-action');
  await add.getByLabel('対策の内容', { exact: true }).fill('再送の前に注文 API を照会する手順を追加する');
  await add.getByLabel('担当者', { exact: true }).selectOption({ label: '佐藤 花子' });
  await add.getByLabel('期限', { exact: true }).fill(tokyo(7 * 24 * 60).slice(0, 10));
  await add.getByRole('button', { name: '追加する' }).click();
  const action = page.getByTestId('prevention-actions').locator('tbody tr');
  await expect(action).toHaveCount(1);
  await expect(action).toContainText('再送の前に注文 API を照会する手順を追加する');
  await expect(action).toContainText('佐藤 花子');
  await expect(action.getByTestId('action-status')).toContainText('対応中');
  await expect(action.getByTestId('overdue')).toHaveCount(0);
  await expect(page.getByTestId('incident-history').locator('[title="incident.action_added"]').first()).toContainText('対策を追加');
  await expectAccessible(page, 'an incident report');
  await page.screenshot({ path: '../docs/screenshots/incident.png', fullPage: true });

  await page.goto('/incidents');
  await expect(page.getByTestId('incidents')).toContainText('応答喪失後の注文の再送');
});

// The seed's unknown mail (INV-2001, on hold in billing) was reported; a new invoice stalls the same way.
test('a stalled operation like a past incident shows it, and staff record that the pattern is understood', async ({ page, request, violations }) => {
  await signIn(page, 'ito');
  await page.goto('/incidents?from=INV-2001');
  await hydrated(page);
  const form = page.getByTestId('file-incident');
  await form.getByLabel('件名', { exact: true }).fill('請求書メールの送信結果が不明');
  await form.getByLabel('発生日時', { exact: true }).fill(tokyo(-120));
  await form.getByLabel('影響', { exact: true }).fill('請求書メールが届いたか分からない');
  await form.getByLabel('原因', { exact: true }).fill('メール送信の応答に ID がなかった');
  await form.getByLabel('対応', { exact: true }).fill('配信事業者に問い合わせ、未送信の回答を得てから再送した');
  await form.getByRole('button', { name: '報告する' }).click();
  await expect(page).toHaveURL(/\/incidents\/\d+$/);

  const headers = { authorization: `Bearer ${token('billing')}` };
  const steps = ['draft_invoice', 'send_mail', 'issue_invoice'].map((name) => ({ name, idempotency_key: `INV-E2E-P:${name}` }));
  const registered = await request.post('/api/v1/operations', {
    headers: { ...headers, 'idempotency-key': 'INV-E2E-P' },
    data: { process_id: 'INV-E2E-P', workflow: 'monthly-billing', department: 'billing', steps },
  });
  expect(registered.status()).toBe(201);
  await request.post('/api/v1/operations/INV-E2E-P/steps/draft_invoice/events', {
    headers, data: { seq: 1, type: 'unknown', error: { class: 'result_unknown', message: 'no ID came back' } },
  });

  // The sweeper runs every second in this suite; the box appears once the page has hydrated.
  const pattern = page.getByTestId('known-pattern');
  await expect(async () => {
    await page.goto('/operations/INV-E2E-P');
    await expect(pattern).toContainText('請求書メールの送信結果が不明', { timeout: 2000 });
  }).toPass({ timeout: 20_000 });
  await expect(pattern).toContainText('配信事業者に問い合わせ、未送信の回答を得てから再送した');
  await pattern.getByText('このパターンは把握済み').click();
  await pattern.getByLabel('把握済みとする根拠').fill('前回と同じく配信事業者に確認中');
  await pattern.getByRole('button', { name: '把握済みとして記録する' }).click();
  await expect(pattern.getByTestId('pattern-understood')).toContainText('伊藤 翔');
  await page.reload();
  await expect(page.getByTestId('timeline').locator('[title="operation.pattern_acknowledged"]').first()).toContainText('既知のパターンとして確認');
  await expect(pattern.getByTestId('pattern-understood')).toContainText('前回と同じく配信事業者に確認中');
  await expectAccessible(page, 'an operation page with a known pattern');
});
