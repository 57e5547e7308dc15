-- People who sign in through the company's identity provider (OpenID Connect): the provider (issuer) and the
-- subject it names them by. A local account has neither.
ALTER TABLE users ADD COLUMN identity_issuer TEXT;
ALTER TABLE users ADD COLUMN identity_subject TEXT;
CREATE UNIQUE INDEX users_by_identity ON users (identity_issuer, identity_subject);
