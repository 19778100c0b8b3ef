// Compare two rendered YAML streams as sets of objects (kind, namespace, name), order ignored.
//   node compare.mjs A.yaml B.yaml   -> exit 1 and the differences when they differ
import { readFileSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";
import YAML from "yaml";

const load = (file) => new Map(YAML.parseAllDocuments(readFileSync(file, "utf8")).map((d) => d.toJS())
    .filter(Boolean).map((o) => [`${o.kind}/${o.metadata.namespace || ""}/${o.metadata.name}`, o]));
const [a, b] = process.argv.slice(2, 4).map(load);
const diffs = [];
for (const key of new Set([...a.keys(), ...b.keys()])) {
    if (!a.has(key)) diffs.push(`${key} only in the second`);
    else if (!b.has(key)) diffs.push(`${key} only in the first`);
    else if (!isDeepStrictEqual(a.get(key), b.get(key))) diffs.push(`${key} differs:\n${YAML.stringify(a.get(key))}---\n${YAML.stringify(b.get(key))}`);
}
if (diffs.length) {
    console.log(diffs.join("\n"));
    process.exit(1);
}
