// Copies the pinned browser assets from node_modules into graphsvc/ui/static/vendor (ignored by git),
// with each package's licence, so the service serves GraphiQL and its API docs itself.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "graphsvc", "ui", "static", "vendor");
const FILES = {
  graphiql: ["graphiql.min.js", "graphiql.min.css"],
  react: ["umd/react.production.min.js"],
  "react-dom": ["umd/react-dom.production.min.js"],
  "swagger-ui-dist": ["swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"],
  redoc: ["bundles/redoc.standalone.js"],
};
mkdirSync(join(out, "licenses"), { recursive: true });
const versions = {};
for (const [pkg, files] of Object.entries(FILES)) {
  const root = join(here, "node_modules", pkg);
  const meta = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  versions[pkg] = { version: meta.version, license: meta.license };
  for (const f of files) copyFileSync(join(root, f), join(out, f.split("/").pop()));
  copyFileSync(join(root, "LICENSE"), join(out, "licenses", `${pkg}.txt`));
}
// ReDoc's sidebar shows a logo fetched from cdn.redoc.ly; point it at an empty image (its
// onError hides it), so the page asks nothing of the internet.
const redoc = join(out, "redoc.standalone.js");
const LOGO = '"https://cdn.redoc.ly/redoc/logo-mini.svg"';
const source = readFileSync(redoc, "utf8");
if (!source.includes(LOGO)) throw new Error("redoc.standalone.js: the CDN logo URL moved; update vendor.mjs");
writeFileSync(redoc, source.replaceAll(LOGO, '"data:,"'));
writeFileSync(join(out, "versions.json"), JSON.stringify(versions, null, 1) + "\n");
console.log(`ui assets: ${Object.keys(FILES).length} packages copied to ${out}`);
