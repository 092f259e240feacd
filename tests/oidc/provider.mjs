// A real OpenID Connect provider on loopback for the portal's sign-in tests: panva's
// oidc-provider with its development login screen (any login, any password), one
// confidential client, and the email claim. Env: PORT, REDIRECT_URI, CLIENT_SECRET.
import Provider from 'oidc-provider';

const port = Number(process.env.PORT || 0);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'statuspage-portal',
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  // The login typed on the development screen is the account's email address.
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: id, email_verified: true };
      },
    };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  features: { devInteractions: { enabled: true } },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
