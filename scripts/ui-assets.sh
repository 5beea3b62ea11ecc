#!/usr/bin/env bash
# Installs the pinned browser assets (GraphiQL, React, Swagger UI, ReDoc) from npm into
# graphsvc/ui/static/vendor, so the service serves them itself: no CDN at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd tools/ui-assets && npm ci --no-audit --no-fund --loglevel=error && node vendor.mjs)
