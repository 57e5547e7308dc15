"""scim2-tester (PyPI, python-scim) run against a SCIM server: one line per check, exit 1 when any check fails.

Usage: python scim_compliance.py BASE_URL TOKEN RESOURCE_TYPE...
Checks of other resource types are not run. Skipped checks are printed with their reason and do not fail.
"""

import sys

from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server


def main() -> int:
    base_url, token, *resource_types = sys.argv[1:]
    http = Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    try:
        # No exclude_tags: in scim2-tester 0.5.2 any value also skips discovery, and so every resource check.
        results = check_server(SyncSCIMClient(http), resource_types=resource_types or None)
    finally:
        http.close()
    failed = [r for r in results if r.status in (Status.ERROR, Status.CRITICAL)]
    for r in results:
        kind = f"[{r.resource_type}] " if r.resource_type else ""
        print(f"{r.status.name:<8} {kind}{r.title}: {' '.join(str(r.reason or '').split())}")
    print(f"scim2-tester: {len(results)} checks, {len(failed)} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
