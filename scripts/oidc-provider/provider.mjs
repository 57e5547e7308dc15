// The tests' identity provider: oidc-provider (an OpenID Certified implementation, npm) on a free loopback port,
// with its own login page (devInteractions: any password), test users and their groups.
//
//   node scripts/oidc-provider/provider.mjs ACCOUNTS.json CLIENT_ID CLIENT_SECRET REDIRECT_URI [POST_LOGOUT_URI]
//
// ACCOUNTS.json: {"<login>": {"name": "…", "email": "…", "groups": ["…"]}}, read again at every sign-in (a test
// changes someone's groups by rewriting it); a login not in it signs in with no groups. Prints
// `listening on <issuer URL>` once ready. Its signing key (RS256, kid "test-key") is made at start and written
// to ACCOUNTS.json.key.pem, so that a test can sign tokens as the provider would (an expired one, say).
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const [accountsFile, clientId, clientSecret, redirectUri, postLogoutUri] = process.argv.slice(2);
const accounts = () => JSON.parse(readFileSync(accountsFile, 'utf8'));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
writeFileSync(`${accountsFile}.key.pem`, privateKey.export({ type: 'pkcs1', format: 'pem' }));
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig', alg: 'RS256' };

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      post_logout_redirect_uris: postLogoutUri ? [postLogoutUri] : [],
      require_auth_time: true,
    }],
    // Slack's sign-in names the workspace and the person in claims of its own (the tests play Slack too).
    claims: {
      openid: ['sub', 'https://slack.com/team_id', 'https://slack.com/user_id'],
      profile: ['name'], email: ['email'], groups: ['groups'],
    },
    scopes: ['openid', 'profile', 'email', 'groups'],
    // The ID token carries the claims of the granted scopes (as Entra ID and Google put them there).
    conformIdTokenClaims: false,
    async findAccount(ctx, id) {
      const account = accounts()[id] ?? { name: id, email: `${id}@example.jp`, groups: [] };
      const slack = { 'https://slack.com/team_id': 'T0RERUNGATE', 'https://slack.com/user_id': id };
      return { accountId: id, claims: async () => ({ sub: id, ...slack, ...account }) };
    },
    // A first-party client: no consent page, every requested scope is granted.
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid profile email groups');
      await grant.save();
      return grant;
    },
    cookies: { keys: ['rerun-gate-test-provider-only'] },
    jwks: { keys: [signingKey] },
  });
  server.on('request', provider.callback());
  console.log(`listening on ${issuer}`);
  // The one line on standard output is read; whoever started this may close it afterwards.
  console.log = console.info = console.warn = console.error;
});
