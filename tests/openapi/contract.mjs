// The API's answers against docs/openapi.json: each line of the capture files (tests/lib/api.sh's
// `call`, TEST.tsv: METHOD, PATH, STATUS, CONTENT_TYPE, BODY separated by tabs) is matched to its operation (the
// path's template, a literal segment before {id}) and its status's answer, and the body is
// validated against that answer's schema (Ajv, JSON Schema 2020-12, formats checked). An answer
// of a route or status the document does not name is a mismatch too, except errors of paths the
// API does not serve (404, 405, strict HTTP's 400, ...), which must still be the Error object.
// node contract.mjs DOC CAPTURE...; prints each mismatch (at most 5 per operation and status)
// and a summary, and exits 1 on any.
import fs from 'node:fs';
import { openapiAjv } from './schemas.mjs';

const [docPath, ...files] = process.argv.slice(2);
const doc = JSON.parse(fs.readFileSync(docPath, 'utf8'));
const ajv = openapiAjv(doc);
const METHODS = ['get', 'post', 'patch', 'put', 'delete'];

const templates = Object.keys(doc.paths).map((t) => ({ t, segs: t.split('/') }));
function route(path) {
    const segs = path.split('?')[0].split('/');
    let best = null, bestScore = -1;
    for (const { t, segs: ts } of templates) {
        if (ts.length !== segs.length) continue;
        let score = 0, ok = true;
        for (let i = 0; i < ts.length && ok; i++) {
            if (ts[i] === segs[i]) score++;
            else if (!/^\{[^}]+\}$/.test(ts[i])) ok = false;
        }
        if (ok && score > bestScore) { best = t; bestScore = score; }
    }
    return best;
}

const compiled = new Map();
function validator(key, schema) {
    if (!compiled.has(key)) compiled.set(key, ajv.compileFor(schema));
    return compiled.get(key);
}
const errorSchema = { $ref: '#/components/schemas/Error' };

// Ajv's errors with the member they are about: "data/items/0 must NOT have unevaluated
// properties ('shiny')".
const explain = (errors) => errors.map((e) => {
    const p = e.params ?? {};
    const name = p.unevaluatedProperty ?? p.additionalProperty;
    return `data${e.instancePath} ${e.message}${name ? ` ('${name}')` : ''}`;
}).join('; ');

const mismatches = new Map(); // "METHOD template status" -> [messages]
const seen = new Map(); // "METHOD template" -> Set of statuses
let n = 0;
const miss = (key, msg) => {
    if (!mismatches.has(key)) mismatches.set(key, []);
    mismatches.get(key).push(msg);
};
for (const file of files) {
    const test = file.split('/').pop().replace(/\.tsv$/, '');
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim());
    for (const line of lines) {
        const [method, path, status, contentType, ...rest] = line.split('\t');
        const a = { test, method, path, status: Number(status), content_type: contentType, body: rest.join('\t') };
        n++;
        const where = `${a.test}: ${a.method} ${a.path} -> ${a.status}`;
        const t = route(a.path);
        const m = a.method.toLowerCase();
        const op = t && doc.paths[t][m];
        const key = `${a.method} ${t ?? a.path.split('?')[0]} ${a.status}`;
        let schema, skey;
        if (!op) {
            if (a.status < 400 || !a.path.startsWith('/api/')) {
                if (a.path.startsWith('/api/')) miss(key, `${where}: no such operation in the document`);
                continue; // /livez, /readyz, /metrics: not in the document
            }
            schema = errorSchema; skey = 'Error';
        } else {
            if (!seen.has(`${a.method} ${t}`)) seen.set(`${a.method} ${t}`, new Set());
            seen.get(`${a.method} ${t}`).add(a.status);
            let r = op.responses[String(a.status)];
            if (!r) {
                // Errors of the request head can answer any route (info.description).
                if (![400, 413, 417, 431, 501, 505].includes(a.status)) {
                    miss(key, `${where}: status ${a.status} is not an answer of ${a.method} ${t} in the document`);
                    continue;
                }
                schema = errorSchema; skey = 'Error';
            } else {
                if (r.$ref) r = doc.components.responses[r.$ref.split('/').pop()];
                schema = r.content['application/json'].schema;
                skey = `${a.method} ${t} ${a.status}`;
            }
        }
        if (!/^application\/json/.test(a.content_type)) {
            miss(key, `${where}: Content-Type ${a.content_type || '(none)'}, not application/json`);
            continue;
        }
        let body;
        try { body = JSON.parse(a.body); } catch (e) {
            miss(key, `${where}: the body is not JSON: ${a.body.slice(0, 120)}`);
            continue;
        }
        const validate = validator(skey, schema);
        if (!validate(body))
            miss(key, `${where}: ${explain(validate.errors)}\n    body: ${a.body.slice(0, 300)}`);
    }
}

let bad = 0;
for (const [key, msgs] of mismatches) {
    bad += msgs.length;
    console.log(`MISMATCH ${key} (${msgs.length} answers):`);
    for (const msg of msgs.slice(0, 5)) console.log(`  ${msg}`);
}
const ops = [];
for (const [t, item] of Object.entries(doc.paths))
    for (const m of METHODS.filter((k) => item[k])) ops.push(`${m.toUpperCase()} ${t}`);
const unseen = ops.filter((o) => ![...(seen.get(o) ?? [])].some((s) => s < 300));
console.log(`contract: ${n} answers from ${files.length} files, ${bad} mismatches; ` +
    `${ops.length - unseen.length} of ${ops.length} operations answered 2xx` +
    (unseen.length ? ` (not: ${unseen.join(', ')})` : ''));
process.exit(bad || n === 0 ? 1 : 0);
