#!/usr/bin/env bash
# Installs the pinned browser assets (GraphiQL, React, Swagger UI, ReDoc) from npm into
# graphsvc/ui/static/vendor, so the service serves them itself: no CDN at run time.
# Skipped when the files are there from the same lock file and copy script (a stamp in
# node_modules): `npm ci` took ~13 s of every demo start.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=tools/ui-assets/node_modules/.vendored
want="$(cat tools/ui-assets/package-lock.json tools/ui-assets/vendor.mjs | sha256sum | cut -d' ' -f1)"
if [ -f graphsvc/ui/static/vendor/graphiql.min.js ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi
(cd tools/ui-assets && npm ci --no-audit --no-fund --loglevel=error && node vendor.mjs)
echo "$want" > "$stamp"
