// Reads {"schema": DbSchema, "queries": [{"name", "text"}]} on stdin and prints,
// as JSON, the diagnostics of Neo4j's linter (lintCypherQuery) for each query.
// Parameters are declared from the query's own $names so that only real
// problems remain: syntax and semantic errors, deprecations, unknown schema names.
import { lintCypherQuery } from '@neo4j-cypher/language-support';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const out = [];
for (const q of input.queries) {
  const params = {};
  const code = q.text.replace(/\/\/[^\n]*/g, '');
  for (const m of code.matchAll(/\$([A-Za-z_][A-Za-z0-9_]*)/g)) params[m[1]] = null;
  const schema = { ...input.schema, parameters: params };
  const { diagnostics } = lintCypherQuery(q.text, schema);
  out.push({
    name: q.name,
    diagnostics: diagnostics.map((d) => ({
      severity: d.severity === 1 ? 'error' : d.severity === 2 ? 'warning' : String(d.severity),
      message: d.message,
      line: d.range.start.line + 1,
      column: d.range.start.character + 1,
    })),
  });
}
process.stdout.write(JSON.stringify(out));
