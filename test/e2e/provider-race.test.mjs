// "Connect a provider" while GET /provider is still on its way (issue 30): the provider the person
// chose (Custom) and what they typed stay when the list of built-in providers arrives; the list only
// fills in a default for someone who has not chosen yet.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { missing, browserAndServer, loggedInPage, rest, until } from './harness.mjs';

const why = missing();

describe('the provider dialog before its list has loaded', { skip: why || false }, () => {
  let browser, server;
  browserAndServer((started) => ({ browser, server } = started));

  /**
   * Opens the dialog with GET /provider held back; returns the dialog and the function that lets the
   * answer through. reshape, when given, rewrites the answer, so a test can see in the page that it
   * arrived. The route replaces any earlier one and serves every GET /provider until the next open
   * (the dialog asks again if it is drawn anew), each held until release and reshaped alike.
   */
  async function openHeld(page, reshape = null) {
    let release;
    const gate = new Promise((r) => (release = r));
    await page.unrouteAll({ behavior: 'wait' });
    await page.route(/\/provider$/, async (route) => {
      await gate;
      if (!reshape) return route.continue();
      const answer = await route.fetch();
      await route.fulfill({ response: answer, json: reshape(await answer.json()) });
    });
    await page.locator('select[aria-label="Model"]').selectOption('__connect');
    const dialog = page.getByTestId('connect-provider');
    await dialog.waitFor();
    return { dialog, release };
  }

  const listed = (dialog) => until(async () => (await dialog.getByTestId('provider-id').locator('option').count()) > 1, 'the built-in providers listed');

  for (const [what, fill] of [
    ['choosing Custom', async () => {}],
    ['choosing Custom and typing an API key', async (dialog) => dialog.getByTestId('provider-key').fill('sk-typed-first')],
  ]) {
    test(`${what} before the list arrives is kept when it arrives`, async () => {
      const { data: s } = await rest(server, 'POST', '/session', {});
      const page = await loggedInPage(browser, server);
      await page.goto(`${server.base}/#/session/${s.id}`);
      const { dialog, release } = await openHeld(page);
      await dialog.getByTestId('provider-id').selectOption('__custom');
      await fill(dialog);
      release();
      await listed(dialog);
      // The list has been applied (a render after it): the choice is still Custom.
      assert.equal(await dialog.getByTestId('provider-id').inputValue(), '__custom');
      assert.ok(await dialog.getByTestId('provider-custom-id').isVisible(), 'the custom fields went away');
      if (what.includes('key')) assert.equal(await dialog.getByTestId('provider-key').inputValue(), 'sk-typed-first');
      assert.deepEqual(page.errors, []);
      await page.context().close();
    });
  }

  test('untouched, the dialog settles on the first built-in provider, and opened again starts there', async () => {
    const { data: s } = await rest(server, 'POST', '/session', {});
    const page = await loggedInPage(browser, server);
    await page.goto(`${server.base}/#/session/${s.id}`);
    const { dialog, release } = await openHeld(page);
    release();
    await listed(dialog);
    const first = await dialog.getByTestId('provider-id').locator('option').first().getAttribute('value');
    await until(async () => (await dialog.getByTestId('provider-id').inputValue()) === first, `the first provider (${first}) chosen`);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // Opened again with the list known: Custom chosen at once stays, whatever the new answer says.
    // The new answer lists the providers in reverse, so the page shows when it has been applied.
    const again = await openHeld(page, (list) => ({ ...list, all: [...list.all].reverse() }));
    const options = again.dialog.getByTestId('provider-id').locator('option');
    assert.equal(await again.dialog.getByTestId('provider-id').inputValue(), first);
    await again.dialog.getByTestId('provider-id').selectOption('__custom');
    again.release();
    await until(async () => (await options.first().getAttribute('value')) !== first, 'the second answer (reversed) applied');
    assert.equal(await again.dialog.getByTestId('provider-id').inputValue(), '__custom');
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});

if (why) test(`browser e2e skipped: ${why}`, { skip: why }, () => {});
