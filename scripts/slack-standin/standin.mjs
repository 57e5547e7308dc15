// The browser tests' stand-in for Slack's Web API: answers chat.postMessage, chat.update, chat.postEphemeral and
// views.open as Slack does (ok, with a channel and a ts for a new message) when the bot token is right, and appends
// every call to a file as a JSON line. Prints `listening on <URL>` once ready.
//
//   node scripts/slack-standin/standin.mjs BOT_TOKEN CALLS.jsonl
import { createServer } from 'node:http';
import { appendFileSync } from 'node:fs';

const [token, callsFile] = process.argv.slice(2);
let ts = 1_700_000_000;
const server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk) => { body += chunk; });
  request.on('end', () => {
    const method = request.url.replace(/^\/api\//, '');
    const authorised = request.headers.authorization === `Bearer ${token}`;
    let parsed = {};
    try { parsed = JSON.parse(body || '{}'); } catch { parsed = { unreadable: body }; }
    if (authorised) appendFileSync(callsFile, JSON.stringify({ method, body: parsed }) + '\n');
    let answer = authorised ? { ok: true } : { ok: false, error: 'invalid_auth' };
    if (authorised && method === 'chat.postMessage') {
      const to = String(parsed.channel ?? '');
      answer = { ok: true, channel: to.startsWith('U') ? `D${to.slice(1)}` : to, ts: `${ts++}.000100` };
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(answer));
  });
});
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
