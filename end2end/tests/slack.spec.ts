import { test, expect, signIn, hydrated, expectAccessible } from './support';

// run.sh configures a Slack app ([chat.slack]) with a stand-in for Slack's Web API and a second local provider
// playing Sign in with Slack, whose ID tokens name the workspace T0RERUNGATE and the person by their login.

test('a manager links their Slack account on the account page, the admins see the link, and the manager ends it', async ({ page, violations }) => {
  test.setTimeout(120_000);
  await signIn(page, 'suzuki');
  await page.goto('/account');
  await hydrated(page);
  const chat = page.getByTestId('chat-link');
  await expect(chat.getByRole('heading', { name: 'チャットで決定する' })).toBeVisible();
  await expect(chat).toContainText('Slack とは連携していません。');

  // Off to Slack's sign-in (here the provider's own login page) and back.
  await chat.getByRole('link', { name: 'Slack と連携する' }).click();
  await expect(page.locator('input[name=login]')).toBeVisible();
  await page.locator('input[name=login]').fill('U0E2ESUZUKI');
  await page.locator('input[name=password]').fill('any password');
  await page.locator('button[type=submit]').click();
  await expect(page).toHaveURL(/\/account\?chat=linked$/);
  await hydrated(page);
  await expect(chat).toContainText('Slack と連携しました。');
  await expect(chat).toContainText('ワークスペース T0RERUNGATE、ユーザー U0E2ESUZUKI');
  await chat.screenshot({ path: '../docs/screenshots/account-slack.png' });
  await expectAccessible(page, 'the account page with a linked Slack account');

  // The admins see who linked which Slack account.
  await page.context().clearCookies();
  await signIn(page, 'admin');
  await page.goto('/admin/users');
  await hydrated(page);
  const links = page.getByTestId('chat-links');
  await expect(links.locator('tr', { hasText: '鈴木 一郎' })).toContainText('T0RERUNGATE / U0E2ESUZUKI');

  // The manager ends the link.
  await page.context().clearCookies();
  await signIn(page, 'suzuki');
  await page.goto('/account');
  await hydrated(page);
  await chat.getByRole('button', { name: '連携を解除する' }).click();
  await expect(chat).toContainText('Slack とは連携していません。');
  await expect(chat).toContainText('連携を解除しました。');
  expect(violations).toEqual([]);
});
