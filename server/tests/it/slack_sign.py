# Signs a request body as Slack does, with Slack's own SDK (slack_sdk, PyPI): the tests' interactions carry the
# signature Slack would send, not one computed by the code under test.
#   slack_sign.py SIGNING_SECRET TIMESTAMP < body
import sys

from slack_sdk.signature import SignatureVerifier

secret, timestamp = sys.argv[1], sys.argv[2]
print(SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=sys.stdin.buffer.read()))
